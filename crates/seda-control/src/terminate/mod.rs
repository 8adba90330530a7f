//! Termination thresholds (SERT06): the terminate lever.
//!
//! Admission decides at the door, before anyone knows how long a request will take. A
//! terminator decides later: an admitted request of a terminable type whose running time passes
//! the current threshold is cancelled, and what it held is released. These controllers only
//! choose the threshold; the runtime does the cancelling.
//!
//! - [`SertThreshold`]: SERT's adaptive threshold `LB + F(p)(UB - LB)` from the throughput loss.
//! - [`CongestionThreshold`]: ours, a feedback loop on the congestion (rejected, dropped and late
//!   replies, not its own cuts) that cuts the threshold to 30% per period while congested and
//!   raises it slowly.
//! - [`FixedThreshold`]: a statement timeout (the baseline).
//! - [`PercentileTimeout`]: a high percentile of recent running times (as Finagle's backup
//!   requests and Restate's adaptive timeouts pick theirs).

use std::time::Duration;

mod build;
mod congestion;
mod percentile;
mod sert;

pub use build::build;
pub use congestion::{CongestionConfig, CongestionThreshold};
pub use percentile::{PercentileConfig, PercentileTimeout};
pub use sert::{SertConfig, SertThreshold};

/// One control period's counts, as the runtime reports them to a terminator.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PeriodCounts {
    /// Requests that arrived at the service in the period.
    pub arrived: u64,
    /// Of those (or of earlier ones), requests not completed: rejected, dropped or terminated,
    /// and those completed later than the terminator's [`Terminator::late_after`].
    pub lost: u64,
    /// Of `lost`, the requests terminated (SERT's loss counts them; ours does not, since
    /// they are the threshold's own doing).
    pub terminated: u64,
}

/// What every threshold controller offers the runtime.
pub trait Terminator: Send {
    /// Its name in configuration files (`terminate = { kind = ... }`).
    fn name(&self) -> &'static str;
    /// Its state as named numbers, for snapshots (the loss `p`, a percentile...).
    fn state(&self) -> Vec<(&'static str, f64)> {
        Vec::new()
    }
    /// The running time past which a terminable request is cancelled now.
    fn threshold(&self) -> Duration;
    /// Feeds one control period's counts.
    fn on_period(&mut self, counts: PeriodCounts);
    /// Feeds the running time of a request that completed (not one that was terminated).
    fn on_complete(&mut self, _running: Duration) {}
    /// A completion whose response time passes this counts as lost in [`PeriodCounts`]: a
    /// reply after the service-level limit is throughput lost too (`None`: only requests not
    /// completed count).
    fn late_after(&self) -> Option<Duration> {
        None
    }
}

/// A fixed threshold: a statement timeout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FixedThreshold(pub Duration);

impl Terminator for FixedThreshold {
    fn name(&self) -> &'static str {
        "fixed"
    }
    fn threshold(&self) -> Duration {
        self.0
    }
    fn on_period(&mut self, _counts: PeriodCounts) {}
}
