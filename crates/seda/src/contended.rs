//! Culprit-aware termination: a shared resource that knows who holds it and who waits for it,
//! so that the request hogging it can be cut instead of its victims.
//!
//! A termination threshold on running time (SERT06) cannot tell a culprit from its victims:
//! the requests queued behind a lock held for seconds run long too, and a threshold that cuts
//! the holder cuts them as well. Atropos (SOSP 2025) cancels the one request that hogs an
//! internal resource (a lock, a buffer pool, a connection) and restores most of the
//! throughput while cancelling a tiny share of requests. [`Contended`] is that idea for a
//! handler's own resources: the handler takes the resource through
//! [`acquire`](Contended::acquire), which records the request as waiting, then as holding,
//! with its [`CancelToken`]. Watched by the runtime ([`Runtime::watch`](crate::Runtime::watch)),
//! each control tick cuts, as *terminated*, a holder that has held the resource far longer than
//! its typical hold while others wait for it ([`CulpritPolicy`]). The cut is the usual safe
//! release: the handler notices at its next safe point ([`CancelToken::checkpoint`], or a
//! statement interrupted through the token), unwinds, and its guard gives the resource back.
//!
//! ```
//! use std::sync::{Arc, Mutex};
//! use seda::{CancelToken, Contended, CulpritPolicy};
//!
//! let folder = Mutex::new(Vec::<u64>::new());
//! let lock = Arc::new(Contended::new("folder lock").with_policy(CulpritPolicy::default()));
//! let token = CancelToken::new();
//! {
//!     let mut held = lock.acquire(&token, || folder.lock().unwrap());
//!     held.push(7);
//!     assert_eq!(lock.snapshot().holders, 1);
//! }
//! assert_eq!(lock.snapshot().holders, 0);
//! ```
//!
//! A resource without a policy only watches: its snapshot tells holders, waiters and hold times,
//! and it never cuts.

use std::collections::VecDeque;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use seda_control::InvalidConfig;
use serde::{Deserialize, Serialize};

use crate::CancelToken;

/// Completed holds kept to judge the typical hold.
const HISTORY: usize = 64;

/// When a holder is a culprit. All three must hold: others wait, and the holder has held the
/// resource for longer than both `hold_factor` times the typical hold and `min_hold`.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct CulpritPolicy {
    /// Requests that must be waiting for the resource (a long hold nobody waits for harms
    /// nobody: it is left alone).
    pub min_waiters: usize,
    /// How many times the typical hold (the median of the last 64 holds that ended normally) a
    /// holder must have held it.
    pub hold_factor: f64,
    /// The shortest hold ever cut, whatever the typical hold (and the only bar before any hold
    /// has ended).
    pub min_hold: Duration,
}

impl Default for CulpritPolicy {
    /// Two waiters, eight times the typical hold, at least 100 ms: a hold that long is not a
    /// slow request of the usual kind but a different kind of work, and two requests stuck
    /// behind it are already a queue.
    fn default() -> Self {
        CulpritPolicy {
            min_waiters: 2,
            hold_factor: 8.0,
            min_hold: Duration::from_millis(100),
        }
    }
}

impl CulpritPolicy {
    /// A policy with these bars.
    ///
    /// # Errors
    ///
    /// [`InvalidConfig`] naming the setting when `min_waiters` is 0 (every long hold would be
    /// cut) or `hold_factor` is below 1 or not finite.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use seda::CulpritPolicy;
    ///
    /// let policy = CulpritPolicy::new(3, 10.0, Duration::from_millis(200))?;
    /// assert_eq!(policy.min_waiters, 3);
    /// let wrong = CulpritPolicy::new(0, 10.0, Duration::ZERO).unwrap_err();
    /// assert_eq!(wrong.param, "min_waiters");
    /// # Ok::<(), seda::InvalidConfig>(())
    /// ```
    pub fn new(
        min_waiters: usize,
        hold_factor: f64,
        min_hold: Duration,
    ) -> Result<Self, InvalidConfig> {
        if min_waiters == 0 {
            return Err(InvalidConfig::new(
                "min_waiters",
                "min_waiters must be at least 1",
            ));
        }
        if !(hold_factor.is_finite() && hold_factor >= 1.0) {
            return Err(InvalidConfig::new(
                "hold_factor",
                format!("hold_factor must be at least 1, got {hold_factor}"),
            ));
        }
        Ok(CulpritPolicy {
            min_waiters,
            hold_factor,
            min_hold,
        })
    }
}

