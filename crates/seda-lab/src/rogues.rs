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

use seda_load::workload::{Request, Session, Workload};
use seda_mail::RequestKind;
use seda_testbed::mail::workload::MailWorkload;

use crate::long_search::{MISSING_PHRASE, Rewrite, Rewritten};

/// The class index of the rogue searches (after the request types').
pub const ROGUE_CLASS: usize = RequestKind::ALL.len();

/// Who the users are: short searchers log in as `short_accounts` (at least one) of a corpus
/// of `corpus_users` users; the first `rogue_users` sessions are rogues logged in as
/// `rogue_account`, whose first rogue search comes `first_after` after their login and the next
/// ones `every` after the last one's answer.
#[derive(Debug, Clone)]
pub struct RoguePlan {
    /// Users in the corpus.
    pub corpus_users: u64,
    /// Accounts the short searchers log in as, one per session in turn.
    pub short_accounts: Vec<u64>,
    /// The account the rogues log in as.
    pub rogue_account: u64,
    /// How many of the sessions are rogues (the first ones started).
    pub rogue_users: usize,
    /// A rogue's wait before its first rogue search.
    pub first_after: Duration,
    /// A rogue's wait between two rogue searches.
    pub every: Duration,
}

/// The load: see the module docs.
#[derive(Debug, Clone)]
pub struct Rogues {
    plan: RoguePlan,
    /// Sessions started so far: the first `rogue_users` are the rogues.
    started: Arc<AtomicUsize>,
}

impl Rogues {
    /// The load `plan` describes.
    pub fn new(plan: RoguePlan) -> Rogues {
        Rogues {
            plan,
            started: Arc::new(AtomicUsize::new(0)),
        }
    }
}

impl Workload for Rogues {
    fn classes(&self) -> Vec<String> {
        let mut classes = MailWorkload::new(self.plan.corpus_users).classes();
        classes.push("rogue".into());
        classes
    }

    fn session(&self, seed: u64) -> Box<dyn Session> {
        let role = self.started.fetch_add(1, Ordering::Relaxed);
        let searches = |account: u64| {
            MailWorkload::new(self.plan.corpus_users)
                .accounts(account, account)
                .only(RequestKind::Search)
                .session(seed)
        };
        if role < self.plan.rogue_users {
            return Box::new(Rewritten {
                inner: searches(self.plan.rogue_account),
                rewrite: Rogue {
                    path: format!("/search?q={MISSING_PHRASE}&in=body").into(),
                    first_after: Some(self.plan.first_after),
                    every: self.plan.every,
                    last_was_rogue: false,
                },
            });
        }
        let account = match self.plan.short_accounts.len() {
            0 => 1,
            n => self.plan.short_accounts[(role - self.plan.rogue_users) % n],
        };
        searches(account)
    }
}

/// A rogue: its searches are full scans, spaced `every` apart.
struct Rogue {
    path: Arc<str>,
    /// The wait after its login's answer, until taken.
    first_after: Option<Duration>,
    every: Duration,
    last_was_rogue: bool,
}

impl Rewrite for Rogue {
    fn request(&mut self, req: &mut Request) {
        self.last_was_rogue = req.class == RequestKind::Search.index();
        if self.last_was_rogue {
            req.path = self.path.clone();
            req.class = ROGUE_CLASS;
        }
    }

    fn think_time(&mut self, model: &mut dyn Session) -> Option<Duration> {
        if let Some(first) = self.first_after.take() {
            return Some(first);
        }
        if self.last_was_rogue {
            Some(self.every)
        } else {
            model.think_time()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::long_search::on_empty_pages;

    /// Drives `s` with empty pages that set a session cookie; the classes it sends.
    fn classes(s: &mut dyn Session, n: usize) -> Vec<usize> {
        on_empty_pages(s, n).iter().map(|r| r.class).collect()
    }

    #[test]
    fn the_first_session_is_the_rogue_and_the_others_search_short() {
        let w = Rogues::new(RoguePlan {
            corpus_users: 100,
            short_accounts: vec![5, 6],
            rogue_account: 9,
            rogue_users: 1,
            first_after: Duration::from_secs(1),
            every: Duration::from_secs(4),
        });
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
