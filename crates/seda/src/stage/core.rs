//! The typed heart of a stage: admission, enqueue, and running batches.

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use seda_control::{BatchController, BatchObservation, Controller, RejectReason};

use super::admission::Admission;
use super::builder::DropHook;
use super::terminate::Termination;
use super::{Mode, current_stage, set_current_stage};
use crate::clock::{self, Stamp};
use crate::erased::StageDyn;
use crate::error::Rejected;
use crate::handler::{Cx, Handler};
use crate::pool::Pool;
use crate::queue::{Queue, Run};
use crate::shared::Shared;
use crate::stats::{ControllerSnapshot, StageSnapshot, StageStats, per_event};
use crate::{Event, Meta};

/// (born, class, enqueued) of an event that carries a Meta.
type Timing = Vec<(Instant, u8, Stamp)>;

/// The most spare batch vectors an inline stage keeps (about one per thread running it at once).
const SPARE_BATCHES: usize = 8;

/// How long a producer blocked in `enqueue_timeout` sleeps between looks at the queue.
const SPACE_POLL: Duration = Duration::from_millis(1);

thread_local! {
    /// Reused per thread: (born, class, enqueued) of the batch's events that carry a Meta. A
    /// stack of them: an inline stage's handler that enqueues into another inline stage
    /// processes that one inside its own batch, and a single slot would hand the inner batch
    /// an empty vector to grow (an allocation per event) and keep only one of the two.
    static TIMING: RefCell<Vec<Timing>> = const { RefCell::new(Vec::new()) };
    /// Reused per thread: enqueue-time runs of the batch being popped.
    static RUNS: Cell<Vec<Run>> = const { Cell::new(Vec::new()) };
    /// Reused per thread: a terminable batch's running-request keys, and which were cut.
    static RUNNING: Cell<(Vec<u64>, Vec<bool>)> = const { Cell::new((Vec::new(), Vec::new())) };
}

pub(crate) struct StageCore<E: Event> {
    pub(crate) name: String,
    pub(crate) id: usize,
    pub(crate) queue: Queue<E>,
    pub(crate) stats: StageStats,
    pub(crate) mode: Mode,
    pub(crate) pool: Option<Arc<Pool>>,
    handler: Box<dyn Handler<E>>,
    admission: Admission<E>,
    batch_max: AtomicUsize,
    batch_controller: Option<Mutex<BatchController>>,
    drop_after: Option<Duration>,
    on_drop: Option<DropHook<E>>,
    termination: Option<Termination>,
    shared: Arc<Shared>,
    space_waiters: AtomicUsize,
    space: Mutex<()>,
    space_cv: Condvar,
    /// Emptied batch vectors of an inline stage, for its next single event: a vector per
    /// event was an allocation per event and stage (two per static-file request).
    spare: Mutex<Vec<Vec<E>>>,
}

pub(crate) struct CoreParts<E: Event> {
    pub(crate) name: String,
    pub(crate) id: usize,
    pub(crate) queue: Queue<E>,
    pub(crate) mode: Mode,
    pub(crate) pool: Option<Arc<Pool>>,
    pub(crate) handler: Box<dyn Handler<E>>,
    pub(crate) admission: Admission<E>,
    pub(crate) batch_max: usize,
    pub(crate) batch_controller: Option<BatchController>,
    pub(crate) drop_after: Option<Duration>,
    pub(crate) on_drop: Option<DropHook<E>>,
    pub(crate) termination: Option<Termination>,
    pub(crate) shared: Arc<Shared>,
}

impl<E: Event> StageCore<E> {
    pub(crate) fn new(p: CoreParts<E>) -> Self {
        StageCore {
            name: p.name,
            id: p.id,
            queue: p.queue,
            stats: StageStats::new(Instant::now()),
            mode: p.mode,
            pool: p.pool,
            handler: p.handler,
            admission: p.admission,
            batch_max: AtomicUsize::new(p.batch_max),
            batch_controller: p.batch_controller.map(Mutex::new),
            drop_after: p.drop_after,
            on_drop: p.on_drop,
            termination: p.termination,
            shared: p.shared,
            space_waiters: AtomicUsize::new(0),
            space: Mutex::new(()),
            space_cv: Condvar::new(),
            spare: Mutex::new(Vec::new()),
        }
    }

    // ===== enqueue side =====

    /// Admission for `events`: closed, expired, predicates, rate, controller, then queue slots.
    pub(crate) fn admit_many(&self, events: &[E], source: usize) -> Result<(), RejectReason> {
        if self.shared.refuses(source) {
            return Err(RejectReason::Closed);
        }
        if events
            .iter()
            .any(|e| e.meta().is_some_and(Meta::is_expired_now))
        {
            return Err(RejectReason::Expired);
        }
        if self.admission.is_trivial() {
            return if self.queue.reserve(events.len()) {
                Ok(())
            } else {
                Err(RejectReason::QueueFull)
            };
        }
        let t = self.shared.time(Instant::now());
        self.admission.admit(events, t)?;
        if !self.queue.reserve(events.len()) {
            self.admission.undo(events, t);
            return Err(RejectReason::QueueFull);
        }
        Ok(())
    }

