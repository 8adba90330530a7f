//! The result vocabulary: what one run measured, under the names `seda sim --json` and the
//! lab's `result.json` share, defined once for the simulator and the real system.
//!
//! - [`RunSummary`]: a run's headline figures (p90s, settle time, goodput, rejected share...).
//! - [`Series`]: a simulated run's figures per interval.
//! - [`settle_time`], [`settled`], [`within_target_share`]: the settling rule, on windows
//!   ([`Window`]) that each side measures its own way, with one tolerance
//!   ([`SETTLE_TOLERANCE`]).
//! - [`spike_table`]: the table a spike prints, in `seda sim spike` and in the lab.

mod run;
mod series;
mod settle;
mod table;

pub use run::{RunSummary, fraction, per_s};
pub use series::{Interval, Series};
pub use settle::{SETTLE_TOLERANCE, Window, settle_time, settled, within_target_share};
pub use table::spike_table;
