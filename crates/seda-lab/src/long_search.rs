//! The e-mail service's long request (SERT06's "a few requests become much longer", on a real
//! service): the e-mail users of [`MailWorkload`], logged in as the accounts with the largest
//! mailboxes, whose searches turn into full scans of their mailbox's bodies for a while.
//!
//! A search looks through the user's messages newest first and stops at its page of hits
//! (`ORDER BY sent DESC LIMIT`), so a search for a common word ends early (about 5 ms for the
//! largest mailbox of the lab's corpus, measured with the `sqlite3` shell). A search of the
//! bodies for a phrase no message contains reads every body the user has: 90 ms for the
//! largest mailbox (12,680 messages), 45 ms for the second, 10 to 20 ms for the next six, ten
//! to twenty times a normal search and far more than a page view. Inside the shift, every
//! search the user model picks (about 1.3% of its requests) becomes such a search; everything
//! else stays as the model makes it. Outside the shift nothing changes.

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use seda_load::workload::{Reply, Request, Session, Workload};
use seda_mail::RequestKind;
use seda_mail::corpus::Corpus;
use seda_testbed::mail::workload::MailWorkload;

/// The phrase the long searches look for: no generated message contains it, so the search
/// reads every body of the user.
pub const MISSING_PHRASE: &str = "zqxjnosuchphrase";

/// The seed `seda mail corpus` builds the lab's corpus with (its default).
const CORPUS_SEED: u64 = 1;

/// The mail workload with searches turned into full scans of the bodies inside
/// `[from_s, to_s)` of the run (seconds from the first request any session makes).
#[derive(Debug, Clone)]
pub struct LongSearches {
    accounts: Vec<u64>,
    corpus_users: u64,
    from_s: f64,
    to_s: f64,
    /// The run's start, shared by every session: users who join with a spike must see the
    /// same clock as those who were there from the start.
    start: Arc<OnceLock<Instant>>,
}

impl LongSearches {
    /// Users log in as the `accounts` of a corpus of `corpus_users` users (session `i` as
    /// account `accounts[i % len]`); their searches are long in `[from_s, to_s)`.
    pub fn new(accounts: Vec<u64>, corpus_users: u64, from_s: f64, to_s: f64) -> LongSearches {
        LongSearches {
            accounts,
            corpus_users,
            from_s,
            to_s,
            start: Arc::new(OnceLock::new()),
        }
    }
}

/// The `n` accounts of the lab's corpus of `corpus_users` users with the most messages, the
/// largest first, with their message counts (the plan is computed, no database is read).
pub fn largest_mailboxes(corpus_users: u64, n: usize) -> Vec<(u64, i64)> {
    let corpus = Corpus::new(corpus_users, CORPUS_SEED);
    let mut sizes: Vec<(u64, i64)> = corpus
        .users()
        .iter()
        .map(|u| (u.id as u64, u.folders.iter().map(|f| f.count).sum()))
        .collect();
    sizes.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    sizes.truncate(n);
    sizes
}

impl Workload for LongSearches {
    fn classes(&self) -> Vec<String> {
        MailWorkload::new(self.corpus_users).classes()
    }

    fn session(&self, seed: u64) -> Box<dyn Session> {
        let account = match self.accounts.len() {
            0 => 1,
            n => self.accounts[(seed % n as u64) as usize],
        };
        let inner = MailWorkload::new(self.corpus_users)
            .accounts(account, account)
            .session(seed);
        Box::new(Rewritten {
            inner,
            rewrite: LongSearch {
                from_s: self.from_s,
                to_s: self.to_s,
                start: self.start.clone(),
                path: format!("/search?q={MISSING_PHRASE}&in=body").into(),
            },
        })
    }
}

/// Inside the shift, a search becomes the full scan of `path`.
struct LongSearch {
    from_s: f64,
    to_s: f64,
    start: Arc<OnceLock<Instant>>,
    path: Arc<str>,
}

impl Rewrite for LongSearch {
    fn request(&mut self, req: &mut Request) {
        let t = self.start.get_or_init(Instant::now).elapsed().as_secs_f64();
        let shifted = t >= self.from_s && t < self.to_s;
        if shifted && req.class == RequestKind::Search.index() {
            req.path = self.path.clone();
        }
    }
}

/// How a [`Rewritten`] session changes the requests of the e-mail user model it wraps.
pub(crate) trait Rewrite {
    /// Changes `req`, the request the user model asks for next.
    fn request(&mut self, req: &mut Request);

    /// The think time after the last request; `model` is the wrapped session, whose own think
    /// time is the default.
    fn think_time(&mut self, model: &mut dyn Session) -> Option<Duration> {
        model.think_time()
    }
}

/// An e-mail user model's session whose requests a [`Rewrite`] changes; everything else is the
/// model's (its state, its restarts, what it captures of the replies).
pub(crate) struct Rewritten<R> {
    /// The user model's session.
    pub inner: Box<dyn Session>,
    /// What changes its requests.
    pub rewrite: R,
}

impl<R: Rewrite> Session for Rewritten<R> {
    fn next_request(&mut self, last: Option<&Reply<'_>>) -> Request {
        let mut req = self.inner.next_request(last);
        self.rewrite.request(&mut req);
        req
    }

    fn restart(&mut self) {
        self.inner.restart();
    }

    fn capture_bytes(&self) -> usize {
        self.inner.capture_bytes()
    }

    fn capture_headers(&self) -> bool {
        self.inner.capture_headers()
    }

    fn think_time(&mut self) -> Option<Duration> {
        self.rewrite.think_time(self.inner.as_mut())
    }
}

/// The requests `s` sends when every reply is an empty page that sets a session cookie: its
/// first, then `n` more (the tests of the mail workloads drive their sessions so).
#[cfg(test)]
pub(crate) fn on_empty_pages(s: &mut dyn Session, n: usize) -> Vec<Request> {
    let headers = [("Set-Cookie".to_string(), "sid=abc".to_string())];
    let reply = Reply::whole(200, b"<html></html>", &headers);
    let mut sent = vec![s.next_request(None)];
    for _ in 0..n {
        sent.push(s.next_request(Some(&reply)));
    }
    sent
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_largest_mailboxes_come_first() {
        let top = largest_mailboxes(100, 5);
        assert_eq!(top.len(), 5);
        assert!(top.windows(2).all(|w| w[0].1 >= w[1].1), "{top:?}");
        let all = largest_mailboxes(100, 100);
        let mean = all.iter().map(|(_, n)| *n as f64).sum::<f64>() / all.len() as f64;
        assert!(
            top[4].1 as f64 > mean,
            "the top five are above the mean: {top:?}"
        );
    }

    #[test]
    fn searches_turn_long_only_inside_the_shift() {
        // A shift that has begun and not ended, and one that is over.
        for (from_s, to_s, long) in [(0.0, 1e9, true), (-2.0, -1.0, false)] {
            let w = LongSearches::new(vec![7], 100, from_s, to_s);
            let mut s = w.session(3);
            // Drive the session with empty pages until it searches (the model searches from
            // the browsing states).
            let sent = on_empty_pages(s.as_mut(), 20_000);
            assert_eq!(sent[0].class, RequestKind::Login.index());
            let search = sent
                .iter()
                .find(|r| r.class == RequestKind::Search.index())
                .expect("the model never searched");
            assert_eq!(
                *search.path == *format!("/search?q={MISSING_PHRASE}&in=body"),
                long
            );
        }
    }
}