    /// Releases what [`admit_many`](Self::admit_many) took (an aborted prepared enqueue).
    pub(crate) fn unadmit(&self, events: &[E]) {
        self.queue.unreserve(events.len());
        if !self.admission.is_trivial() {
            self.admission
                .undo(events, self.shared.time(Instant::now()));
        }
    }

    pub(crate) fn count_rejected(&self, reason: RejectReason, n: u64) {
        self.stats.rejected(reason, n);
    }

    /// Enqueue without counting a rejection (callers that retry count once at the end).
    pub(crate) fn try_enqueue_one(&self, event: E) -> Result<(), Rejected<E>> {
        let source = current_stage();
        match self.admit_many(std::slice::from_ref(&event), source) {
            Ok(()) => {
                self.push_admitted_one(event, source);
                Ok(())
            }
            Err(reason) => Err(Rejected { event, reason }),
        }
    }

    pub(crate) fn enqueue_one(&self, event: E) -> Result<(), Rejected<E>> {
        self.try_enqueue_one(event)
            .inspect_err(|r| self.count_rejected(r.reason, 1))
    }

    pub(crate) fn enqueue_many(&self, events: Vec<E>) -> Result<(), Rejected<Vec<E>>> {
        let source = current_stage();
        match self.admit_many(&events, source) {
            Ok(()) => {
                self.push_admitted(events, source);
                Ok(())
            }
            Err(reason) => {
                self.count_rejected(reason, events.len() as u64);
                Err(Rejected {
                    event: events,
                    reason,
                })
            }
        }
    }

    fn push_admitted_one(&self, event: E, source: usize) {
        self.stats.admitted_from(source, 1);
        if self.mode == Mode::Inline {
            let mut events = self.spare.lock().pop().unwrap_or_default();
            events.push(event);
            let emptied = self.run_inline(events);
            let mut spare = self.spare.lock();
            if spare.len() < SPARE_BATCHES {
                spare.push(emptied);
            }
            return;
        }
        self.queue
            .push_reserved(std::iter::once(event), clock::stamp());
        self.wake_worker();
    }

    /// Pushes events whose slots are reserved.
    pub(crate) fn push_admitted(&self, events: Vec<E>, source: usize) {
        self.stats.admitted_from(source, events.len() as u64);
        if self.mode == Mode::Inline {
            self.run_inline(events);
            return;
        }
        self.queue.push_reserved(events, clock::stamp());
        self.wake_worker();
    }

    fn wake_worker(&self) {
        if let Some(pool) = &self.pool {
            pool.notify();
        }
    }

    /// Blocks until a worker frees queue space or `deadline` (at most [`SPACE_POLL`]).
    pub(crate) fn wait_for_space(&self, deadline: Instant) {
        let until = deadline.min(Instant::now() + SPACE_POLL);
        let mut guard = self.space.lock();
        self.space_waiters.fetch_add(1, Ordering::SeqCst);
        self.space_cv.wait_until(&mut guard, until);
        self.space_waiters.fetch_sub(1, Ordering::SeqCst);
    }

    // ===== worker side =====

    /// Handles `events` on this thread; returns a vector emptied of them (for reuse).
    fn run_inline(&self, events: Vec<E>) -> Vec<E> {
        let n = events.len();
        let now = clock::stamp();
        let emptied = self.process(events, &[Run { at: now, count: n }], now);
        // Inline stages hold their "queue" slots only while the handler runs.
        self.queue.unreserve(n);
        emptied
    }

    /// Handles popped events: queueing stats, drops of expired events, the handler, accounting.
    /// `runs` gives the enqueue times of `events`, in order. Returns a vector emptied of them.
    fn process(&self, events: Vec<E>, runs: &[Run], start: Stamp) -> Vec<E> {
        let mut oldest = Duration::ZERO;
        for r in runs {
            let queued = clock::between(r.at, start);
            oldest = oldest.max(queued);
            self.stats.queueing.record_n(queued, r.count as u64);
        }
        let may_drop = self.admission.controller.is_some()
            || self.drop_after.is_some_and(|limit| oldest > limit)
            || events
                .iter()
                .any(|e| e.meta().is_some_and(Meta::is_expired_now));
        let mut timing = TIMING.with_borrow_mut(Vec::pop).unwrap_or_default();
        timing.clear();
        let events = if may_drop {
            self.drop_expired(events, runs, start, &mut timing)
        } else {
            timing.extend(
                events
                    .iter()
                    .filter_map(|e| e.meta())
                    .map(|m| (m.born, m.class, start)),
            );
            events
        };
        let emptied = if events.is_empty() {
            events
        } else {
            self.handle(events, &timing, start)
        };
        TIMING.with_borrow_mut(|stack| stack.push(timing));
        emptied
    }

