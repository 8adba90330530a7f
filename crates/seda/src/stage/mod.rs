//! Stages: a handler behind an admission-controlled queue, run by a pool, a domain, or inline.

mod admission;
mod builder;
mod core;
mod terminate;

use std::cell::Cell;

pub(crate) use admission::admission_of;
pub use builder::{Stage, StageBuilder};
pub(crate) use core::{CoreParts, StageCore};
pub(crate) use terminate::Termination;

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
