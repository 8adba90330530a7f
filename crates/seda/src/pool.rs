//! Worker pools: OS threads that run stages' batches, spin briefly when idle, then park.
//!
//! A pool serves one stage (a queued stage) or several (a *domain*). Workers visit their stages
//! in turn, starting at a rotating offset so no stage starves. An idle worker spins for a few
//! microseconds (a hand-off arriving then costs no wake-up), then parks on a condition variable;
//! a producer that pushes an event wakes one parked worker. A worker parked longer than the idle
//! time retires while the pool is above its minimum; the control thread adds workers.
//!
//! Under a sizer other than SEDA's heuristic (`sizer.rs`; built by name from seda-control's
//! registry and driven through its `Sizer` trait) the pool has a thread *target*: the
//! control thread starts workers up to it, workers above it retire when they finish a batch,
//! and idle workers do not retire below it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use seda_control::{Controller, PoolObservation, ThreadPoolConfig, ThreadPoolController};

use crate::Time;
use crate::clock;
use crate::erased::StageDyn;
use crate::handoff::{Handoff, Parked};
use seda_control::catalogue::sizers;
use seda_control::sizer::{OutsideTargets, Sizer, SizerPeriod};

use crate::sizer::{SizerConfig, SizerState};

/// Rounds of looking for work before parking (as crossbeam's `Backoff`): the first
/// [`BUSY_SPIN_ROUNDS`] spin `2^round` times, the rest yield the CPU to a thread that may be
/// producing the work.
const SPIN_ROUNDS: u32 = 10;
const BUSY_SPIN_ROUNDS: u32 = 6;