    /// Separates events to drop at dequeue (expired, cancelled, waited too long, or refused by
    /// the controller) from those to handle, recording the timing of the kept ones.
    fn drop_expired(
        &self,
        events: Vec<E>,
        runs: &[Run],
        start: Stamp,
        timing: &mut Vec<(Instant, u8, Stamp)>,
    ) -> Vec<E> {
        let now = Instant::now();
        let t = self.shared.time(now);
        let mut kept = Vec::with_capacity(events.len());
        let mut expired = Vec::new();
        let mut controller = self.admission.controller.as_ref().map(|c| c.lock());
        let stamps = runs.iter().flat_map(|r| std::iter::repeat_n(r.at, r.count));
        for (event, enqueued) in events.into_iter().zip(stamps) {
            let queued = clock::between(enqueued, start);
            let meta = event.meta();
            // The controller hears of every admitted event leaving the queue, whatever else
            // drops it: one that counts its queue (`response_time_tuned`) would otherwise keep
            // a cancelled or expired event queued forever and, once enough leaked, reject
            // everything.
            let refused = controller.as_mut().is_some_and(|c| c.on_dequeue(t, queued));
            let drop = refused
                || meta.is_some_and(|m| m.is_expired(now))
                || self.drop_after.is_some_and(|limit| queued > limit);
            if drop {
                if let Some(c) = controller.as_mut() {
                    c.on_drop(t, meta.map_or(0, |m| m.class));
                }
                expired.push(event);
                continue;
            }
            if let Some(m) = meta {
                timing.push((m.born, m.class, enqueued));
            }
            kept.push(event);
        }
        drop(controller);
        if !expired.is_empty() {
            self.stats
                .dropped(RejectReason::Expired, expired.len() as u64);
            for e in expired {
                self.dropped(e, RejectReason::Expired);
            }
        }
        kept
    }

    /// Runs the handler on `events`; returns the vector, emptied.
    fn handle(&self, mut events: Vec<E>, timing: &[(Instant, u8, Stamp)], start: Stamp) -> Vec<E> {
        let n = events.len();
        // A terminable stage registers the batch's requests, so the terminator can cut them.
        let (mut keys, mut cut) = RUNNING.take();
        keys.clear();
        cut.clear();
        if let Some(t) = &self.termination {
            t.start(
                events.iter().filter_map(|e| e.meta()),
                Instant::now(),
                &mut keys,
            );
        }
        let previous = set_current_stage(self.id);
        let cx = Cx::new(
            &self.name,
            self.termination.as_ref().map(Termination::threshold),
        );
        let outcome = catch_unwind(AssertUnwindSafe(|| self.handler.handle(&mut events, &cx)));
        set_current_stage(previous);
        let end_stamp = clock::stamp();
        let mut failed = cx.failed();
        let mut panics = failed;
        if outcome.is_err() {
            // A batch handler panicked: the events it had not finished are lost with it.
            panics += 1;
            failed += (events.len() as u64).max(1);
        }
        // What the handler left unfinished is dropped here, as before the vector is reused.
        events.clear();
        let failed = failed.min(n as u64);
        let end = Instant::now();
        if let Some(t) = &self.termination {
            t.finish(&keys, end, &mut cut);
        }
        // `cut` is parallel to `timing` (both follow the batch's events that carry a Meta).
        let is_cut = |i: usize| cut.get(i).copied().unwrap_or(false);
        let terminated = (cut.iter().filter(|&&c| c).count() as u64).min(n as u64 - failed);
        let ran = clock::between(start, end_stamp);
        self.stats.busy(ran);
        self.stats.service.record_n(per_event(ran, n), n as u64);
        if !timing.is_empty() {
            for (i, &(born, _, _)) in timing.iter().enumerate() {
                if !is_cut(i) {
                    self.stats
                        .response
                        .record(end.saturating_duration_since(born));
                }
            }
            if let Some(c) = &self.admission.controller {
                let mut c = c.lock();
                let t_end = self.shared.time(end);
                for (i, &(born, class, enqueued)) in timing.iter().enumerate() {
                    // Terminated requests are congestion signals, never latency samples.
                    if failed == 0 && !is_cut(i) {
                        let response = end.saturating_duration_since(born);
                        let waited = clock::between(enqueued, start);
                        c.on_served(t_end, class, response.saturating_sub(waited));
                        c.on_complete(t_end, class, response, clock::between(enqueued, end_stamp));
                    } else {
                        c.on_drop(t_end, class);
                    }
                }
            }
        }
        RUNNING.set((keys, cut));
        self.stats.completed(n as u64 - failed - terminated);
        if terminated > 0 {
            self.stats.terminated(terminated);
        }
        if failed > 0 {
            self.stats.failed(failed, panics);
        }
        events
    }

