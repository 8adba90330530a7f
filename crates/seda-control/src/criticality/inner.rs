//! What the criticality gate reads from the controller it wraps: the bound it enforces on
//! requests in flight and how many count against it now.

use crate::peers::{ConcurrencyLimiter, LimitAlgorithm};
use crate::{AdmissionController, Time, TunedResponseTimeController};

/// An admission controller that bounds the requests in flight (or queued), so that the
/// [`CriticalityGate`](super::CriticalityGate) around it can read its pressure as the share of
/// that bound in use.
///
/// Implemented by our response-time controller (its queue limit: departure rate x waiting
/// budget; under `seda-tower`'s `QueueModel::InFlight` the queue is the requests in flight) and
/// by the peers' [`ConcurrencyLimiter`] (Vegas, Gradient2, AIMD, Envoy's gradient).
pub trait InFlightBound: AdmissionController {
    /// The bound in force at `now` (may roll the controller's periods first).
    fn bound(&mut self, now: Time) -> f64;
    /// The admitted requests that count against the bound now.
    fn in_flight(&self) -> f64;
    /// A request the gate turned away before asking this controller: a controller whose own
    /// loop learns from refusals counts it as its own.
    fn note_refused(&mut self) {}
}

impl InFlightBound for TunedResponseTimeController {
    fn bound(&mut self, now: Time) -> f64 {
        // Rolls the controller's periods, so the limit is current (as session-aware does).
        self.tick(now);
        self.queue_limit()
    }

    fn in_flight(&self) -> f64 {
        self.queued() as f64
    }

    fn note_refused(&mut self) {
        self.note_rejection();
    }
}

impl<L: LimitAlgorithm> InFlightBound for ConcurrencyLimiter<L> {
    fn bound(&mut self, now: Time) -> f64 {
        self.tick(now);
        // The limiter admits while in flight < floor(limit), at least 1.
        self.algorithm().limit().floor().max(1.0)
    }

    fn in_flight(&self) -> f64 {
        self.inflight() as f64
    }
}