thread_local! {
    static ON_WORKER: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether the calling thread is one of a pool's workers.
pub(crate) fn on_worker_thread() -> bool {
    ON_WORKER.with(std::cell::Cell::get)
}

pub(crate) struct Pool {
    pub(crate) name: String,
    stages: Mutex<Arc<Vec<Arc<dyn StageDyn>>>>,
    version: AtomicU64,
    handoff: Handoff,
    threads: AtomicUsize,
    spawned: AtomicUsize,
    stop: AtomicBool,
    controller: Mutex<ThreadPoolController>,
    controller_enabled: bool,
    handles: Mutex<Vec<JoinHandle<()>>>,
    /// The sizer's thread target; 0 under SEDA's heuristic (no target).
    target: AtomicUsize,
    sizing: Mutex<Sizing>,
    /// Under a target sizer, each worker's slot: the stamp at which the batch it is running
    /// began (0: none). See [`Pool::busy_ns`].
    running: Mutex<Vec<Arc<AtomicU64>>>,
}

/// Takes a worker's slot out of [`Pool::running`] when the worker ends, however it ends.
struct RunningSlot {
    pool: Arc<Pool>,
    slot: Arc<AtomicU64>,
}

impl Drop for RunningSlot {
    fn drop(&mut self) {
        self.pool
            .running
            .lock()
            .retain(|s| !Arc::ptr_eq(s, &self.slot));
    }
}

/// A pool's sizer and what it last measured.
struct Sizing {
    /// The sizer's registry name.
    kind: &'static str,
    /// The registry's sizer; `None` under SEDA's heuristic, which the pool runs itself.
    sizer: Option<Box<dyn Sizer>>,
    period: Duration,
    /// Time, completions, admissions and handler nanoseconds at the start of the current
    /// period.
    start: Option<(Time, u64, u64, u64)>,
    outside: OutsideTargets,
    state: SizerState,
}

impl Pool {
    pub(crate) fn new(
        name: String,
        config: ThreadPoolConfig,
        controller_enabled: bool,
        sizer: &SizerConfig,
    ) -> Arc<Pool> {
        // An unknown name cannot get here (the configuration's validation and its parser
        // refuse it); were one to, the pool would run SEDA's heuristic rather than panic.
        let entry = sizers::entry(&sizer.kind).filter(|e| e.name != sizers::SEDA);
        let target_sizer = entry.map(|e| {
            e.build(&sizer.settings(
                config.min_threads,
                config.max_threads,
                config.initial_threads,
            ))
        });
        let target = target_sizer
            .as_ref()
            .map_or(0, |s| s.initial_threads(config.initial_threads).max(1));
        Arc::new(Pool {
            target: AtomicUsize::new(target),
            sizing: Mutex::new(Sizing {
                kind: entry.map_or(sizers::SEDA, |e| e.name),
                sizer: target_sizer,
                period: sizer.period(),
                start: None,
                outside: OutsideTargets::default(),
                state: SizerState {
                    threads_target: (target > 0).then_some(target),
                    ..Default::default()
                },
            }),
            name,
            stages: Mutex::new(Arc::new(Vec::new())),
            version: AtomicU64::new(0),
            handoff: Handoff::new(),
            threads: AtomicUsize::new(0),
            spawned: AtomicUsize::new(0),
            stop: AtomicBool::new(false),
            controller: Mutex::new(ThreadPoolController::new(config)),
            controller_enabled,
            handles: Mutex::new(Vec::new()),
            running: Mutex::new(Vec::new()),
        })
    }

    fn config(&self) -> ThreadPoolConfig {
        self.controller.lock().config().clone()
    }

    /// Adds a stage to the pool; starts the initial workers with the first stage.
    pub(crate) fn attach(self: &Arc<Self>, stage: Arc<dyn StageDyn>) {
        {
            let mut stages = self.stages.lock();
            let mut next = Vec::clone(&stages);
            next.push(stage);
            *stages = Arc::new(next);
            self.version.fetch_add(1, Ordering::SeqCst);
        }
        let initial = self.target().unwrap_or(self.config().initial_threads);
        let have = self.threads.load(Ordering::SeqCst);
        if have < initial {
            self.add_threads(initial - have);
        }
    }

    pub(crate) fn threads(&self) -> usize {
        self.threads.load(Ordering::SeqCst)
    }

    /// Starts up to `n` workers, never beyond the maximum. Returns how many started.
    pub(crate) fn add_threads(self: &Arc<Self>, n: usize) -> usize {
        let max = self.config().max_threads;
        let mut started = 0;
        for _ in 0..n {
            let grew = self
                .threads
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |t| {
                    (t < max).then_some(t + 1)
                })
                .is_ok();
            if !grew || self.stop.load(Ordering::SeqCst) {
                if grew {
                    self.threads.fetch_sub(1, Ordering::SeqCst);
                }
                break;
            }
            let index = self.spawned.fetch_add(1, Ordering::Relaxed);
            let pool = self.clone();
            let spawn = std::thread::Builder::new()
                .name(format!("seda-{}-{index}", self.name))
                .spawn(move || pool.work());
            match spawn {
                Ok(handle) => {
                    self.handles.lock().push(handle);
                    started += 1;
                }
                Err(_) => {
                    // Out of threads: keep running with what we have.
                    self.threads.fetch_sub(1, Ordering::SeqCst);
                    break;
                }
            }
        }
        started
    }

    /// Changes the pool's bounds while it runs; grows at once to the new minimum.
    pub(crate) fn resize(self: &Arc<Self>, min: usize, max: usize) {
        {
            let mut c = self.controller.lock();
            let config = ThreadPoolConfig {
                min_threads: min,
                max_threads: max,
                ..c.config().clone()
            };
            *c = ThreadPoolController::new(config);
        }
        let min = self.config().min_threads;
        if let Some(t) = self.target() {
            self.target
                .store(t.clamp(min.max(1), max.max(1)), Ordering::SeqCst);
        }
        let want = self.target().unwrap_or(min);
        let have = self.threads();
        if have < want {
            self.add_threads(want - have);
        }
        // Workers above the new maximum retire at their next idle moment.
        self.wake_all();
    }

    /// The sizer's thread target, if the pool has one (not under SEDA's heuristic).
    pub(crate) fn target(&self) -> Option<usize> {
        match self.target.load(Ordering::SeqCst) {
            0 => None,
            n => Some(n),
        }
    }

    /// Moves the pool toward `n` threads: starts workers now; workers above it retire as they
    /// finish their batch.
    fn set_target(self: &Arc<Self>, n: usize) {
        let config = self.config();
        let n = n.clamp(config.min_threads.max(1), config.max_threads.max(1));
        self.target.store(n, Ordering::SeqCst);
        let have = self.threads();
        if have < n {
            self.add_threads(n - have);
        } else if have > n {
            self.wake_all();
        }
    }

    /// Sets (or with `None` clears) the throughput target given at run time.
    pub(crate) fn set_throughput_target(&self, target_per_s: Option<f64>) {
        self.sizing.lock().outside.run_time = target_per_s.filter(|t| t.is_finite() && *t >= 0.0);
    }

    /// Sets the global controller's share for this pool.
    pub(crate) fn set_global_target(&self, target_per_s: Option<f64>) {
        self.sizing.lock().outside.global = target_per_s;
    }

    /// The sizer's name and state.
    pub(crate) fn sizing(&self) -> (&'static str, SizerState) {
        let s = self.sizing.lock();
        (s.kind, s.state)
    }

    /// Events completed by the pool's stages (monotonic).
    fn completed(&self) -> u64 {
        self.stages.lock().iter().map(|s| s.completed()).sum()
    }

    /// Nanoseconds the pool's handlers have run up to now, summed over threads: what the
    /// stages credited for finished batches, and the batches running now for as long as they
    /// have run. A stage credits a batch when it ends, so a batch that outlasts a sizer's
    /// period (8 events of 40 ms against 100 ms in `busy_threads_count_batches_still_running`)
    /// made its periods read 0, 9.5 and 3.2 busy threads for 4 always busy. In `pool-control`'s
    /// quick form (one 20-40 ms event per batch, 160 ms periods), while PI grew the io plant's
    /// pool by 4 threads a period its busy threads read 4 under its threads each period, the
    /// pool never read itself saturated, and it ran to 42 threads where 24 suffice; counting
    /// the running batches, three runs held 24.25-25 threads. Crediting alone accounts for at
    /// most one event per new thread there, so the rest of that lag is not explained. (A batch
    /// that ends while this reads may count in one reading and not the next, which moves up to
    /// a batch's time between two periods; they still sum to the handlers' time.)
    fn busy_ns(&self) -> u64 {
        let credited: u64 = self.stages.lock().iter().map(|s| s.busy_ns()).sum();
        let now = clock::stamp();
        let running: u64 = self
            .running
            .lock()
            .iter()
            .map(|s| match s.load(Ordering::Relaxed) {
                0 => 0,
                began => clock::between(began, now).as_nanos() as u64,
            })
            .sum();
        credited + running
    }

    /// Events admitted by the pool's stages (monotonic).
    fn admitted(&self) -> u64 {
        self.stages.lock().iter().map(|s| s.admitted()).sum()
    }

    /// Runs the target sizer when its period has passed; returns whether the pool has one.
    fn run_sizer(self: &Arc<Self>, now: Time) -> bool {
        let next = {
            let mut guard = self.sizing.lock();
            let s = &mut *guard;
            let Some(sizer) = s.sizer.as_mut() else {
                return false;
            };
            let (completed, admitted, busy) = (self.completed(), self.admitted(), self.busy_ns());
            match s.start {
                Some((t0, c0, a0, b0)) if now.saturating_sub(t0) >= s.period => {
                    let period = SizerPeriod {
                        now,
                        secs: now.saturating_sub(t0).as_secs_f64().max(1e-3),
                        completions: completed.saturating_sub(c0),
                        arrivals: admitted.saturating_sub(a0),
                        busy_secs: Some(busy.saturating_sub(b0) as f64 / 1e9),
                        threads: self.target().unwrap_or_else(|| self.threads()),
                        queue_len: self.queue_len(),
                        targets: s.outside,
                    };
                    s.start = Some((now, completed, admitted, busy));
                    let next = sizer.update(&period);
                    s.state = sizer.report();
                    Some(next)
                }
                Some(_) => None,
                None => {
                    s.start = Some((now, completed, admitted, busy));
                    None
                }
            }
        };
        if let Some(n) = next {
            self.set_target(n);
        } else if let Some(t) = self.target() {
            // Keep the pool at its target (a worker that failed to start, a resize).
            let have = self.threads();
            if have < t {
                self.add_threads(t - have);
            }
        }
        true
    }

    /// Wakes one parked worker, if any: called after an event is pushed (see `handoff.rs`).
    pub(crate) fn notify(&self) {
        self.handoff.notify();
    }

    pub(crate) fn wake_all(&self) {
        self.handoff.wake_all();
    }

    /// The most threads the controller may grow the pool to.
    pub(crate) fn max_threads(&self) -> usize {
        self.controller.lock().config().max_threads
    }

    /// Events ready in the pool's stages.
    pub(crate) fn queue_len(&self) -> usize {
        self.stages.lock().iter().map(|s| s.queue_len()).sum()
    }

    /// Runs the pool controller once.
    pub(crate) fn control(self: &Arc<Self>, now: Time) {
        if self.run_sizer(now) || !self.controller_enabled {
            return;
        }
        let obs = PoolObservation {
            queue_len: self.queue_len(),
            threads: self.threads(),
        };
        let adj = self.controller.lock().update(now, &obs);
        if adj.add_threads > 0 {
            self.add_threads(adj.add_threads);
        }
    }

    /// Stops every worker and waits for them (at most `timeout`, if given). Returns how many
    /// are still running a handler when the wait ends; they are left detached.
    pub(crate) fn stop(&self, timeout: Option<Duration>) -> usize {
        self.stop.store(true, Ordering::SeqCst);
        self.wake_all();
        let handles: Vec<_> = std::mem::take(&mut *self.handles.lock());
        let me = std::thread::current().id();
        let deadline = timeout.map(|t| Instant::now() + t);
        let mut left = 0;
        for h in handles {
            if h.thread().id() == me {
                continue;
            }
            if let Some(deadline) = deadline {
                while !h.is_finished() && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(1));
                }
                if !h.is_finished() {
                    left += 1;
                    continue;
                }
            }
            let _ = h.join();
        }
        // Each stage holds its pool: the pool lets go of its stages, or the pair (and all the
        // handlers hold, such as a store's connections) would outlive the runtime. A worker
        // still running keeps its own copy of the list until it returns.
        *self.stages.lock() = Arc::new(Vec::new());
        self.version.fetch_add(1, Ordering::SeqCst);
        left
    }

    /// Retires the calling worker if the pool is above its floor: the sizer's target, or else
    /// the minimum.
    fn retire(&self) -> bool {
        let floor = self.target().unwrap_or_else(|| self.config().min_threads);
        self.threads
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |t| {
                (t > floor).then(|| t - 1)
            })
            .is_ok()
    }

    /// Whether the pool runs more workers than its sizer's target.
    fn over_target(&self) -> bool {
        self.target().is_some_and(|t| self.threads() > t)
    }

    fn work(self: Arc<Self>) {
        ON_WORKER.with(|w| w.set(true));
        // Only a target sizer reads the running batches (SEDA's heuristic does not).
        let running = (self.target.load(Ordering::Relaxed) > 0).then(|| {
            let slot = Arc::new(AtomicU64::new(0));
            self.running.lock().push(slot.clone());
            RunningSlot {
                pool: self.clone(),
                slot,
            }
        });
        let mut version = u64::MAX;
        let mut stages: Arc<Vec<Arc<dyn StageDyn>>> = Arc::new(Vec::new());
        let mut turn = 0usize;
        loop {
            let v = self.version.load(Ordering::SeqCst);
            if v != version {
                stages = self.stages.lock().clone();
                version = v;
            }
            if self.stop.load(Ordering::SeqCst) {
                self.threads.fetch_sub(1, Ordering::SeqCst);
                return;
            }
            if self.over_target() && self.retire() {
                return;
            }
            let count = stages.len();
            let mut worked = false;
            for i in 0..count {
                if let Some(r) = &running {
                    r.slot.store(clock::stamp().max(1), Ordering::Relaxed);
                }
                worked |= stages[(turn + i) % count].run_batch();
                if let Some(r) = &running {
                    r.slot.store(0, Ordering::Relaxed);
                }
            }
            turn = turn.wrapping_add(1);
            if worked || self.spin_for_work(&stages) {
                continue;
            }
            let config = self.config();
            // The hand-off (tests/loom_handoff.rs checks it): either we see the producer's
            // event in the re-check, or it sees us parked and wakes us.
            let ready = || self.stop.load(Ordering::SeqCst) || stages.iter().any(|s| s.has_ready());
            let timed_out = match self.handoff.park(ready, config.idle_time) {
                Parked::Ready => continue,
                Parked::Woken => false,
                Parked::TimedOut => true,
            };
            let over_max = self.threads() > config.max_threads || self.over_target();
            if (timed_out || over_max)
                && !stages.iter().any(|s| s.has_ready())
                && !self.stop.load(Ordering::SeqCst)
                && self.retire()
            {
                return;
            }
        }
    }

    fn spin_for_work(&self, stages: &[Arc<dyn StageDyn>]) -> bool {
        for round in 0..SPIN_ROUNDS {
            if stages.iter().any(|s| s.has_ready()) {
                return true;
            }
            if self.stop.load(Ordering::Relaxed) {
                return false;
            }
            if round < BUSY_SPIN_ROUNDS {
                for _ in 0..(1 << round) {
                    std::hint::spin_loop();
                }
            } else {
                std::thread::yield_now();
            }
        }
        false
    }
}
