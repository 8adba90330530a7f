//! The state one layer shares among all the services it made: the controller, the clock it is
//! fed, and counters for metrics.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use parking_lot::Mutex;
use seda_control::{AdmissionController, RejectReason};

use crate::ArrivalLag;
use crate::budget::{DeadlineState, DeadlineStats};
use crate::clock::Epoch;
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
    /// The controller and the counters, under one lock: each request takes it once at
    /// admission and once at completion, and counts there, not in atomics of its own.
    locked: Mutex<Locked>,
    name: &'static str,
    queue: QueueModel,
    epoch: Epoch,
    tick_every_ns: u64,
    last_tick_ns: AtomicU64,
    /// Added to each response time the controller learns.
    pub(crate) lag: ArrivalLag,
    /// Set once, by [`SedaLayer::terminate`](crate::SedaLayer::terminate); none by default.
    pub(crate) termination: OnceLock<Termination>,
    /// Set once, by [`HttpSedaLayer::deadlines`](crate::HttpSedaLayer::deadlines).
    pub(crate) deadlines: OnceLock<DeadlineState>,
}

struct Locked {
    controller: Box<dyn AdmissionController>,
    counts: Counts,
}

/// What the layer has done so far (cumulative).
#[derive(Debug, Clone, Copy, Default)]
struct Counts {
    admitted: u64,
    rejected: [u64; RejectReason::ALL.len()],
    completed: u64,
    dropped: u64,
}

impl Counts {
    fn rejected_total(&self) -> u64 {
        self.rejected.iter().sum()
    }
}

impl Admission {
    pub(crate) fn new(
        controller: Box<dyn AdmissionController>,
        tick_every: Duration,
        queue: QueueModel,
    ) -> Self {
        Admission {
            name: controller.name(),
            locked: Mutex::new(Locked {
                controller,
                counts: Counts::default(),
            }),
            queue,
            epoch: Epoch::now(),
            tick_every_ns: tick_every.as_nanos().clamp(1, u64::MAX as u128) as u64,
            last_tick_ns: AtomicU64::new(0),
            lag: ArrivalLag::default(),
            termination: OnceLock::new(),
            deadlines: OnceLock::new(),
        }
    }

    /// The time since the layer was made, on the layer's clock ([`crate::clock`]).
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
            let counts = {
                let mut l = self.locked.lock();
                l.controller.tick(now);
                l.counts
            };
            if let Some(t) = self.termination.get() {
                // Refused or cut for its deadline: an arrival lost, as a rejection is.
                let (refused, cut) = self.deadlines.get().map_or((0, 0), |d| d.refused_and_cut());
                let rejected = counts.rejected_total() + refused;
                let arrived = counts.admitted + rejected;
                let terminated = t.terminated.load(Ordering::Relaxed);
                let lost = rejected + counts.dropped + terminated + cut;
                t.maybe_period(now, arrived, lost, terminated);
            }
        }
    }

    /// Asks the controller to admit one request of `class`, arriving now. The ticket reports
    /// the request's outcome to the controller when it completes or is dropped.
    pub(crate) fn admit(self: &Arc<Self>, class: u8) -> Result<Ticket, RejectReason> {
        self.admit_at(self.now(), class)
    }

    /// [`admit`](Self::admit) for a request that arrived at `now` (the layer's clock), for a
    /// caller that has read the clock already.
    pub(crate) fn admit_at(
        self: &Arc<Self>,
        now: Duration,
        class: u8,
    ) -> Result<Ticket, RejectReason> {
        self.maybe_tick(now);
        let mut l = self.locked.lock();
        let Locked { controller, counts } = &mut *l;
        let c = controller.as_mut();
        let verdict = c.admit(now, class).and_then(|()| {
            if self.queue == QueueModel::AtAdmission && c.on_dequeue(now, Duration::ZERO) {
                c.on_drop(now, class);
                Err(RejectReason::Expired)
            } else {
                Ok(())
            }
        });
        match verdict {
            Ok(()) => {
                counts.admitted += 1;
                drop(l);
                Ok(Ticket {
                    admission: Arc::clone(self),
                    class,
                    start: now,
                    done: false,
                })
            }
            Err(reason) => {
                counts.rejected[reason.index()] += 1;
                Err(reason)
            }
        }
    }

    /// A finished request: in [`QueueModel::InFlight`] it leaves the controller's queue now (a
    /// drop verdict is moot: it has finished), then `report` tells the controller how it
    /// ended and counts it, under the same lock.
    fn finish(
        &self,
        now: Duration,
        waited: Duration,
        report: impl FnOnce(&mut dyn AdmissionController, &mut Counts),
    ) {
        let mut l = self.locked.lock();
        let Locked { controller, counts } = &mut *l;
        if self.queue == QueueModel::InFlight {
            let _ = controller.on_dequeue(now, waited);
        }
        report(controller.as_mut(), counts);
    }

    pub(crate) fn stats(&self) -> LayerStats {
        let (counts, state) = {
            let l = self.locked.lock();
            (l.counts, l.controller.state())
        };
        LayerStats {
            controller: self.name,
            admitted: counts.admitted,
            rejected: RejectReason::ALL
                .iter()
                .map(|r| (*r, counts.rejected[r.index()]))
                .filter(|(_, n)| *n > 0)
                .collect(),
            completed: counts.completed,
            dropped: counts.dropped,
            terminated: self
                .termination
                .get()
                .map_or(0, |t| t.terminated.load(Ordering::Relaxed)),
            state,
            termination: self.termination.get().map(Termination::stats),
            deadline: self.deadlines.get().map(|d| d.stats(self.now())),
        }
    }
}

/// One admitted request. Exactly one of `complete`, `terminate` or drop reports it to the
/// controller: a response is a latency sample; a termination, an error, or a future dropped
/// before it finished (the client went away, a timeout fired), is only a congestion signal.
pub struct Ticket {
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
        a.finish(now, took, |c, counts| {
            c.on_complete(now, class, response, took);
            counts.completed += 1;
        });
        if let Some(t) = a.termination.get() {
            t.on_complete(took, response);
        }
        if let Some(d) = a.deadlines.get() {
            d.recent.record(now, response);
        }
        self.done = true;
    }

    /// The request ran past the termination threshold and its future was dropped: lost, a
    /// congestion signal to the controller, counted as terminated (not dropped).
    pub(crate) fn terminate(mut self) {
        let a = &self.admission;
        let now = a.now();
        let class = self.class;
        a.finish(now, now.saturating_sub(self.start), |c, _| {
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
        a.finish(now, now.saturating_sub(self.start), |c, _| {
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
            a.finish(now, now.saturating_sub(self.start), |c, counts| {
                c.on_drop(now, class);
                counts.dropped += 1;
            });
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
        f.debug_tuple("StatsHandle").field(&self.0.name).finish()
    }
}
