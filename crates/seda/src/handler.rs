//! Event handlers: what a stage does with a batch of events.

use std::cell::Cell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::Duration;

/// What a handler knows about where it runs.
pub struct Cx<'a> {
    stage: &'a str,
    termination_threshold: Option<Duration>,
    failed: Cell<u64>,
}

impl std::fmt::Debug for Cx<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cx")
            .field("stage", &self.stage)
            .finish_non_exhaustive()
    }
}

impl<'a> Cx<'a> {
    pub(crate) fn new(stage: &'a str, termination_threshold: Option<Duration>) -> Self {
        Cx {
            stage,
            termination_threshold,
            failed: Cell::new(0),
        }
    }

    /// The name of the stage running the handler.
    pub fn stage(&self) -> &str {
        self.stage
    }

    /// In a terminable stage, the running time past which its terminator cuts a request now
    /// (SERT06); `None` in a stage without a terminator. A handler that can tell a request's
    /// cost before doing the work may refuse one that would be cut anyway, instead of spending
    /// the threshold on it.
    pub fn termination_threshold(&self) -> Option<Duration> {
        self.termination_threshold
    }

    /// Records that one event of the batch failed (its handler panicked).
    pub(crate) fn note_failed(&self) {
        self.failed.set(self.failed.get() + 1);
    }

    pub(crate) fn failed(&self) -> u64 {
        self.failed.get()
    }
}

/// A stage's event handler.
///
/// It receives a batch of events (the stage's batch size, at least one) and may reorder, filter,
/// drop, or forward them to other stages' sinks. It may block: it runs on the stage's own worker
/// threads (or the caller's thread for an inline stage). It is shared by all workers of the
/// stage, so it is `Sync`; keep per-request state in the events.
///
/// Any `Fn(&mut Vec<E>, &Cx)` is a handler; [`each`] turns a per-event function into one.
///
/// # Panics
///
/// A panic is caught by the stage, counted, and fails only work in flight: with [`each`], the one
/// event being handled (dropping it, so a reply channel it holds reports an error to its
/// waiter); with a batch handler, the events of the batch it had not finished. The stage keeps
/// running.
pub trait Handler<E>: Send + Sync + 'static {
    /// Handles a batch. Events left in `batch` when it returns are dropped.
    fn handle(&self, batch: &mut Vec<E>, cx: &Cx<'_>);
}

impl<E, F> Handler<E> for F
where
    F: Fn(&mut Vec<E>, &Cx<'_>) + Send + Sync + 'static,
{
    fn handle(&self, batch: &mut Vec<E>, cx: &Cx<'_>) {
        self(batch, cx)
    }
}

/// A handler that calls `f` once per event, isolating panics per event.
pub fn each<E, F>(f: F) -> Each<F>
where
    F: Fn(E, &Cx<'_>) + Send + Sync + 'static,
{
    Each(f)
}

/// See [`each`].
#[derive(Debug, Clone)]
pub struct Each<F>(F);

impl<E, F> Handler<E> for Each<F>
where
    E: Send + 'static,
    F: Fn(E, &Cx<'_>) + Send + Sync + 'static,
{
    fn handle(&self, batch: &mut Vec<E>, cx: &Cx<'_>) {
        for event in batch.drain(..) {
            // The event moves into the closure: on a panic it is dropped during unwinding.
            if catch_unwind(AssertUnwindSafe(|| (self.0)(event, cx))).is_err() {
                cx.note_failed();
            }
        }
    }
}
