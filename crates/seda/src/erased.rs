//! A stage with its event type erased: what pools and the runtime hold (`stage/core.rs`
//! implements it for each event type), kept apart from `stage/` so that the pool, which the
//! stage wakes, need not import the stage.

use std::any::Any;
use std::sync::Arc;
use std::time::Instant;

use crate::stats::{StageHistograms, StageSnapshot};

/// A stage with its event type erased, as pools and the runtime see it.
pub(crate) trait StageDyn: Send + Sync {
    fn name(&self) -> &str;
    /// Dequeues and handles one batch; false if there was nothing to do.
    fn run_batch(&self) -> bool;
    fn has_ready(&self) -> bool;
    fn queue_len(&self) -> usize;
    /// Runs the stage's controllers (batching, admission ticks).
    fn control(&self, now: Instant);
    /// Events admitted so far (monotonic).
    fn admitted(&self) -> u64;
    /// Admitted events handled, failed or dropped so far (monotonic).
    fn settled(&self) -> u64;
    /// Events handled so far (monotonic): what pool sizers count as throughput.
    fn completed(&self) -> u64;
    /// Nanoseconds its handlers have run, summed over threads (monotonic).
    fn busy_ns(&self) -> u64;
    fn roll_stats(&self, now: Instant);
    fn snapshot(&self) -> StageSnapshot;
    fn histograms(&self) -> StageHistograms;
    fn edge_counts(&self) -> Vec<(usize, u64)>;
    fn mode_name(&self) -> &'static str;
    /// Drops whatever is still queued (shutdown gave up waiting); returns how many.
    fn abandon(&self) -> usize;
    fn into_any(self: Arc<Self>) -> Arc<dyn Any + Send + Sync>;
    /// The Rust type of the stage's events, for an error that names it.
    fn event_type(&self) -> &'static str;
}
