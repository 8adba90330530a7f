//! SEDA's heuristic as a period-driven sizer (SEDA01 Section 4.2, Sandstorm's
//! `ThreadPoolController`): one more thread when the queue is at or past its threshold,
//! sampled once per period.
//!
//! The runtime does not drive this one: its pools run SEDA's controller themselves on every
//! control tick, and their idle workers retire (`seda`'s `pool.rs`). The simulator drives it
//! here, and never removes threads: under the saturating loads its scenarios use no worker is
//! ever idle for Sandstorm's idle time.

use super::{Sizer, SizerPeriod, SizerReport, SizerSettings};
use crate::{Controller, PoolObservation, ThreadPoolConfig, ThreadPoolController};

/// SEDA's heuristic (SEDA01 Section 4.2): a thread added while the queue stays long, idle
/// threads retired. The runtime's default.
pub const SEDA: &str = "seda";

/// SEDA's heuristic, one sample per period.
#[derive(Debug, Clone)]
pub struct SedaHeuristicSizer {
    inner: ThreadPoolController,
    max: usize,
    report: SizerReport,
}

impl SedaHeuristicSizer {
    /// Adds a thread each period the queue is at least `queue_threshold`, up to the maximum.
    pub fn new(s: &SizerSettings) -> Self {
        let cfg = ThreadPoolConfig {
            max_threads: s.max_threads,
            delay: s.period.max(std::time::Duration::from_millis(1)),
            threshold: s.queue_threshold,
            ticks_per_add: 1,
            ..ThreadPoolConfig::default()
        };
        SedaHeuristicSizer {
            inner: ThreadPoolController::new(cfg),
            max: s.max_threads,
            report: SizerReport::default(),
        }
    }
}

/// The registry's builder.
pub(crate) fn build(s: &SizerSettings) -> Box<dyn Sizer> {
    Box::new(SedaHeuristicSizer::new(s))
}

impl Sizer for SedaHeuristicSizer {
    fn name(&self) -> &'static str {
        SEDA
    }

    fn update(&mut self, p: &SizerPeriod) -> usize {
        // The controller's first call only arms its clock.
        let obs = PoolObservation {
            queue_len: p.queue_len,
            threads: p.threads,
        };
        let add = self.inner.update(p.now, &obs).add_threads;
        let next = (p.threads + add).min(self.max);
        self.report = SizerReport::measured(p, next);
        next
    }

    fn report(&self) -> SizerReport {
        self.report
    }
}
