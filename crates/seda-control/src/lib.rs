//! Controllers for staged event-driven services, written as pure state machines.
//!
//! A controller takes an observation and the current time, and returns an adjustment. It owns
//! no threads, never sleeps and never reads the clock: the caller passes time in as a [`Time`]
//! (a [`Duration`](std::time::Duration) since an arbitrary epoch). That is what lets the same
//! code run inside the `seda` runtime, inside the `seda-sim` simulator in virtual time, and in
//! deterministic unit tests.
//!
//! # A tour
//!
//! ```
//! use std::time::Duration;
//! use seda_control::{Controller, TokenBucket, ThreadPoolController, PoolObservation};
//!
//! // A token bucket admitting 100 events/s with a burst of 10.
//! let mut bucket = TokenBucket::new(100.0, 10.0);
//! let t0 = Duration::ZERO;
//! assert!(bucket.try_take(t0, 10.0));
//! assert!(!bucket.try_take(t0, 1.0)); // empty until time passes
//! assert!(bucket.try_take(t0 + Duration::from_millis(10), 1.0));
//!
//! // SEDA's thread-pool controller with Sandstorm's defaults.
//! let mut pool = ThreadPoolController::default();
//! let adj = pool.update(t0, &PoolObservation { queue_len: 0, threads: 1 });
//! assert_eq!(adj.add_threads, 0);
//! ```
//!
//! # Main types
//!
//! - [`Controller`]: the shape every periodic controller has.
//! - [`AdmissionController`]: the object-safe interface a stage uses for admission on enqueue,
//!   with callbacks for dequeue, completion and drops (implemented by the response-time, class,
//!   peer and window controllers).
//! - [`QueueThreshold`], [`TokenBucket`]: the simple admission predicates of Sandstorm.
//! - [`ThreadPoolController`]: SEDA's pool sizing (add a thread when the queue stays long,
//!   retire idle workers).
//! - [`BatchController`]: SEDA's AggThrottle, a throughput-driven search for the batch size.
//! - [`AimdWindow`]: SSM's client-side window of outstanding requests.
//! - [`ResponseTimeController`] (WC03 Section 3.2), [`MulticlassController`] (WC03 Section 3.3),
//!   [`Degradation`] (WC03 Section 3.4), [`SelectiveDropper`] (FAIR07 Section 4.2.3) and our
//!   [`TunedResponseTimeController`].
//! - [`peers`]: Netflix's Vegas, Gradient2 and AIMD limits, Envoy's gradient controller and
//!   folly's CoDel, behind the same [`AdmissionController`] interface.
//! - [`catalogue`]: every admission controller a configuration can name, each with its
//!   description, source, parameters and how it is aimed at a response-time target;
//!   [`build_admission`] builds one from a name and numeric parameters (the runtime's TOML).
//! - [`Knob`]: a controller's output (the degradation quality) that a handler reads through a
//!   typed handle bound when its stage is built.
//! - [`SessionAwareController`] (SBAC02): established sessions before new ones, over our
//!   tuned controller; the class of a request says which (0: no session).
//! - [`criticality`]: GSRE's four criticality levels, CINNAMON's rotating cohorts, and
//!   [`CriticalityGate`](criticality::CriticalityGate), which cuts the lowest level first,
//!   cohort by cohort, in front of a controller that bounds the requests in flight.
//! - [`dagor`]: WeChat's DAGOR (DAGOR18), the peer of the `tiers` comparison: queueing-time
//!   detection and an admission level over business x user priorities, told to callers.
//! - [`SharedController`]: one of them shared by several stages (WC03's single-stage admission
//!   control: one controller filters every request, whatever stage it is headed for).
//!
//! # Where each controller lives
//!
//! ```text
//! rate/       response_time/ (WC03 Section 3.2 and our tuned variant), multiclass/ (WC03 Section
//!             3.3), degradation/ (WC03 Section 3.4), session/ (SBAC02), the token bucket
//! peers/      vegas, gradient2, aimd (Netflix), envoy (Envoy's gradient), codel (folly)
//! drop/       dropper (FAIR07's selective dropping), threshold (Sandstorm's queue threshold)
//! pool/       thread_pool (SEDA's pool sizing), batching (AggThrottle)
//! client/     aimd_window (SSM's client-side window)
//! criticality/ levels (GSRE), cohorts (CINNAMON) and the gate that cuts the lowest first
//! dagor/      DAGOR's compound priorities and its per-service agent
//! catalogue/  the list of admission controllers by name, and the parameter reader
//! ```
//!
//! A new admission controller is one module in the folder of its role (its config type with a
//! `read` from parameters, its controller, its `Entry`) and one line in the catalogue's list.
//!
//! # Overload signals
//!
//! Admission controllers see rejected and expired events only as congestion signals
//! ([`AdmissionController::on_drop`]); they are never response-time samples.

#![warn(missing_docs)]

mod admission;
mod agent;
pub mod catalogue;
mod client;
pub mod clock;
pub mod criticality;
pub mod dagor;
pub mod drop;
mod entry;
mod error;
mod knob;
pub mod peers;
mod pool;
mod rate;
pub mod refusal;
mod retry_after;
pub mod selftune;
mod shared;
pub mod sizer;
pub mod terminate;

pub use admission::{AdmissionController, RejectReason};
pub use agent::{AgentPolicy, AgentSample};
pub use catalogue::build_admission;
pub use client::{
    AdaptiveThrottle, AimdWindow, AimdWindowConfig, RetryBudget, RetryBudgetConfig, SeededThrottle,
    ThrottleConfig,
};
pub use drop::QueueThreshold;
pub use drop::dropper::{self, DEFAULT_DROP_THRESHOLD, SelectiveDropper};
pub use error::{CatalogueError, InvalidConfig};
pub use knob::{Knob, KnobCell, KnobError, KnobKind, KnobSlot, Quality};
pub use pool::{
    BATCH_ADJUST_DELAY, BATCH_FACTOR, BatchConfig, BatchController, BatchObservation, BatchState,
    POOL_CONTROLLER_DELAY_TICKS, PoolAdjustment, PoolObservation, ThreadPoolConfig,
    ThreadPoolController,
};
pub use rate::TokenBucket;
pub use rate::degradation::{self, Degradation, DegradationConfig, DegradingAdmission};
pub use rate::multiclass::{self, MulticlassConfig, MulticlassController};
pub use rate::response_time::{
    self, ResponseTimeConfig, ResponseTimeController, TunedConfig, TunedResponseTimeController,
};
pub use rate::session::{self, SessionAwareConfig, SessionAwareController};
pub use refusal::{ConnectionRefusals, RefusalAction, RefusalPolicy, ServerRefusals};
pub use retry_after::{RetryAfter, RetryAfterConfig, SharedRetryAfter};
pub use shared::SharedController;

/// A point in time, as a duration since an arbitrary epoch chosen by the caller.
///
/// The runtime uses the time since it started; the simulator uses virtual time.
pub type Time = std::time::Duration;

/// A periodic controller: an observation and the time in, an adjustment out.
pub trait Controller {
    /// What the controller reads.
    type Observation;
    /// What the controller asks the caller to change.
    type Adjustment;
    /// Feeds one observation taken at `now`. Callers may call as often as they like; the
    /// controller keeps its own schedule and returns a neutral adjustment between decisions.
    fn update(&mut self, now: Time, observation: &Self::Observation) -> Self::Adjustment;
}
