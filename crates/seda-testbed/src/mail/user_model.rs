//! The e-mail user: a transport-independent state machine (WC03 Section 4.1).
//!
//! Each emulated user logs in, then moves between request types by a Markov model, waits a
//! think time (20 ms by default, as in the paper) between requests, and after a rejection (or a
//! request that got no answer) waits 5 s and sends the same request again, in the session it
//! has. It reads the previous response (status, `Location`, `Set-Cookie`, and
//! the links in the HTML) to pick folder and message ids, and yields the next request: kind,
//! method, path, form body and cookie. Any transport can drive it; the load generator
//! does, through [`super::workload::MailWorkload`].
//!
//! # After a rejection
//!
//! WC03 Section 4.1's users log in again after the wait. A real user does not: the session is
//! the server's and still valid, so the browser retries the page it asked for. Logging in again
//! also costs the service a password check and a new session for every rejection, and under a
//! heavy overload those logins came to dominate: at 1024 users the login stage rejected most of
//! them and few sessions ever reached a page. Our users keep their session; a session the
//! server has ended answers `303 /login`, and only then does the user log in.
//!
//! # The Markov model
//!
//! Rows are the request just made, columns the next one (probabilities in percent):
//!
//! | from \ to      | login | folders | list | show | delete | refile | search |
//! |----------------|------:|--------:|-----:|-----:|-------:|-------:|-------:|
//! | login          |     0 |      30 |   70 |    0 |      0 |      0 |      0 |
//! | list folders   |     1 |       4 |   93 |    0 |      0 |      0 |      2 |
//! | list messages  |     1 |      10 |   17 |   70 |      0 |      0 |      2 |
//! | show message   |     1 |       4 |   30 |   40 |     15 |      9 |      1 |
//! | delete         |     0 |       5 |   55 |   40 |      0 |      0 |      0 |
//! | refile         |     0 |      10 |   50 |   40 |      0 |      0 |      0 |
//! | search         |     0 |      10 |   30 |   60 |      0 |      0 |      0 |
//!
//! Why: reading dominates, as in the IMAP traces the paper's model came from. A user mostly
//! opens a folder (usually the inbox, straight after login) and reads message after message
//! (show -> show 40%), going back to the list between them, paging or re-sorting now and then
//! (list -> list 17%). Acting on a message (delete 15%, refile 9%) happens only from the message
//! view and is followed by reading again. Search is rare: 1 to 2% of the exits of the browsing
//! states, so about 1.3% of all requests (the paper: "less than 1%"); a search usually leads to
//! opening a hit. Logging out and in again (a new session) is 1%. A delete chosen while the
//! user reads Trash restores the message to another folder instead (a refile), so the model
//! never purges and mailboxes keep their size over long runs. The stationary mix, computed
//! in the tests, is about 0.9% login, 6.6% folders, 32.9% list, 47.1% show, 7.1% delete, 4.2%
//! refile, 1.3% search.

use std::time::Duration;

use seda_mail::RequestKind;
use seda_mail::corpus::{Rng, password, user_name};
use seda_mail::percent_encode;
use seda_mail::store::TRASH;

/// Think time between requests (WC03 Section 4.1: "aggressively set to 20 ms").
pub const THINK_TIME: Duration = Duration::from_millis(20);
/// Wait after a rejection before trying again (WC03 Section 4.1).
pub const REJECT_BACKOFF: Duration = Duration::from_secs(5);

/// Transition probabilities in percent; rows and columns in [`RequestKind::ALL`] order.
pub const MATRIX: [[u32; 7]; 7] = [
    [0, 30, 70, 0, 0, 0, 0],
    [1, 4, 93, 0, 0, 0, 2],
    [1, 10, 17, 70, 0, 0, 2],
    [1, 4, 30, 40, 15, 9, 1],
    [0, 5, 55, 40, 0, 0, 0],
    [0, 10, 50, 40, 0, 0, 0],
    [0, 10, 30, 60, 0, 0, 0],
];