/// See the module docs.
#[derive(Debug)]
pub struct Contended {
    name: String,
    policy: Option<CulpritPolicy>,
    state: Mutex<State>,
    cut: AtomicU64,
}

#[derive(Debug, Default)]
struct State {
    next_key: u64,
    holders: Vec<Holder>,
    waiting: usize,
    /// The last [`HISTORY`] holds that ended without a cut.
    holds: VecDeque<Duration>,
}

#[derive(Debug)]
struct Holder {
    key: u64,
    since: Instant,
    token: CancelToken,
    cut: bool,
}

/// What a watched resource looks like now, for stats pages.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct ContendedSnapshot {
    /// The resource's name.
    pub name: String,
    /// Requests holding it now.
    pub holders: usize,
    /// Requests waiting for it now.
    pub waiting: usize,
    /// The longest hold in progress, seconds (0 when nobody holds it).
    pub longest_hold_s: f64,
    /// The median of recent holds that ended normally, seconds (`None` before the first).
    pub typical_hold_s: Option<f64>,
    /// Holders cut as culprits since the start.
    pub culprits_cut: u64,
}

impl Contended {
    /// A resource called `name` that is watched, never cut ([`with_policy`](Self::with_policy)
    /// lets the runtime cut its culprits).
    pub fn new(name: impl Into<String>) -> Self {
        Contended {
            name: name.into(),
            policy: None,
            state: Mutex::new(State::default()),
            cut: AtomicU64::new(0),
        }
    }

    /// Cut culprits by `policy` when the runtime watches this resource.
    pub fn with_policy(mut self, policy: CulpritPolicy) -> Self {
        self.policy = Some(policy);
        self
    }

    /// The resource's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Takes the resource for the request `token` belongs to: counts it waiting while `take`
    /// runs (a lock, a pool's checkout), then holding until the returned guard is dropped.
    pub fn acquire<T>(&self, token: &CancelToken, take: impl FnOnce() -> T) -> Held<'_, T> {
        self.state.lock().waiting += 1;
        let waited = Waiting(self);
        let inner = take();
        drop(waited);
        let since = Instant::now();
        let mut s = self.state.lock();
        let key = s.next_key;
        s.next_key += 1;
        s.holders.push(Holder {
            key,
            since,
            token: token.clone(),
            cut: false,
        });
        Held {
            inner,
            owner: self,
            key,
        }
    }

    /// One control tick: with a policy, cuts (as terminated) the longest holder if it is a
    /// culprit at `now`. At most one cut a tick, so a resource several requests hold sheds one
    /// at a time. Returns whether it cut.
    pub fn police(&self, now: Instant) -> bool {
        let Some(policy) = self.policy else {
            return false;
        };
        let mut s = self.state.lock();
        if s.waiting < policy.min_waiters {
            return false;
        }
        let bar = typical(&s.holds)
            .map_or(policy.min_hold, |t| t.mul_f64(policy.hold_factor))
            .max(policy.min_hold);
        let Some(culprit) = s
            .holders
            .iter_mut()
            .filter(|h| !h.cut)
            .max_by_key(|h| now.saturating_duration_since(h.since))
        else {
            return false;
        };
        if now.saturating_duration_since(culprit.since) <= bar || !culprit.token.terminate() {
            return false;
        }
        culprit.cut = true;
        self.cut.fetch_add(1, Ordering::Relaxed);
        true
    }

    /// Holders, waiters and hold times now.
    pub fn snapshot(&self) -> ContendedSnapshot {
        let now = Instant::now();
        let s = self.state.lock();
        ContendedSnapshot {
            name: self.name.clone(),
            holders: s.holders.len(),
            waiting: s.waiting,
            longest_hold_s: s
                .holders
                .iter()
                .map(|h| now.saturating_duration_since(h.since).as_secs_f64())
                .fold(0.0, f64::max),
            typical_hold_s: typical(&s.holds).map(|d| d.as_secs_f64()),
            culprits_cut: self.cut.load(Ordering::Relaxed),
        }
    }

    fn release(&self, key: u64) {
        let mut s = self.state.lock();
        if let Some(i) = s.holders.iter().position(|h| h.key == key) {
            let h = s.holders.swap_remove(i);
            // A cut hold is not a hold of the usual kind: it would raise the bar for the next.
            if !h.cut {
                if s.holds.len() == HISTORY {
                    s.holds.pop_front();
                }
                s.holds.push_back(h.since.elapsed());
            }
        }
    }
}

