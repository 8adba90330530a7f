//! The fixed pool: the initial thread count, never changed (the baseline a sweep of sizes
//! gives).

use super::{Sizer, SizerPeriod, SizerReport, SizerSettings};

/// The initial thread count, never changed: the baseline a sweep of sizes gives.
pub const FIXED: &str = "fixed";

/// A pool of constant size.
#[derive(Debug, Clone)]
pub struct FixedSizer {
    threads: usize,
    report: SizerReport,
}

impl FixedSizer {
    /// The initial size, within the bounds.
    pub fn new(s: &SizerSettings) -> Self {
        FixedSizer {
            threads: s.initial_threads.clamp(s.min_threads, s.max_threads),
            report: SizerReport::default(),
        }
    }
}

/// The registry's builder.
pub(crate) fn build(s: &SizerSettings) -> Box<dyn Sizer> {
    Box::new(FixedSizer::new(s))
}

impl Sizer for FixedSizer {
    fn name(&self) -> &'static str {
        FIXED
    }

    fn initial_threads(&self, _initial: usize) -> usize {
        self.threads
    }

    fn update(&mut self, p: &SizerPeriod) -> usize {
        self.report = SizerReport::measured(p, self.threads);
        self.threads
    }

    fn report(&self) -> SizerReport {
        self.report
    }
}