/// The share of each request type, in [`RequestKind::ALL`] order, in a long run of the
/// [`MATRIX`] (its stationary distribution, by power iteration): what a mix of many users
/// converges to, so the lab can size a load by it before the run.
pub fn stationary_mix() -> [f64; 7] {
    let mut pi = [1.0 / 7.0; 7];
    for _ in 0..2000 {
        let mut next = [0.0; 7];
        for (i, row) in MATRIX.iter().enumerate() {
            for (j, &p) in row.iter().enumerate() {
                next[j] += pi[i] * f64::from(p) / 100.0;
            }
        }
        pi = next;
    }
    pi
}

/// Which requests the user makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mix {
    /// The Markov model above.
    Markov,
    /// Only this type, after whatever requests it needs first (login, a folder list...):
    /// measures one stage's capacity.
    Only(RequestKind),
}

/// The next request of a user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// Its type.
    pub kind: RequestKind,
    /// `GET` or `POST`.
    pub method: &'static str,
    /// Path and query.
    pub path: String,
    /// URL-encoded form body for a POST.
    pub form: Option<String>,
    /// `Cookie` header value.
    pub cookie: Option<String>,
    /// How long to wait before sending it (think time or back-off).
    pub delay: Duration,
}

/// What happened to the previous request.
#[derive(Debug, Clone, Copy)]
pub enum Outcome<'a> {
    /// A response other than a rejection.
    Response {
        /// Status code.
        status: u16,
        /// `Location` header.
        location: Option<&'a str>,
        /// `Set-Cookie` header.
        set_cookie: Option<&'a str>,
        /// Body.
        body: &'a str,
    },
    /// The service turned it away (503).
    Rejected,
    /// The transport failed (connection refused or reset...).
    Failed,
}

/// One emulated user.
#[derive(Debug, Clone)]
pub struct UserModel {
    name: String,
    password: String,
    rng: Rng,
    think: Duration,
    mix: Mix,
    last: Option<RequestKind>,
    sid: Option<String>,
    folders: Vec<i64>,
    folder: Option<i64>,
    messages: Vec<i64>,
    message: Option<i64>,
    /// The last folder page listed no message: look elsewhere next time.
    empty_list: bool,
    /// The user's Trash folder, once seen in the folder list.
    trash: Option<i64>,
    /// The listed messages came from a folder page (not a search).
    listed_from_folder: bool,
    /// The last request made, sent again after a rejection.
    sent: Option<Step>,
}

/// Numbers that follow `prefix` in `body`, in order, without repeats.
fn ids_after(body: &str, prefix: &str) -> Vec<i64> {
    let mut out = Vec::new();
    let mut rest = body;
    while let Some(i) = rest.find(prefix) {
        rest = &rest[i + prefix.len()..];
        let digits: &str = &rest[..rest.bytes().take_while(u8::is_ascii_digit).count()];
        if let Ok(n) = digits.parse::<i64>()
            && !out.contains(&n)
        {
            out.push(n);
        }
    }
    out
}

impl UserModel {
    /// User `user` (1-based) of a generated corpus, with its own random stream.
    pub fn new(user: u64, seed: u64, think: Duration, mix: Mix) -> UserModel {
        UserModel::with_credentials(&user_name(user), &password(user), seed ^ user, think, mix)
    }

    /// A user with explicit credentials.
    pub fn with_credentials(
        name: &str,
        password: &str,
        seed: u64,
        think: Duration,
        mix: Mix,
    ) -> UserModel {
        UserModel {
            name: name.to_string(),
            password: password.to_string(),
            rng: Rng::new(seed),
            think,
            mix,
            last: None,
            sid: None,
            folders: Vec::new(),
            folder: None,
            messages: Vec::new(),
            message: None,
            empty_list: false,
            trash: None,
            listed_from_folder: false,
            sent: None,
        }
    }

