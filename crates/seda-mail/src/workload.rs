//! The e-mail user as a `seda-load` workload (`seda load --workload mail`).
//!
//! Each load-generator session is one [`UserModel`]: it sees each reply's status, `Location`,
//! `Set-Cookie` and the start of its HTML, and picks the next request by the Markov model. Think
//! time and the wait after a 503 are the load generator's (`--think`, `--backoff`); after the
//! wait it starts a fresh session, which logs in again, as WC03's users do.

use std::sync::Arc;

use seda_load::workload::{Reply, Request, Session, Workload};

use crate::request::RequestKind;
use crate::user_model::{Mix, Outcome, Step, UserModel};

/// How much of each reply the model reads for links (a page of a message list fits).
const CAPTURE_BYTES: usize = 256 * 1024;

/// Arashi's users over a corpus of `users` accounts.
#[derive(Debug, Clone)]
pub struct MailWorkload {
    users: u64,
    mix: Mix,
}

impl MailWorkload {
    /// Users log in as one of the corpus's `users` accounts (at least one) and walk the
    /// Markov model.
    pub fn new(users: u64) -> MailWorkload {
        MailWorkload {
            users: users.max(1),
            mix: Mix::Markov,
        }
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
        let user = seed % self.users + 1;
        let model = UserModel::new(user, seed, crate::user_model::THINK_TIME, self.mix);
        Box::new(MailSession {
            fresh: model.clone(),
            model,
        })
    }
}

struct MailSession {
    model: UserModel,
    /// The model as it was at the start, for `restart`.
    fresh: UserModel,
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

    fn restart(&mut self) {
        self.model = self.fresh.clone();
    }

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
        let reply = Reply {
            status: 303,
            body_bytes: 0,
            body: b"",
            headers: &headers,
        };
        let next = s.next_request(Some(&reply));
        assert!(
            next.headers
                .iter()
                .any(|(k, v)| k == "Cookie" && v.contains("sid=abc")),
            "{next:?}"
        );
        let rejected = Reply {
            status: 503,
            body_bytes: 0,
            body: b"",
            headers: &[],
        };
        assert_eq!(
            s.next_request(Some(&rejected)).class,
            0,
            "a rejected user logs in again"
        );
    }
}
