//! The state one layer shares among all the services it made: the controller, the clock it is
//! fed, and counters for metrics.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use seda_control::{AdmissionController, RejectReason, SharedController};

use crate::ArrivalLag;
use crate::budget::{DeadlineState, DeadlineStats};
use crate::terminate::{Termination, TerminationStats};

/// How often the controller's periodic `tick` runs (the runtime's default control tick).
pub const DEFAULT_TICK: Duration = Duration::from_millis(100);

/// Where the controller's queue is, for controllers that bound one (see [`QueueModel`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum QueueModel {
    /// No queue: a request is dequeued the moment it is admitted (dequeue-time droppers such
    /// as CoDel see zero queueing time). For rate and concurrency-limit controllers.
    #[default]
    AtAdmission,
    /// The requests in flight in the inner service are the controller's queue: a request is
    /// dequeued when its response (or failure) arrives. For controllers that bound a queue by
    /// Little's law (`response_time_tuned`): the bound becomes an in-flight limit of
    /// departure rate x allowed wait, aimed at the response-time target. Their dequeue-time
    /// dropping must be off (a finished request cannot be dropped).
    InFlight,
}

/// The shared admission state.
pub(crate) struct Admission {
    controller: SharedController,
    queue: QueueModel,
    epoch: Instant,
    tick_every_ns: u64,
    last_tick_ns: AtomicU64,
    admitted: AtomicU64,
    rejected: [AtomicU64; RejectReason::ALL.len()],
    completed: AtomicU64,
    dropped: AtomicU64,
    /// Added to each response time the controller learns.
    pub(crate) lag: ArrivalLag,
    /// Set once, by [`SedaLayer::terminate`](crate::SedaLayer::terminate); none by default.
    pub(crate) termination: OnceLock<Termination>,
    /// Set once, by [`HttpSedaLayer::deadlines`](crate::HttpSedaLayer::deadlines).
    pub(crate) deadlines: OnceLock<DeadlineState>,
}

impl Admission {
    pub(crate) fn new(
        controller: Box<dyn AdmissionController>,
        tick_every: Duration,
        queue: QueueModel,
    ) -> Self {
        Admission {
            controller: SharedController::new(controller),
            queue,
            epoch: Instant::now(),
            tick_every_ns: tick_every.as_nanos().clamp(1, u64::MAX as u128) as u64,
            last_tick_ns: AtomicU64::new(0),
            admitted: AtomicU64::new(0),
            rejected: Default::default(),
            completed: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            lag: ArrivalLag::default(),
            termination: OnceLock::new(),
            deadlines: OnceLock::new(),
        }
    }

    pub(crate) fn now(&self) -> Duration {
        self.epoch.elapsed()
    }

    /// A layer owns no thread, so the controller's periodic tick runs on the first request
    /// after each tick period (windows close on traffic; with no traffic nothing needs them).
    fn maybe_tick(&self, now: Duration) {
        let now_ns = now.as_nanos().min(u64::MAX as u128) as u64;
        let last = self.last_tick_ns.load(Ordering::Relaxed);
        if now_ns.saturating_sub(last) >= self.tick_every_ns
            && self
                .last_tick_ns
                .compare_exchange(last, now_ns, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            self.controller.with(|c| c.tick(now));
            if let Some(t) = self.termination.get() {
                // Refused or cut for its deadline: an arrival lost, as a rejection is.
                let (refused, cut) = self.deadlines.get().map_or((0, 0), |d| d.refused_and_cut());
                let rejected = self.rejected_total() + refused;
                let arrived = self.admitted.load(Ordering::Relaxed) + rejected;
                let terminated = t.terminated.load(Ordering::Relaxed);
                let lost = rejected + self.dropped.load(Ordering::Relaxed) + terminated + cut;
                t.maybe_period(now, arrived, lost, terminated);
            }
        }
    }

    fn rejected_total(&self) -> u64 {
        self.rejected
            .iter()
            .map(|n| n.load(Ordering::Relaxed))
            .sum()
    }

    /// Asks the controller to admit one request of `class`. The ticket reports the request's
    /// outcome to the controller when it completes or is dropped.
    pub(crate) fn admit(self: &Arc<Self>, class: u8) -> Result<Ticket, RejectReason> {
        let now = self.now();
        self.maybe_tick(now);
        let verdict = self.controller.with(|c| {
            c.admit(now, class).and_then(|()| {
                if self.queue == QueueModel::AtAdmission && c.on_dequeue(now, Duration::ZERO) {
                    c.on_drop(now, class);
                    Err(RejectReason::Expired)
                } else {
                    Ok(())
                }
            })
        });
        match verdict {
            Ok(()) => {
                self.admitted.fetch_add(1, Ordering::Relaxed);
                Ok(Ticket {
                    admission: Arc::clone(self),
                    class,
                    start: now,
                    done: false,
                })
            }
            Err(reason) => {
                self.rejected[reason.index()].fetch_add(1, Ordering::Relaxed);
                Err(reason)
            }
        }
    }