/// The median of `holds`.
fn typical(holds: &VecDeque<Duration>) -> Option<Duration> {
    let mut sorted: Vec<Duration> = holds.iter().copied().collect();
    sorted.sort_unstable();
    sorted.get(sorted.len() / 2).copied()
}

/// Counts a request waiting until dropped (also when `take` panics).
struct Waiting<'a>(&'a Contended);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        let mut s = self.0.state.lock();
        s.waiting = s.waiting.saturating_sub(1);
    }
}

/// A held resource: derefs to what `take` returned, and gives the resource back when dropped.
#[derive(Debug)]
pub struct Held<'a, T> {
    inner: T,
    owner: &'a Contended,
    key: u64,
}

impl<T> Deref for Held<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.inner
    }
}

impl<T> DerefMut for Held<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.inner
    }
}

impl<T> Drop for Held<'_, T> {
    fn drop(&mut self) {
        self.owner.release(self.key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::CancelReason;

    fn policy(min_hold_ms: u64) -> CulpritPolicy {
        CulpritPolicy::new(2, 8.0, Duration::from_millis(min_hold_ms)).unwrap()
    }

    /// A resource held by `holder` since `held` ago, with `waiters` waiting.
    fn scene(c: &Contended, holder: &CancelToken, held: Duration, waiters: usize) {
        let mut s = c.state.lock();
        s.holders.push(Holder {
            key: 99,
            since: Instant::now() - held,
            token: holder.clone(),
            cut: false,
        });
        s.waiting += waiters;
    }

    #[test]
    fn a_long_holder_with_waiters_is_cut_once() {
        let c = Contended::new("lock").with_policy(policy(100));
        let t = CancelToken::new();
        scene(&c, &t, Duration::from_millis(500), 2);
        assert!(c.police(Instant::now()));
        assert_eq!(t.checkpoint(), Err(CancelReason::Terminated));
        assert!(!c.police(Instant::now()), "cut once");
        assert_eq!(c.snapshot().culprits_cut, 1);
    }

    #[test]
    fn nobody_waiting_or_a_short_hold_or_no_policy_is_left_alone() {
        let lone = Contended::new("lock").with_policy(policy(100));
        let t = CancelToken::new();
        scene(&lone, &t, Duration::from_secs(5), 1);
        assert!(
            !lone.police(Instant::now()),
            "one waiter: under min_waiters"
        );
        let short = Contended::new("lock").with_policy(policy(100));
        scene(&short, &t, Duration::from_millis(50), 5);
        assert!(!short.police(Instant::now()), "under min_hold");
        let watched = Contended::new("lock");
        scene(&watched, &t, Duration::from_secs(5), 5);
        assert!(!watched.police(Instant::now()), "no policy");
        assert_eq!(t.checkpoint(), Ok(()));
    }

    #[test]
    fn the_bar_follows_the_typical_hold() {
        let c = Contended::new("lock").with_policy(policy(10));
        let t = CancelToken::new();
        // Holds of about 30 ms: the bar is 8 x 30 = 240 ms, above min_hold.
        c.state.lock().holds.extend([Duration::from_millis(30); 9]);
        scene(&c, &t, Duration::from_millis(200), 3);
        assert!(!c.police(Instant::now()), "200 ms is under 240 ms");
        assert!(c.police(Instant::now() + Duration::from_millis(100)));
    }

    #[test]
    fn guards_count_waiting_and_holding_and_learn_holds() {
        let c = Contended::new("lock").with_policy(policy(100));
        let t = CancelToken::new();
        {
            let held = c.acquire(&t, || {
                assert_eq!(c.snapshot().waiting, 1);
                5
            });
            assert_eq!(*held, 5);
            let s = c.snapshot();
            assert_eq!((s.holders, s.waiting), (1, 0));
        }
        let s = c.snapshot();
        assert_eq!((s.holders, s.waiting), (0, 0));
        assert!(s.typical_hold_s.is_some());
    }

    #[test]
    fn a_policy_that_would_cut_every_long_hold_is_refused() {
        assert!(CulpritPolicy::new(0, 8.0, Duration::ZERO).is_err());
        assert!(CulpritPolicy::new(2, 0.5, Duration::ZERO).is_err());
        assert!(CulpritPolicy::new(2, f64::NAN, Duration::ZERO).is_err());
    }
}
