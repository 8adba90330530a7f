//! The time requests spend before the layer sees them, for the server to report.
//!
//! A layer times a request from the moment its service is called. A request can wait longer
//! before that: unread in its socket while the server's threads are busy or not scheduled. In
//! the lab's `proxy-spike`, `seda proxy` shared a core with its upstream; rejecting 4,800
//! requests a second took a fifth of the core, requests waited unread, and the clients' p90
//! was 0.85 s while the layer measured 0.4 s and kept admitting. The server can measure that
//! wait (how late its own timers fire, for an async runtime) and set it here; the layer adds
//! it to each response time its controller learns, so the controller admits less until the
//! wait the clients see is within the target too.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// A shared delay, set by the server and read by the layer; zero until set.
#[derive(Debug, Clone, Default)]
pub struct ArrivalLag(Arc<AtomicU64>);

impl ArrivalLag {
    /// Sets the current delay before the layer.
    pub fn set(&self, lag: Duration) {
        let ns = lag.as_nanos().min(u128::from(u64::MAX)) as u64;
        self.0.store(ns, Ordering::Relaxed);
    }

    /// The current delay before the layer.
    pub fn get(&self) -> Duration {
        Duration::from_nanos(self.0.load(Ordering::Relaxed))
    }
}