    /// A finished request: in [`QueueModel::InFlight`] it leaves the controller's queue now (a
    /// drop verdict is moot: it has finished), then `report` tells the controller how it
    /// ended, under the same lock.
    fn finish(
        &self,
        now: Duration,
        waited: Duration,
        report: impl FnOnce(&mut dyn AdmissionController),
    ) {
        self.controller.with(|c| {
            if self.queue == QueueModel::InFlight {
                let _ = c.on_dequeue(now, waited);
            }
            report(c);
        });
    }

    pub(crate) fn stats(&self) -> LayerStats {
        LayerStats {
            controller: self.controller.name(),
            admitted: self.admitted.load(Ordering::Relaxed),
            rejected: RejectReason::ALL
                .iter()
                .map(|r| (*r, self.rejected[r.index()].load(Ordering::Relaxed)))
                .filter(|(_, n)| *n > 0)
                .collect(),
            completed: self.completed.load(Ordering::Relaxed),
            dropped: self.dropped.load(Ordering::Relaxed),
            terminated: self
                .termination
                .get()
                .map_or(0, |t| t.terminated.load(Ordering::Relaxed)),
            state: self.controller.state(),
            termination: self.termination.get().map(Termination::stats),
            deadline: self.deadlines.get().map(|d| d.stats(self.now())),
        }
    }
}

/// One admitted request. Exactly one of `complete`, `terminate` or drop reports it to the
/// controller: a response is a latency sample; a termination, an error, or a future dropped
/// before it finished (the client went away, a timeout fired), is only a congestion signal.
pub(crate) struct Ticket {
    admission: Arc<Admission>,
    class: u8,
    start: Duration,
    done: bool,
}

impl Ticket {
    pub(crate) fn complete(mut self) {
        let a = &self.admission;
        let now = a.now();
        let took = now.saturating_sub(self.start);
        let response = took + a.lag.get();
        let class = self.class;
        a.finish(now, took, |c| c.on_complete(now, class, response, took));
        if let Some(t) = a.termination.get() {
            t.on_complete(took, response);
        }
        if let Some(d) = a.deadlines.get() {
            d.recent.record(now, response);
        }
        a.completed.fetch_add(1, Ordering::Relaxed);
        self.done = true;
    }

    /// The request ran past the termination threshold and its future was dropped: lost, a
    /// congestion signal to the controller, counted as terminated (not dropped).
    pub(crate) fn terminate(mut self) {
        let a = &self.admission;
        let now = a.now();
        let class = self.class;
        a.finish(now, now.saturating_sub(self.start), |c| {
            c.on_drop(now, class)
        });
        if let Some(t) = a.termination.get() {
            t.terminated.fetch_add(1, Ordering::Relaxed);
        }
        self.done = true;
    }

    /// The request's deadline passed while it ran and its future was dropped: lost, a
    /// congestion signal to the controller, counted as cut (not dropped).
    pub(crate) fn cut(mut self) {
        let a = &self.admission;
        let now = a.now();
        let class = self.class;
        a.finish(now, now.saturating_sub(self.start), |c| {
            c.on_drop(now, class)
        });
        if let Some(d) = a.deadlines.get() {
            d.on_cut();
        }
        self.done = true;
    }

    /// The layer's terminator, if it has one.
    pub(crate) fn termination(&self) -> Option<&Termination> {
        self.admission.termination.get()
    }

    /// How long the request has run in the inner service.
    pub(crate) fn running(&self) -> Duration {
        self.admission.now().saturating_sub(self.start)
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        if !self.done {
            let a = &self.admission;
            let now = a.now();
            let class = self.class;
            a.finish(now, now.saturating_sub(self.start), |c| {
                c.on_drop(now, class)
            });
            a.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// What a layer has done so far, and its controller's state (for metrics and dashboards).
#[derive(Debug, Clone, PartialEq)]
pub struct LayerStats {
    /// The controller's name.
    pub controller: &'static str,
    /// Requests admitted.
    pub admitted: u64,
    /// Requests rejected, by reason (reasons with none are left out).
    pub rejected: Vec<(RejectReason, u64)>,
    /// Admitted requests that produced a response.
    pub completed: u64,
    /// Admitted requests that failed or whose future was dropped before it finished (not
    /// counting those the layer terminated).
    pub dropped: u64,
    /// Admitted requests the layer terminated: they ran past the termination threshold, their
    /// future was dropped and they were answered as terminated.
    pub terminated: u64,
    /// The controller's state as named numbers (rate, limit...).
    pub state: Vec<(&'static str, f64)>,
    /// The terminator's state, when the layer terminates.
    pub termination: Option<TerminationStats>,
    /// What the layer did with deadlines, when it reads them.
    pub deadline: Option<DeadlineStats>,
}

/// A handle on a layer's state, to read [`LayerStats`] from anywhere (a metrics endpoint).
#[derive(Clone)]
pub struct StatsHandle(pub(crate) Arc<Admission>);

impl StatsHandle {
    /// A snapshot of the layer's counters and its controller's state.
    pub fn stats(&self) -> LayerStats {
        self.0.stats()
    }
}

impl fmt::Debug for StatsHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("StatsHandle")
            .field(&self.0.controller.name())
            .finish()
    }
}
