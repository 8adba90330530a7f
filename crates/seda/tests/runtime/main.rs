//! Integration tests of the runtime, one module per topic.

mod admission; // thresholds, rate limits, predicates, expiry, prepare/commit, backpressure
mod config; // TOML settings, overrides and their errors
mod culprit; // culprit-aware termination: the holder of a contended lock cut, not its victims
mod modes; // inline stages, domains, LIFO order
mod panics; // a panicking handler fails its event, not its stage
mod pools; // pool growth, resize under load, idle retirement, batching controller
mod shutdown; // draining and bounded shutdown
mod sizers; // fixed, self-tuning and hill-climbing pools on a blocking stage; global control
mod stats; // snapshots, JSON and the graph
mod stress; // many producers and stages: every event completed or rejected exactly once
mod terminate; // early termination: terminable stages, counts, the TOML terminator

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Waits (polling) until `cond` holds or `timeout` passes; returns whether it held.
pub fn eventually(timeout: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    cond()
}

/// A shared counter.
#[derive(Clone, Default)]
pub struct Counter(Arc<AtomicU64>);

impl Counter {
    pub fn add(&self, n: u64) {
        self.0.fetch_add(n, Ordering::SeqCst);
    }
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }
}