    /// The next request, given what happened to the previous one: `None` at the start, and
    /// when the previous one got no answer the user could read (the transport gave up after
    /// the wait), which is retried like a rejected one.
    pub fn next(&mut self, outcome: Option<Outcome<'_>>) -> Step {
        let Some(outcome) = outcome else {
            if self.sent.is_some() {
                return self.retry(Duration::ZERO);
            }
            return self.step(RequestKind::Login, Duration::ZERO);
        };
        let (status, location, set_cookie, body) = match outcome {
            Outcome::Rejected | Outcome::Failed => return self.retry(REJECT_BACKOFF),
            Outcome::Response {
                status,
                location,
                set_cookie,
                body,
            } => (status, location, set_cookie, body),
        };
        if let Some(c) = set_cookie
            && let Some(v) = c.strip_prefix("sid=")
        {
            let v = v.split(';').next().unwrap_or("");
            self.sid = (!v.is_empty()).then(|| v.to_string());
        }
        let last = self.last.unwrap_or(RequestKind::Login);
        if status == 303 && location == Some("/login") || self.sid.is_none() {
            return self.step(RequestKind::Login, self.think);
        }
        if status < 400 {
            match last {
                RequestKind::ListFolders => {
                    self.folders = ids_after(body, "href=\"/folder?f=");
                    self.trash =
                        self.folders.iter().copied().find(|f| {
                            body.contains(&format!("href=\"/folder?f={f}\">{TRASH}</a>"))
                        });
                }
                RequestKind::ListMessages | RequestKind::Search => {
                    self.messages = ids_after(body, "href=\"/msg?id=");
                    self.empty_list = self.messages.is_empty();
                    self.listed_from_folder = last == RequestKind::ListMessages;
                }
                RequestKind::ShowMessage => {
                    let more = ids_after(body, "<option value=\"");
                    for f in more {
                        if !self.folders.contains(&f) {
                            self.folders.push(f);
                        }
                    }
                }
                // A refiled message stays this user's: measuring refiles alone, move it again.
                RequestKind::Refile if self.mix == Mix::Only(RequestKind::Refile) => {}
                RequestKind::Delete | RequestKind::Refile => {
                    if let Some(m) = self.message.take() {
                        self.messages.retain(|&x| x != m);
                    }
                }
                RequestKind::Login => {}
            }
        } else if matches!(
            last,
            RequestKind::ShowMessage | RequestKind::Delete | RequestKind::Refile
        ) {
            // The message is gone (another session moved it): forget it.
            if let Some(m) = self.message.take() {
                self.messages.retain(|&x| x != m);
            }
        }
        let next = match self.mix {
            Mix::Markov => self.markov(last),
            Mix::Only(k) => k,
        };
        self.step(next, self.think)
    }

    /// The last request again, in the same session, after `delay` (see "After a rejection").
    fn retry(&mut self, delay: Duration) -> Step {
        match self.sent.clone() {
            Some(step) => Step { delay, ..step },
            None => self.step(RequestKind::Login, delay),
        }
    }

    fn markov(&mut self, from: RequestKind) -> RequestKind {
        let row = &MATRIX[from.index()];
        let mut x = self.rng.below(100) as u32;
        for (i, &p) in row.iter().enumerate() {
            if x < p {
                return RequestKind::ALL[i];
            }
            x -= p;
        }
        RequestKind::ListMessages
    }

    /// Builds a request of `kind`, or of the request it needs first when ids are missing.
    fn step(&mut self, kind: RequestKind, delay: Duration) -> Step {
        let kind = self.feasible(kind);
        self.last = Some(kind);
        let cookie = self.sid.as_ref().map(|s| format!("sid={s}"));
        let (method, path, form) = match kind {
            RequestKind::Login => {
                self.folder = None;
                self.messages.clear();
                (
                    "POST",
                    "/login".to_string(),
                    Some(format!(
                        "user={}&password={}",
                        percent_encode(&self.name),
                        percent_encode(&self.password)
                    )),
                )
            }
            RequestKind::ListFolders => ("GET", "/folders".to_string(), None),
            RequestKind::ListMessages => ("GET", self.list_path(), None),
            RequestKind::ShowMessage => {
                let i = self.rng.below(self.messages.len() as u64) as usize;
                let m = self.messages[i];
                self.message = Some(m);
                ("GET", format!("/msg?id={m}"), None)
            }
            RequestKind::Delete => {
                let m = self.pick_message();
                // As the message page's form does: the folder it was listed in, so a retried
                // request cannot purge what the first one moved to Trash.
                let form = match self.folder.filter(|_| self.listed_from_folder) {
                    Some(f) => format!("id={m}&from={f}"),
                    None => format!("id={m}"),
                };
                ("POST", "/delete".to_string(), Some(form))
            }
            RequestKind::Refile => ("POST", "/refile".to_string(), Some(self.refile_form())),
            RequestKind::Search => {
                const TERMS: [&str; 8] = [
                    "meeting", "paper", "overload", "Alice", "deadline", "Re:", "queue", "lunch",
                ];
                let t = TERMS[self.rng.below(TERMS.len() as u64) as usize];
                let field = if self.rng.below(2) == 0 {
                    "headers"
                } else {
                    "body"
                };
                (
                    "GET",
                    format!("/search?q={}&in={field}", percent_encode(t)),
                    None,
                )
            }
        };
        let step = Step {
            kind,
            method,
            path,
            form,
            cookie,
            delay,
        };
        self.sent = Some(step.clone());
        step
    }

