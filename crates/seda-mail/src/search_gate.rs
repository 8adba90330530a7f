//! The searches' own database connections: at most `connections` searches run against the
//! store at once, each holding one of them from its first statement to its answer
//! (`seda serve mail --search-connections N`).
//!
//! A search reads a whole mailbox; left to take connections as it pleases, a burst of them
//! takes as many as there are stage threads and slows every other request type's statements.
//! A small pool dedicated to searches bounds that, and makes the pool a contended resource of
//! its own: a search that holds a connection for long (a full scan of the bodies of the
//! largest mailbox, a phrase nobody wrote) keeps every search queued behind it waiting.
//!
//! The pool is a [`seda::Contended`]: it records which request holds each connection, who
//! waits, and how long holds usually last. With culprit cutting on
//! (`--cut-culprits`, [`CulpritPolicy`]), the runtime's control loop cuts, as terminated, the
//! holder that has held its connection far past the usual hold while others wait: the
//! request hogging the pool, not the victims queued behind it (`[ATROPOS25]`, see
//! docs/papers.md), which a threshold on running time cannot tell apart. The cut is the
//! store's usual safe release: the running statement is interrupted through the request's
//! token (SQLite's interrupt, PostgreSQL's cancel, MariaDB's `KILL QUERY`), the connection is
//! dropped rather than pooled, the emulated processor lets go, and the request is answered
//! 503 `x-seda-reject: terminated`. A search reads only, so nothing is rolled back but its
//! read.
//!
//! A search waiting for a connection gives up when its request is cancelled or terminated
//! (a running-time terminator that cuts it while it waits), so a cut victim frees its stage
//! thread at once.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};
use seda::{CancelToken, Contended, CulpritPolicy, Held};
use seda_control::terminate::{PeriodCounts, Terminator};

/// How often a waiting search looks whether its request was cancelled.
const CANCEL_POLL: Duration = Duration::from_millis(5);

/// The settings of the searches' pool.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SearchConnections {
    /// Searches running at once (at least 1).
    pub connections: usize,
    /// Cut the holder hogging the pool by this policy (`None`: watch only).
    pub cut_culprits: Option<CulpritPolicy>,
}

impl SearchConnections {
    /// `connections` connections; culprits are not cut.
    ///
    /// # Errors
    ///
    /// A message when `connections` is 0 (no search could ever run).
    pub fn new(connections: usize) -> Result<SearchConnections, String> {
        if connections == 0 {
            return Err("the searches need at least one connection".into());
        }
        Ok(SearchConnections {
            connections,
            cut_culprits: None,
        })
    }

    /// Cut culprits by `policy`.
    pub fn cutting(mut self, policy: CulpritPolicy) -> SearchConnections {
        self.cut_culprits = Some(policy);
        self
    }
}

/// The pool: a count of free connections behind a [`Contended`].
#[derive(Debug)]
pub struct SearchGate {
    resource: Arc<Contended>,
    cuts: bool,
    free: Mutex<usize>,
    freed: Condvar,
}

/// One connection of the pool, given back when dropped.
#[derive(Debug)]
pub struct Slot<'a>(&'a SearchGate);

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        *self.0.free.lock() += 1;
        self.0.freed.notify_one();
    }
}

impl SearchGate {
    /// The pool of `settings`.
    pub fn new(settings: SearchConnections) -> SearchGate {
        let resource = Contended::new("mail.search connections");
        let resource = match settings.cut_culprits {
            Some(policy) => resource.with_policy(policy),
            None => resource,
        };
        SearchGate {
            resource: Arc::new(resource),
            cuts: settings.cut_culprits.is_some(),
            free: Mutex::new(settings.connections.max(1)),
            freed: Condvar::new(),
        }
    }

    /// The contended resource, for [`seda::Runtime::watch`] and stats pages.
    pub fn resource(&self) -> &Arc<Contended> {
        &self.resource
    }

    /// Whether the runtime cuts its culprits.
    pub fn cuts_culprits(&self) -> bool {
        self.cuts
    }

    /// Takes a connection for the request `token` belongs to, waiting for one; `None` inside
    /// when the request was cancelled or terminated while it waited.
    pub fn enter(&self, token: &CancelToken) -> Held<'_, Option<Slot<'_>>> {
        self.resource.acquire(token, || {
            let mut free = self.free.lock();
            while *free == 0 {
                if token.is_cancelled() {
                    return None;
                }
                self.freed.wait_for(&mut free, CANCEL_POLL);
            }
            if token.is_cancelled() {
                return None;
            }
            *free -= 1;
            Some(Slot(self))
        })
    }
}

/// The search stage's terminator when culprits are cut and no running-time terminator is
/// configured: it never cuts by running time (its threshold is a day), but it makes the stage
/// terminable, so that the stage counts a culprit's cut as *terminated* and keeps it out of its
/// latency samples, as it would any termination.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CountCutsOnly;

impl Terminator for CountCutsOnly {
    fn name(&self) -> &'static str {
        "culprits-only"
    }
    fn threshold(&self) -> Duration {
        Duration::from_secs(86_400)
    }
    fn on_period(&mut self, _counts: PeriodCounts) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn no_connections_is_refused() {
        assert!(SearchConnections::new(0).is_err());
        assert_eq!(SearchConnections::new(2).map(|s| s.connections), Ok(2));
    }

    #[test]
    fn a_second_search_waits_for_the_one_connection() {
        let gate = Arc::new(SearchGate::new(SearchConnections::new(1).unwrap()));
        let first = CancelToken::new();
        let held = gate.enter(&first);
        assert!(held.is_some());
        let g = gate.clone();
        let waiter = std::thread::spawn(move || {
            let t0 = Instant::now();
            let slot = g.enter(&CancelToken::new());
            (slot.is_some(), t0.elapsed())
        });
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(gate.resource().snapshot().waiting, 1);
        drop(held);
        let (got, waited) = waiter.join().unwrap();
        assert!(got);
        assert!(waited >= Duration::from_millis(40), "{waited:?}");
    }

    #[test]
    fn a_cancelled_waiter_gives_up() {
        let gate = Arc::new(SearchGate::new(SearchConnections::new(1).unwrap()));
        let _held = gate.enter(&CancelToken::new());
        let token = CancelToken::new();
        let (g, t) = (gate.clone(), token.clone());
        let waiter = std::thread::spawn(move || g.enter(&t).is_none());
        std::thread::sleep(Duration::from_millis(20));
        token.cancel();
        assert!(waiter.join().unwrap(), "gave up without a connection");
        assert_eq!(gate.resource().snapshot().waiting, 0);
    }
}
