//! Shutting down: drain (a consistent double scan of every stage's counters shows nothing in
//! flight), close, stop the control thread, join the pools; also when the last clone drops.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;

use super::Inner;
use crate::erased::StageDyn;

/// What a shutdown achieved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ShutdownReport {
    /// Every admitted event was handled or dropped by its stage before the pools stopped.
    pub drained: bool,
    /// Events still queued when the wait ran out, dropped with reason `Closed`.
    pub abandoned: usize,
    /// Worker threads still busy in a handler when the wait ran out (left detached).
    pub threads_left_running: usize,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // On one of its own workers (a handler dropped the last clone) a drain would wait for
        // the handler itself: give up at once instead, dropping what is queued.
        let timeout = crate::pool::on_worker_thread().then_some(Duration::ZERO);
        self.shutdown(timeout);
    }
}

impl Inner {
    pub(super) fn shutdown(&self, timeout: Option<Duration>) -> ShutdownReport {
        let mut report = self.report.lock();
        if let Some(r) = report.as_ref() {
            return r.clone();
        }
        let shared = &self.shared;
        shared.start_draining();
        let stages = self.registry.stages.read().clone();
        let drained = wait_quiet(&stages, timeout);
        shared.close();
        let abandoned = if drained {
            0
        } else {
            stages.iter().map(|s| s.abandon()).sum()
        };
        {
            let (flag, cv) = &*self.stop;
            *flag.lock() = true;
            cv.notify_all();
        }
        if let Some(control) = self.control.lock().take() {
            let _ = control.join();
        }
        let pools = self.registry.pools.read().clone();
        let threads_left_running = pools.iter().map(|p| p.stop(timeout)).sum();
        let r = ShutdownReport {
            drained,
            abandoned,
            threads_left_running,
        };
        *report = Some(r.clone());
        r
    }
}

/// Events in flight across `stages`, from a consistent view of their counters, or `None` if the
/// counters kept moving.
///
/// Counters only grow, so two scans that read identical values saw them all unchanged at one
/// instant between the scans (the "double collect"): an event handed from stage A to B cannot
/// hide between the reads, because B counts its admission before A counts it settled.
pub(super) fn in_flight(stages: &[Arc<dyn StageDyn>]) -> Option<u64> {
    let scan = || {
        stages
            .iter()
            .map(|s| (s.admitted(), s.settled()))
            .collect::<Vec<_>>()
    };
    let first = scan();
    let second = scan();
    (first == second).then(|| second.iter().map(|(a, s)| a.saturating_sub(*s)).sum())
}

pub(super) fn approximate_in_flight(stages: &[Arc<dyn StageDyn>]) -> u64 {
    stages
        .iter()
        .map(|s| s.admitted().saturating_sub(s.settled()))
        .sum()
}

/// Polls until nothing is in flight or `timeout` passes; true when quiet.
fn wait_quiet(stages: &[Arc<dyn StageDyn>], timeout: Option<Duration>) -> bool {
    let deadline = timeout.map(|t| Instant::now() + t);
    loop {
        if in_flight(stages) == Some(0) {
            return true;
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return false;
        }
        std::thread::sleep(Duration::from_micros(500));
    }
}
