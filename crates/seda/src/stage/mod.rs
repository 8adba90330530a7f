//! Stages: a handler behind an admission-controlled queue, run by a pool, a domain, or inline.

mod admission;
mod builder;
mod core;
mod terminate;

use std::any::Any;
use std::cell::Cell;
use std::sync::Arc;
use std::time::Instant;

pub(crate) use admission::admission_of;
pub use builder::{Stage, StageBuilder};
pub(crate) use core::{CoreParts, StageCore};
pub(crate) use terminate::Termination;
pub use terminate::TerminationSnapshot;

use crate::stats::StageSnapshot;

thread_local! {
    /// The id of the stage whose handler runs on this thread (0: none). Enqueues read it to count
    /// graph edges and to tell internal hand-offs from external arrivals during shutdown.
    static CURRENT_STAGE: Cell<usize> = const { Cell::new(0) };
}

pub(crate) fn current_stage() -> usize {
    CURRENT_STAGE.with(Cell::get)
}

pub(crate) fn set_current_stage(id: usize) -> usize {
    CURRENT_STAGE.with(|c| c.replace(id))
}

/// How a stage runs its handler.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Mode {
    Queued,
    Domain(String),
    Inline,
}

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
    fn histograms(&self) -> crate::stats::StageHistograms;
    fn edge_counts(&self) -> Vec<(usize, u64)>;
    fn mode_name(&self) -> &'static str;
    /// Drops whatever is still queued (shutdown gave up waiting); returns how many.
    fn abandon(&self) -> usize;
    fn into_any(self: Arc<Self>) -> Arc<dyn Any + Send + Sync>;
    /// The Rust type of the stage's events, for an error that names it.
    fn event_type(&self) -> &'static str;
}
