//! The layers: [`SedaLayer`] (rejections are errors) and [`HttpSedaLayer`](crate::HttpSedaLayer)
//! (rejections are `503 Service Unavailable` responses).

use std::sync::Arc;
use std::time::Duration;

use seda_control::{AdmissionController, InvalidConfig, TunedConfig, TunedResponseTimeController};
use tower_layer::Layer;

use crate::ArrivalLag;
use crate::admission::{Admission, DEFAULT_TICK, QueueModel, StatsHandle};
use crate::classify::SingleClass;
use crate::service::Seda;
use crate::terminate::Termination;

/// Default `Retry-After` of a 503, in seconds.
pub const DEFAULT_RETRY_AFTER_S: u32 = 1;

/// Where [`SedaLayer::response_time`]'s trimming calls the requests in flight a standing
/// queue: they never fell to half the bound in a window (`TunedConfig::standing_share`). In
/// flight counts the requests being served, so "never all finished", the stages' rule, held
/// at 0.8 x capacity too, and the layer refused 6.4% of requests there (`tower-peers`).
pub const STANDING_SHARE: f64 = 0.5;

/// How far [`SedaLayer::response_time`]'s trimming takes the p90 down, in units of the
/// setpoint (`TunedConfig::trim_floor`): 0, as far as the requests in flight stand. A floor of
/// 0.75 ended `tower-peers`' refusals at 0.8 x capacity, but on `tower-spike`'s CPU-bound page
/// (where more requests in flight lengthen every reply) it held the p90 at 1.21 x the target
/// and goodput at 0.816 x capacity, against 0.53 x and 0.933 x without it (CI's pre-check of
/// 2026-12-06): a floor fits a service of fixed slots, not one that shares a CPU.
pub const TRIM_FLOOR: f64 = 0.0;

/// How far [`SedaLayer::response_time`]'s trimming may take the budget, as a share of the
/// target (`TunedConfig::budget_floor`). Trimming without it held the requests in flight at
/// `min_queue` (10) whatever the service serves at once: a service of 16 slots ran at 0.60 x
/// its capacity at 3 x load, where a fixed limit of 50 ran at 0.94 x (`tower-peers`, issue
/// 54). At 0.4 the bound is at least the requests the service completes in 0.4 x the target,
/// which covers its concurrency while its mean service time is under that.
pub const BUDGET_FLOOR: f64 = 0.4;

/// Puts an admission controller in front of a service; a rejected request fails with
/// [`Overloaded`](crate::Overloaded) without reaching the service.
///
/// Every service the layer makes (one per connection, in hyper and axum) shares the one
/// controller, so it sees all the traffic.
#[derive(Clone)]
pub struct SedaLayer<C = SingleClass> {
    pub(crate) admission: Arc<Admission>,
    pub(crate) classify: C,
}

impl SedaLayer<SingleClass> {
    /// A layer driven by `controller`, every request in class 0, ticking the controller every
    /// [`DEFAULT_TICK`].
    pub fn new(controller: impl AdmissionController + 'static) -> Self {
        Self::from_box(Box::new(controller), DEFAULT_TICK, QueueModel::AtAdmission)
    }

    /// Our controller aimed at a p90 `target`: `response_time_tuned` with standing-queue
    /// trimming (`response_time_tuned_trim`), bounding the requests in flight at departure
    /// rate x allowed wait (Little's law, [`QueueModel::InFlight`]). The allowed wait shrinks
    /// while the requests in flight never all finish and the p90 is under 0.8 x `target`,
    /// and shrinks past it whatever happens (the layer's `TRIM_FLOOR` says why trimming has
    /// no floor).
    ///
    /// Why trimming: requests in flight in a service share its cores and its upstream's
    /// queue, so a standing in-flight queue adds response time and no throughput (CoDel's
    /// observation). Steering the p90 up to 0.8 x target instead filled the budget with such
    /// a queue; in the lab's quick runs trimming raised goodput within the target from 0.80-0.82
    /// to 0.94-0.97 x capacity (`tower-spike`, tying the best fixed `ConcurrencyLimit`) and from
    /// 1,300 to 1,560-1,840 pages/s (`proxy-spike`), with the p90 at 0.27-0.31 s, not 0.5 s.
    /// The cost is more rejections (73% of the spike instead of 67%), some of which would
    /// have met the target; [`SedaLayer::new`] takes the untrimmed controller if that matters.
    ///
    /// # Errors
    /// `target` is zero.
    pub fn response_time(target: Duration) -> Result<Self, InvalidConfig> {
        let config = TunedConfig {
            drop_queued: None,
            trim: true,
            standing_share: STANDING_SHARE,
            trim_floor: TRIM_FLOOR,
            budget_floor: BUDGET_FLOOR,
            ..TunedConfig::new(target)
        };
        let controller = TunedResponseTimeController::new(config)?;
        Ok(Self::from_box(
            Box::new(controller),
            DEFAULT_TICK,
            QueueModel::InFlight,
        ))
    }