    /// `kind`, or the request it needs first: a login without a session, a list without
    /// listed messages, the folders without folders to list or refile to.
    fn feasible(&self, kind: RequestKind) -> RequestKind {
        let mut kind = kind;
        if self.sid.is_none() {
            kind = RequestKind::Login;
        }
        if matches!(
            kind,
            RequestKind::ShowMessage | RequestKind::Delete | RequestKind::Refile
        ) && self.messages.is_empty()
        {
            kind = RequestKind::ListMessages;
        }
        // In the Markov mix, "delete" in Trash restores the message (a refile) instead of
        // purging it: mailboxes keep their size, so long runs stay stationary. A search hit may
        // sit in Trash too, and the user does not know its folder: restore it the same way.
        if kind == RequestKind::Delete
            && self.mix == Mix::Markov
            && (!self.listed_from_folder || self.folder == self.trash)
        {
            kind = RequestKind::Refile;
        }
        if kind == RequestKind::Refile && self.folders.len() < 2 {
            kind = RequestKind::ListFolders;
        }
        if kind == RequestKind::ListMessages && self.folders.is_empty() {
            kind = RequestKind::ListFolders;
        }
        kind
    }

    /// A list's path: usually the current folder's first page, sorted by date; sometimes
    /// another folder, another sort or the next page.
    fn list_path(&mut self) -> String {
        let change = self.folder.is_none() || self.empty_list || self.rng.below(4) == 0;
        if change && !self.folders.is_empty() {
            let i = self.rng.below(self.folders.len() as u64) as usize;
            self.folder = Some(self.folders[i]);
        }
        let f = self.folder.unwrap_or(0);
        let sort = ["date", "date", "date", "sender", "subject"][self.rng.below(5) as usize];
        let page = if !self.empty_list && self.rng.below(5) == 0 {
            1
        } else {
            0
        };
        format!("/folder?f={f}&sort={sort}&page={page}")
    }

    /// A refile's form: the message just shown or a listed one, to another folder.
    fn refile_form(&mut self) -> String {
        let m = self.pick_message();
        // Any folder but Trash (moving there is what delete is for) and, if possible,
        // not the one it is in.
        let not_trash = |f: &i64| Some(*f) != self.trash;
        let mut targets: Vec<i64> = self
            .folders
            .iter()
            .copied()
            .filter(|f| not_trash(f) && Some(*f) != self.folder)
            .collect();
        if targets.is_empty() {
            targets = self.folders.iter().copied().filter(not_trash).collect();
        }
        if targets.is_empty() {
            targets = self.folders.clone();
        }
        let to = targets[self.rng.below(targets.len() as u64) as usize];
        format!("id={m}&to={to}")
    }

    /// The message just shown, or one of the listed ones.
    fn pick_message(&mut self) -> i64 {
        if let Some(m) = self.message
            && self.last_was_show()
        {
            return m;
        }
        let i = self.rng.below(self.messages.len() as u64) as usize;
        let m = self.messages[i];
        self.message = Some(m);
        m
    }

