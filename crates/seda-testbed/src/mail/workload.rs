//! The e-mail user as a `seda-load` workload (`seda load --workload mail`).
//!
//! Each load-generator session is one [`UserModel`]: it sees each reply's status, `Location`,
//! `Set-Cookie` and the start of its HTML, and picks the next request by the Markov model. Think
//! time and the wait after a 503 are the load generator's (`--think`, `--backoff`); after the
//! wait the user sends the rejected request again in the session it has (WC03's users logged
//! in again; see [`super::user_model`], "After a rejection").

use std::sync::Arc;

use seda_load::workload::{Reply, Request, Session, Workload};

use super::user_model::{Mix, Outcome, Step, UserModel};
use seda_mail::RequestKind;

/// How much of each reply the model reads for links (a page of a message list fits).
const CAPTURE_BYTES: usize = 256 * 1024;

/// Arashi's users over a corpus of `users` accounts.
#[derive(Debug, Clone)]
pub struct MailWorkload {
    /// The first account users log in as (1-based) and how many there are.
    first: u64,
    users: u64,
    mix: Mix,
}

impl MailWorkload {
    /// Users log in as one of the corpus's `users` accounts (at least one) and walk the
    /// Markov model.
    pub fn new(users: u64) -> MailWorkload {
        MailWorkload {
            first: 1,
            users: users.max(1),
            mix: Mix::Markov,
        }
    }

    /// Users log in only as accounts `first..=last` of the corpus (1-based; an empty range is
    /// the single account `first`): a population of one service class, since the corpus gives
    /// its second half of accounts the high class ([`seda_mail::corpus::high_class`]).
    pub fn accounts(mut self, first: u64, last: u64) -> MailWorkload {
        self.first = first.max(1);
        self.users = last.saturating_sub(self.first) + 1;
        self
    }

    /// Users send only requests of `kind` (after the login and pages it needs first): one
    /// stage's load, to measure its capacity or make it the bottleneck.
    pub fn only(mut self, kind: RequestKind) -> MailWorkload {
        self.mix = Mix::Only(kind);
        self
    }
}

impl Workload for MailWorkload {
    fn classes(&self) -> Vec<String> {
        RequestKind::ALL
            .iter()
            .map(|k| k.name().to_string())
            .collect()
    }

    fn session(&self, seed: u64) -> Box<dyn Session> {
        // Corpus accounts are numbered from 1 (`user1`).
        let user = self.first + seed % self.users;
        Box::new(MailSession {
            model: UserModel::new(user, seed, super::user_model::THINK_TIME, self.mix),
        })
    }
}

struct MailSession {
    model: UserModel,
}

fn to_request(step: Step) -> Request {
    let mut headers = Vec::new();
    if let Some(cookie) = step.cookie {
        headers.push(("Cookie".to_string(), cookie));
    }
    let body = match step.form {
        Some(form) => {
            headers.push((
                "Content-Type".to_string(),
                "application/x-www-form-urlencoded".to_string(),
            ));
            form.into_bytes()
        }
        None => Vec::new(),
    };
    let class = RequestKind::ALL
        .iter()
        .position(|k| *k == step.kind)
        .unwrap_or(0);
    Request {
        method: step.method,
        path: Arc::from(step.path),
        headers,
        body,
        class,
    }
}

impl Session for MailSession {
    fn next_request(&mut self, last: Option<&Reply<'_>>) -> Request {
        let step = match last {
            None => self.model.next(None),
            Some(reply) if reply.status == 503 => self.model.next(Some(Outcome::Rejected)),
            Some(reply) => {
                let body = String::from_utf8_lossy(reply.body);
                self.model.next(Some(Outcome::Response {
                    status: reply.status,
                    location: reply.header("location"),
                    set_cookie: reply.header("set-cookie"),
                    body: &body,
                }))
            }
        };
        to_request(step)
    }

    /// After a rejection and the wait: the model keeps its session, and the next request
    /// (asked with no reply) is the rejected one again.
    fn restart(&mut self) {}

    fn capture_bytes(&self) -> usize {
        CAPTURE_BYTES
    }

    fn capture_headers(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_logs_in_first_and_carries_its_cookie() {
        let w = MailWorkload::new(10);
        assert_eq!(w.classes()[0], "login");
        let mut s = w.session(3);
        let login = s.next_request(None);
        assert_eq!((login.method, login.class), ("POST", 0));
        assert!(
            String::from_utf8_lossy(&login.body).contains("user="),
            "a login form"
        );
        let headers = [
            ("Set-Cookie".to_string(), "sid=abc; HttpOnly".to_string()),
            ("Location".to_string(), "/folders".to_string()),
        ];
        let reply = Reply::whole(303, b"", &headers);
        let next = s.next_request(Some(&reply));
        assert!(
            next.headers
                .iter()
                .any(|(k, v)| k == "Cookie" && v.contains("sid=abc")),
            "{next:?}"
        );
        let rejected = Reply::whole(503, b"", &[]);
        let again = s.next_request(Some(&rejected));
        assert_eq!(again, next, "a rejected user retries in its session");
        // The load generator's way: wait, restart, ask with no reply.
        s.restart();
        assert_eq!(s.next_request(None), next);
        assert_ne!(next.class, 0, "not a login");
    }

    #[test]
    fn accounts_limit_the_users_to_a_range() {
        let w = MailWorkload::new(100).accounts(51, 100);
        for seed in 0..200 {
            let login = w.session(seed).next_request(None);
            let body = String::from_utf8_lossy(&login.body).into_owned();
            let n: u64 = body
                .strip_prefix("user=user")
                .and_then(|r| r.split('&').next())
                .and_then(|n| n.parse().ok())
                .unwrap_or(0);
            assert!((51..=100).contains(&n), "{body}");
        }
    }
}