    /// A layer driven by an already boxed controller (one built by name from the catalogue),
    /// ticking it every `tick`, with its queue where `queue` says.
    pub fn from_box(
        controller: Box<dyn AdmissionController>,
        tick: Duration,
        queue: QueueModel,
    ) -> Self {
        SedaLayer {
            admission: Arc::new(Admission::new(controller, tick, queue)),
            classify: SingleClass,
        }
    }
}

impl<C> SedaLayer<C> {
    /// Terminates admitted requests that run past `terminator`'s threshold: their inner
    /// future is dropped (which releases what it held: a pooled connection goes back, an
    /// uncommitted transaction rolls back, a lock guard unlocks) and they are answered as
    /// terminated, `503` with `x-seda-reject: terminated` under [`http`](Self::http), a
    /// [`Terminated`](crate::Terminated) error otherwise. Off unless asked: a layer without a
    /// terminator never cuts a request.
    ///
    /// The terminator is one of `seda_control::terminate`'s (SERT06's adaptive threshold,
    /// a fixed statement timeout, a percentile timeout; `seda_control::terminate::build`
    /// makes one by name). It learns as a terminable stage's does: each completion's running
    /// time, and every [`TERMINATION_PERIOD`](crate::TERMINATION_PERIOD) the arrivals and the
    /// loss (rejected, dropped, terminated, or answered later than its `late_after`). A
    /// running request re-reads the threshold at least every 100 ms, so a falling threshold
    /// reaches requests already running.
    ///
    /// Terminating needs a tokio runtime with its timer (axum's and tonic's servers run in
    /// one); a request polled outside one is never terminated.
    ///
    /// # Errors
    /// The layer (or a clone of it, which shares its state) already has a terminator.
    pub fn terminate(
        self,
        terminator: impl seda_control::terminate::Terminator + 'static,
    ) -> Result<Self, InvalidConfig> {
        self.terminate_box(Box::new(terminator))
    }

    /// [`terminate`](Self::terminate) with an already boxed terminator (one built by name).
    ///
    /// # Errors
    /// The layer already has a terminator.
    pub fn terminate_box(
        self,
        terminator: Box<dyn seda_control::terminate::Terminator>,
    ) -> Result<Self, InvalidConfig> {
        let kind = terminator.name();
        match self.admission.termination.set(Termination::new(terminator)) {
            Ok(()) => Ok(self),
            Err(_) => Err(InvalidConfig::new(
                "terminate",
                format!("the layer already terminates; `{kind}` would be a second terminator"),
            )),
        }
    }

    /// Derives each request's class with `classify` (a closure `Fn(&Request) -> u8` or a
    /// [`Classify`](crate::Classify) implementation).
    pub fn classify<C2>(self, classify: C2) -> SedaLayer<C2> {
        SedaLayer {
            admission: self.admission,
            classify,
        }
    }

    /// A handle to read the layer's counters and controller state.
    pub fn stats(&self) -> StatsHandle {
        StatsHandle(Arc::clone(&self.admission))
    }

    /// The delay requests meet before the layer sees them, for the server to set when it can
    /// measure it (see [`ArrivalLag`]); the layer adds it to every response time.
    pub fn arrival_lag(&self) -> ArrivalLag {
        self.admission.lag.clone()
    }
}

impl<S, C: Clone> Layer<S> for SedaLayer<C> {
    type Service = Seda<S, C>;

    fn layer(&self, inner: S) -> Self::Service {
        Seda {
            inner,
            admission: Arc::clone(&self.admission),
            classify: self.classify.clone(),
        }
    }
}

impl<C> std::fmt::Debug for SedaLayer<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SedaLayer")
            .field("stats", &self.stats())
            .finish()
    }
}