    fn dropped(&self, event: E, reason: RejectReason) {
        if let Some(hook) = &self.on_drop {
            // A panicking hook must not take the worker down.
            let _ = catch_unwind(AssertUnwindSafe(|| hook(event, reason)));
        }
    }

    fn after_pop(&self) {
        if self.space_waiters.load(Ordering::SeqCst) > 0 {
            let _guard = self.space.lock();
            self.space_cv.notify_all();
        }
        // More work left: let another parked worker of the pool help.
        if self.queue.has_ready() {
            self.wake_worker();
        }
    }
}

impl<E: Event> StageDyn for StageCore<E> {
    fn name(&self) -> &str {
        &self.name
    }

    fn run_batch(&self) -> bool {
        if !self.queue.has_ready() {
            return false;
        }
        let max = match self.batch_max.load(Ordering::Relaxed) {
            0 => usize::MAX,
            m => m,
        };
        let mut events = Vec::new();
        let mut runs = RUNS.take();
        runs.clear();
        if self.queue.pop_batch(max, &mut events, &mut runs) == 0 {
            RUNS.set(runs);
            return false;
        }
        self.after_pop();
        self.process(events, &runs, clock::stamp());
        RUNS.set(runs);
        true
    }

    fn has_ready(&self) -> bool {
        self.queue.has_ready()
    }

    fn queue_len(&self) -> usize {
        if self.mode == Mode::Inline {
            0
        } else {
            self.queue.len()
        }
    }

    fn control(&self, now: Instant) {
        let t = self.shared.time(now);
        if let Some(bc) = &self.batch_controller {
            let obs = BatchObservation {
                total_events: self.stats.completed_total(),
            };
            let target = bc.lock().update(t, &obs);
            self.batch_max.store(target.max(1), Ordering::Relaxed);
        }
        if let Some(c) = &self.admission.controller {
            c.lock().tick(t);
        }
        if let Some(term) = &self.termination {
            term.cut(now);
        }
    }

    fn settled(&self) -> u64 {
        self.stats.settled_total()
    }

    fn admitted(&self) -> u64 {
        self.stats.admitted_total()
    }

    fn completed(&self) -> u64 {
        self.stats.completed_total()
    }

    fn busy_ns(&self) -> u64 {
        self.stats.busy_total_ns()
    }

    fn roll_stats(&self, now: Instant) {
        self.stats.roll(now);
        if let Some(term) = &self.termination {
            term.on_period(&self.stats.counters());
        }
    }

    fn snapshot(&self) -> StageSnapshot {
        let (totals, period) = self.stats.snapshot();
        let controller = self.admission.controller.as_ref().map(|c| {
            let c = c.lock();
            let state: BTreeMap<_, f64> =
                c.state().into_iter().map(|(k, v)| (k.into(), v)).collect();
            ControllerSnapshot {
                name: c.name().into(),
                state,
            }
        });
        StageSnapshot {
            name: self.name.clone(),
            mode: self.mode_name().into(),
            pool: self.pool.as_ref().map(|p| p.name.clone()),
            queue_len: self.queue_len(),
            threshold: self.queue.threshold(),
            threads: self.pool.as_ref().map_or(0, |p| p.threads()),
            threads_max: self.pool.as_ref().map_or(0, |p| p.max_threads()),
            threads_target: self.pool.as_ref().and_then(|p| p.target()),
            batch_size: self.batch_max.load(Ordering::Relaxed),
            controller,
            termination: self.termination.as_ref().map(Termination::snapshot),
            totals,
            period,
        }
    }

    fn histograms(&self) -> crate::stats::StageHistograms {
        self.stats.histograms()
    }

    fn edge_counts(&self) -> Vec<(usize, u64)> {
        self.stats.edge_counts()
    }

    fn mode_name(&self) -> &'static str {
        match self.mode {
            Mode::Queued => "queued",
            Mode::Domain(_) => "domain",
            Mode::Inline => "inline",
        }
    }

    fn abandon(&self) -> usize {
        let events = self.queue.drain_all();
        let n = events.len();
        if n > 0 {
            self.stats.dropped(RejectReason::Closed, n as u64);
            for e in events {
                self.dropped(e, RejectReason::Closed);
            }
        }
        n
    }

    fn into_any(self: Arc<Self>) -> Arc<dyn Any + Send + Sync> {
        self
    }

    fn event_type(&self) -> &'static str {
        std::any::type_name::<E>()
    }
}
