//! The `rogue` scenario's load: many e-mail users whose every request after their login is a
//! short search of a small mailbox, and a few rogue users who, every so often, search the
//! bodies of the corpus's largest mailbox for a phrase nobody wrote ([`MISSING_PHRASE`]): a
//! full scan that holds one of the searches' connections (`seda serve mail
//! --search-connections`) for about a hundred times a short search's hold, while the short
//! searches queue behind it.
//!
//! Rogue searches are counted under a class of their own ([`ROGUE_CLASS`]), so a run tells
//! whom a terminator cut: the rogues, or their victims.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use seda_load::workload::{Reply, Request, Session, Workload};
use seda_mail::RequestKind;
use seda_mail::workload::MailWorkload;

use crate::long_search::MISSING_PHRASE;

/// The class index of the rogue searches (after the request types').
pub const ROGUE_CLASS: usize = RequestKind::ALL.len();

/// The load: see the module docs.
#[derive(Debug, Clone)]
pub struct Rogues {
    corpus_users: u64,
    /// Accounts the short searchers log in as, one per session in turn.
    short_accounts: Vec<u64>,
    /// The account the rogues log in as.
    rogue_account: u64,
    /// How many of the sessions are rogues (the first ones started).
    rogue_users: usize,
    /// A rogue's wait before its first rogue search, and between two.
    first_after: Duration,
    every: Duration,
    /// Sessions started so far: the first `rogue_users` are the rogues.
    started: Arc<AtomicUsize>,
}

impl Rogues {
    /// Short searchers log in as `short_accounts` (at least one) of a corpus of `corpus_users`
    /// users; the first `rogue_users` sessions are rogues logged in as `rogue_account`, whose
    /// first rogue search comes `first_after` after their login and the next ones `every`
    /// after the last one's answer.
    pub fn new(
        corpus_users: u64,
        short_accounts: Vec<u64>,
        rogue_account: u64,
        rogue_users: usize,
        first_after: Duration,
        every: Duration,
    ) -> Rogues {
        Rogues {
            corpus_users,
            short_accounts,
            rogue_account,
            rogue_users,
            first_after,
            every,
            started: Arc::new(AtomicUsize::new(0)),
        }
    }
}

impl Workload for Rogues {
    fn classes(&self) -> Vec<String> {
        let mut classes = MailWorkload::new(self.corpus_users).classes();
        classes.push("rogue".into());
        classes
    }

    fn session(&self, seed: u64) -> Box<dyn Session> {
        let role = self.started.fetch_add(1, Ordering::Relaxed);
        let searches = |account: u64| {
            MailWorkload::new(self.corpus_users)
                .accounts(account, account)
                .only(RequestKind::Search)
                .session(seed)
        };
        if role < self.rogue_users {
            return Box::new(RogueSession {
                inner: searches(self.rogue_account),
                path: format!("/search?q={MISSING_PHRASE}&in=body").into(),
                first_after: Some(self.first_after),
                every: self.every,
                last_was_rogue: false,
            });
        }
        let account = match self.short_accounts.len() {
            0 => 1,
            n => self.short_accounts[(role - self.rogue_users) % n],
        };
        searches(account)
    }
}

/// A rogue: its searches are full scans, spaced `every` apart.
struct RogueSession {
    inner: Box<dyn Session>,
    path: Arc<str>,
    /// The wait after its login's answer, until taken.
    first_after: Option<Duration>,
    every: Duration,
    last_was_rogue: bool,
}

impl Session for RogueSession {
    fn next_request(&mut self, last: Option<&Reply<'_>>) -> Request {
        let mut req = self.inner.next_request(last);
        self.last_was_rogue = req.class == RequestKind::Search.index();
        if self.last_was_rogue {
            req.path = self.path.clone();
            req.class = ROGUE_CLASS;
        }
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
        if let Some(first) = self.first_after.take() {
            return Some(first);
        }
        if self.last_was_rogue {
            Some(self.every)
        } else {
            self.inner.think_time()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Drives `s` with empty pages that set a session cookie; the classes it sends.
    fn classes(s: &mut dyn Session, n: usize) -> Vec<usize> {
        let headers = [("Set-Cookie".to_string(), "sid=abc".to_string())];
        let reply = Reply {
            status: 200,
            body_bytes: 13,
            body: b"<html></html>",
            headers: &headers,
        };
        let mut out = vec![s.next_request(None).class];
        for _ in 0..n {
            out.push(s.next_request(Some(&reply)).class);
        }
        out
    }

    #[test]
    fn the_first_session_is_the_rogue_and_the_others_search_short() {
        let w = Rogues::new(
            100,
            vec![5, 6],
            9,
            1,
            Duration::from_secs(1),
            Duration::from_secs(4),
        );
        assert_eq!(w.classes().len(), ROGUE_CLASS + 1);
        let mut rogue = w.session(1);
        let sent = classes(rogue.as_mut(), 50);
        assert!(sent.contains(&ROGUE_CLASS), "{sent:?}");
        assert!(!sent.contains(&RequestKind::Search.index()), "{sent:?}");
        assert_eq!(rogue.think_time(), Some(Duration::from_secs(1)));
        assert_eq!(rogue.think_time(), Some(Duration::from_secs(4)));
        let mut short = w.session(2);
        let sent = classes(short.as_mut(), 50);
        assert!(sent.contains(&RequestKind::Search.index()), "{sent:?}");
        assert!(!sent.contains(&ROGUE_CLASS), "{sent:?}");
    }
}
