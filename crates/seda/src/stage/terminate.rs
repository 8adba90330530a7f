//! Early termination of a stage's long requests (SERT06): the running requests, and the
//! terminator that cuts those past its threshold.
//!
//! A worker registers each request of a batch (its start and its [`CancelToken`]) before the
//! handler runs and removes it after. The control thread feeds the terminator the stage's
//! throughput loss once per stats period (`runtime.stats_period_ms`, 1 s by default: the
//! terminator's `window` counts these periods, as in the simulator) and, every tick
//! (`runtime.tick_ms`), cancels as *terminated* the requests running longer than the
//! terminator's threshold. The handler notices at its next safe point. The cost outside
//! terminable stages is nothing: a stage without a terminator has no `Termination`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use seda_control::terminate::{PeriodCounts, Terminator};

use crate::stats::{Counters, TerminationSnapshot};
use crate::{CancelToken, Meta};

/// A terminable stage's terminator and running requests.
pub(crate) struct Termination {
    terminator: Mutex<Box<dyn Terminator>>,
    running: Mutex<HashMap<u64, Running>>,
    next_key: AtomicU64,
    /// The threshold in force, in microseconds (read by snapshots without the lock).
    threshold_us: AtomicU64,
    /// Termination requests the control thread made (the handler may have finished first).
    requested: AtomicU64,
    /// Completions later than the terminator's `late_after` (lost, for its loss `p`).
    late: AtomicU64,
    /// The terminator's `late_after`, read without its lock.
    late_after: Option<Duration>,
    /// Cumulative (arrivals, lost, terminated) at the last period, to make per-period counts.
    last: Mutex<(u64, u64, u64)>,
}

struct Running {
    started: Instant,
    born: Instant,
    token: CancelToken,
}

impl Termination {
    pub(crate) fn new(terminator: Box<dyn Terminator>) -> Self {
        let threshold = terminator.threshold();
        let late_after = terminator.late_after();
        Termination {
            late: AtomicU64::new(0),
            late_after,
            terminator: Mutex::new(terminator),
            running: Mutex::new(HashMap::new()),
            next_key: AtomicU64::new(0),
            threshold_us: AtomicU64::new(micros(threshold)),
            requested: AtomicU64::new(0),
            last: Mutex::new((0, 0, 0)),
        }
    }

    /// Registers the requests a batch is about to run; the keys go back to
    /// [`finish`](Self::finish).
    pub(crate) fn start<'a>(
        &self,
        metas: impl Iterator<Item = &'a Meta>,
        now: Instant,
        keys: &mut Vec<u64>,
    ) {
        let mut running = self.running.lock();
        for meta in metas {
            let key = self.next_key.fetch_add(1, Ordering::Relaxed);
            running.insert(
                key,
                Running {
                    started: now,
                    born: meta.born,
                    token: meta.cancel.clone(),
                },
            );
            keys.push(key);
        }
    }

    /// Unregisters a batch's requests at `now`; `terminated[i]` says whether the handler gave
    /// request `i` up after its termination. Completed requests' running times go to the
    /// terminator (a percentile timeout learns from them); those that completed later than its
    /// `late_after` (response time, from the request's birth) count as lost for its loss.
    pub(crate) fn finish(&self, keys: &[u64], now: Instant, terminated: &mut Vec<bool>) {
        let mut done = Vec::with_capacity(keys.len());
        {
            let mut running = self.running.lock();
            for key in keys {
                if let Some(r) = running.remove(key) {
                    done.push(r);
                }
            }
        }
        let mut terminator = self.terminator.lock();
        for r in done {
            let cut = r.token.was_terminated();
            if !cut {
                terminator.on_complete(now.saturating_duration_since(r.started));
                if self
                    .late_after
                    .is_some_and(|l| now.saturating_duration_since(r.born) > l)
                {
                    self.late.fetch_add(1, Ordering::Relaxed);
                }
            }
            terminated.push(cut);
        }
    }

    /// The end of a stats period: the loss over it (arrivals not completed) to the
    /// terminator, which may move its threshold. `totals` are the stage's cumulative counters.
    pub(crate) fn on_period(&self, totals: &Counters) {
        let late = self.late.load(Ordering::Relaxed);
        let (arrived, lost) = (totals.arrivals(), totals.lost() + late);
        let terminated = totals.terminated();
        let mut last = self.last.lock();
        let counts = PeriodCounts {
            arrived: arrived.saturating_sub(last.0),
            lost: lost.saturating_sub(last.1),
            terminated: terminated.saturating_sub(last.2),
        };
        *last = (arrived, lost, terminated);
        let mut t = self.terminator.lock();
        t.on_period(counts);
        self.threshold_us
            .store(micros(t.threshold()), Ordering::Relaxed);
    }

    /// The threshold in force.
    pub(crate) fn threshold(&self) -> Duration {
        Duration::from_micros(self.threshold_us.load(Ordering::Relaxed))
    }

    /// One control tick: cancels, as terminated, the requests running past the threshold.
    pub(crate) fn cut(&self, now: Instant) {
        let threshold = self.threshold();
        let running = self.running.lock();
        for r in running.values() {
            if now.saturating_duration_since(r.started) > threshold && r.token.terminate() {
                self.requested.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    pub(crate) fn snapshot(&self) -> TerminationSnapshot {
        let t = self.terminator.lock();
        TerminationSnapshot {
            kind: t.name().into(),
            threshold_s: self.threshold_us.load(Ordering::Relaxed) as f64 / 1e6,
            running: self.running.lock().len(),
            requested: self.requested.load(Ordering::Relaxed),
            state: t.state().into_iter().map(|(k, v)| (k.into(), v)).collect(),
        }
    }
}

fn micros(d: Duration) -> u64 {
    d.as_micros().try_into().unwrap_or(u64::MAX)
}