    fn last_was_show(&self) -> bool {
        self.message.is_some_and(|m| self.messages.contains(&m))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_sum_to_100() {
        for row in MATRIX {
            assert_eq!(row.iter().sum::<u32>(), 100);
        }
    }

    #[test]
    fn stationary_mix_reading_dominates_search_is_rare() {
        let pi = stationary_mix();
        assert!((pi.iter().sum::<f64>() - 1.0).abs() < 1e-9, "{pi:?}");
        let reading = pi[RequestKind::ListMessages.index()] + pi[RequestKind::ShowMessage.index()];
        assert!(reading > 0.7, "{pi:?}");
        let search = pi[RequestKind::Search.index()];
        assert!(search > 0.005 && search < 0.02, "{pi:?}");
    }

    #[test]
    fn logs_in_walks_and_backs_off_after_rejection() {
        let mut u = UserModel::new(3, 1, THINK_TIME, Mix::Markov);
        let s = u.next(None);
        assert_eq!((s.kind, s.method), (RequestKind::Login, "POST"));
        assert_eq!(s.form.as_deref(), Some("user=user3&password=pass3"));
        let s = u.next(Some(Outcome::Response {
            status: 303,
            location: Some("/folders"),
            set_cookie: Some("sid=abc; Path=/"),
            body: "",
        }));
        assert_eq!(s.cookie.as_deref(), Some("sid=abc"));
        // No folder known yet: whatever it wanted, it lists folders first.
        assert_eq!(s.kind, RequestKind::ListFolders);
        let s = u.next(Some(Outcome::Response {
            status: 200,
            location: None,
            set_cookie: None,
            body: "<a href=\"/folder?f=7\">Inbox</a><a href=\"/folder?f=9\">x</a>",
        }));
        assert!(matches!(
            s.kind,
            RequestKind::ListMessages
                | RequestKind::ListFolders
                | RequestKind::Search
                | RequestKind::Login
        ));
        let wanted = s.clone();
        let s = u.next(Some(Outcome::Rejected));
        // The same page again, in the same session, after the wait: not a new login.
        assert_eq!(
            s,
            Step {
                delay: REJECT_BACKOFF,
                ..wanted.clone()
            }
        );
        assert_eq!(s.cookie.as_deref(), Some("sid=abc"));
        // No answer at all (the transport gave up): the same again, at once.
        assert_eq!(
            u.next(None),
            Step {
                delay: Duration::ZERO,
                ..wanted
            }
        );
        // Only a server that ended the session sends the user back to the login.
        let s = u.next(Some(Outcome::Response {
            status: 303,
            location: Some("/login"),
            set_cookie: None,
            body: "",
        }));
        assert_eq!(s.kind, RequestKind::Login);
    }

    /// The server's answer to a request of `kind` whose page is `body`: a login sets the
    /// session cookie and redirects, anything else is a plain page.
    fn page(kind: RequestKind, body: &str) -> Outcome<'_> {
        let login = kind == RequestKind::Login;
        Outcome::Response {
            status: if login { 303 } else { 200 },
            location: None,
            set_cookie: login.then_some("sid=x"),
            body,
        }
    }

    #[test]
    fn never_purges_from_trash() {
        let mut u = UserModel::new(1, 9, Duration::ZERO, Mix::Markov);
        let mut s = u.next(None);
        for _ in 0..2000 {
            let body = match s.kind {
                RequestKind::ListFolders => {
                    "<a href=\"/folder?f=4\">Trash</a><a href=\"/folder?f=5\">Inbox</a>"
                }
                // Every folder page lists the same messages; only Trash's may not be deleted.
                RequestKind::ListMessages => "<a href=\"/msg?id=11\"><a href=\"/msg?id=12\">",
                _ => "",
            };
            let in_trash = u.folder == Some(4) && u.listed_from_folder;
            s = u.next(Some(page(s.kind, body)));
            if s.kind == RequestKind::Delete {
                assert!(!(in_trash && u.folder == Some(4)), "a delete in Trash");
            }
            if s.kind == RequestKind::Refile {
                assert!(!s.form.as_deref().unwrap_or("").ends_with("to=4"));
            }
        }
    }

    #[test]
    fn only_mix_reaches_its_type() {
        let mut u = UserModel::new(1, 2, Duration::ZERO, Mix::Only(RequestKind::ShowMessage));
        let mut s = u.next(None);
        let mut seen = false;
        for _ in 0..10 {
            let body = match s.kind {
                RequestKind::ListFolders => "<a href=\"/folder?f=4\">",
                RequestKind::ListMessages => "<a href=\"/msg?id=11\"><a href=\"/msg?id=12\">",
                _ => "",
            };
            seen |= s.kind == RequestKind::ShowMessage;
            s = u.next(Some(page(s.kind, body)));
        }
        assert!(seen);
        assert!(s.path.starts_with("/msg?id=1"));
    }
}
