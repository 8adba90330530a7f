//! The .NET thread pool's hill climbing as a sizer: [`HillClimbing`] fed each period's
//! completions.

use super::{Sizer, SizerPeriod, SizerReport, SizerSettings};
use crate::selftune::HillClimbing;

/// The .NET thread pool's hill climbing: a search for the most completions per second.
pub const HILL_CLIMBING: &str = "hill_climbing";

/// Hill climbing and its last report.
#[derive(Debug, Clone)]
struct HillClimbingSizer {
    inner: HillClimbing,
    report: SizerReport,
}

/// The registry's builder.
pub(crate) fn build(s: &SizerSettings) -> Box<dyn Sizer> {
    Box::new(HillClimbingSizer {
        inner: HillClimbing::new(s.min_threads, s.max_threads, s.initial_threads),
        report: SizerReport::default(),
    })
}

impl Sizer for HillClimbingSizer {
    fn name(&self) -> &'static str {
        HILL_CLIMBING
    }

    fn update(&mut self, p: &SizerPeriod) -> usize {
        let next = self.inner.update(p.threads, p.secs, p.completions);
        self.report = SizerReport::measured(p, next);
        next
    }

    fn report(&self) -> SizerReport {
        self.report
    }
}
