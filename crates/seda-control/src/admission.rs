//! The interface shared by admission controllers (rate, class, concurrency-limit and delay
//! based), so a stage or the simulator can hold any of them behind one pointer.

use std::fmt;
use std::time::Duration;

use crate::Time;

/// Why an event was not admitted (or was dropped after admission).
///
/// New reasons may be added: match with a `_` arm. Stats and JSON name a reason by
/// [`as_str`](Self::as_str).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RejectReason {
    /// The stage's queue reached its threshold.
    QueueFull,
    /// A rate limit (token bucket) had no token.
    Rate,
    /// The event's class is being cut to protect a higher class.
    Class,
    /// A concurrency limit (Vegas, Gradient2, AIMD, Envoy's gradient) was reached.
    Limit,
    /// The event's deadline passed, its client gave up, or it waited in the queue too long.
    Expired,
    /// The stage is closed (shutting down).
    Closed,
    /// The caller waited as long as it allowed for room (a full queue, an empty token
    /// bucket or a reached concurrency limit; `seda::Sink::enqueue_timeout`) and found none.
    TimedOut,
}

impl RejectReason {
    /// Every reason, in a fixed order (used to index counters).
    pub const ALL: [RejectReason; 7] = [
        RejectReason::QueueFull,
        RejectReason::Rate,
        RejectReason::Class,
        RejectReason::Limit,
        RejectReason::Expired,
        RejectReason::Closed,
        RejectReason::TimedOut,
    ];

    /// A short snake_case name, used in stats and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            RejectReason::QueueFull => "queue_full",
            RejectReason::Rate => "rate",
            RejectReason::Class => "class",
            RejectReason::Limit => "limit",
            RejectReason::Expired => "expired",
            RejectReason::Closed => "closed",
            RejectReason::TimedOut => "timed_out",
        }
    }

    /// The position of this reason in [`RejectReason::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for RejectReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = match self {
            RejectReason::QueueFull => "queue full",
            RejectReason::Rate => "rate limit",
            RejectReason::Class => "class cut to protect a higher class",
            RejectReason::Limit => "concurrency limit",
            RejectReason::Expired => "expired",
            RejectReason::Closed => "stage closed",
            RejectReason::TimedOut => "timed out waiting for room",
        };
        f.write_str(text)
    }
}

/// An admission controller attached to one stage.
///
/// The stage calls [`admit`](Self::admit) on every enqueue attempt, [`on_dequeue`](Self::on_dequeue)
/// when a worker takes an admitted event out of the queue, then exactly one of
/// [`on_complete`](Self::on_complete) (handled) or [`on_drop`](Self::on_drop) (expired,
/// cancelled, failed) for it. [`tick`](Self::tick) is called periodically so window timeouts fire
/// without traffic. Rejected and dropped events are never latency samples: they reach the
/// controller only as congestion signals.
pub trait AdmissionController: Send {
    /// A short name for stats ("response_time", "vegas", ...).
    fn name(&self) -> &'static str;

    /// May one more event of `class` (0 is the lowest class) enter at `now`?
    fn admit(&mut self, now: Time, class: u8) -> Result<(), RejectReason>;

    /// Gives back an admission granted by [`admit`](Self::admit) that the stage did not use
    /// (an all-or-none enqueue failed later, or a prepared enqueue was aborted).
    fn undo_admit(&mut self, now: Time, class: u8);

    /// An admitted event left the queue after waiting `queued`. Returning `true` drops it as
    /// expired (CoDel and the selective dropper decide here); the stage then calls
    /// [`on_drop`](Self::on_drop) for it.
    fn on_dequeue(&mut self, now: Time, queued: Duration) -> bool {
        let _ = (now, queued);
        false
    }

    /// An admitted event was handled. `response` is the time since its request was born (the
    /// seeds' response time); `sojourn` the time since it was admitted to this stage.
    fn on_complete(&mut self, now: Time, class: u8, response: Duration, sojourn: Duration);

    /// An admitted event of `class` was handled, and `beyond_wait` of its response time was
    /// spent outside this stage's queue (before it, and serving it): called just before
    /// [`on_complete`](Self::on_complete) by a stage that measures it, as the runtime's do. A
    /// controller that drops at dequeue learns from it how long a wait leaves too little of
    /// the target for the rest of a response.
    fn on_served(&mut self, now: Time, class: u8, beyond_wait: Duration) {
        let _ = (now, class, beyond_wait);
    }

    /// An admitted event was dropped without being handled: a congestion signal.
    fn on_drop(&mut self, now: Time, class: u8) {
        let _ = (now, class);
    }

    /// Periodic call, so time-based windows close without traffic.
    fn tick(&mut self, now: Time) {
        let _ = now;
    }

    /// The controller's current state as named numbers (rate, limit, estimate...), for stats.
    fn state(&self) -> Vec<(&'static str, f64)>;

    /// The knob called `name` that the controller writes for the stage's handler (see
    /// [`Knob`](crate::Knob)); `None` if it has none.
    fn knob(&self, name: &str) -> Option<crate::KnobCell> {
        let _ = name;
        None
    }
}
