//! Worker pools: OS threads that run stages' batches, spin briefly when idle, then park.
//!
//! A pool serves one stage (a queued stage) or several (a *domain*). Workers visit their stages
//! in turn, starting at a rotating offset so no stage starves. An idle worker spins for a few
//! microseconds (a hand-off arriving then costs no wake-up), then parks on a condition variable;
//! a producer that pushes an event wakes one parked worker. A worker parked longer than the idle
//! time retires while the pool is above its minimum; the control thread adds workers.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use seda_control::{Controller, PoolObservation, ThreadPoolConfig, ThreadPoolController};

use crate::Time;
use crate::handoff::{Handoff, Parked};
use crate::stage::StageDyn;

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
}

impl Pool {
    pub(crate) fn new(
        name: String,
        config: ThreadPoolConfig,
        controller_enabled: bool,
    ) -> Arc<Pool> {
        Arc::new(Pool {
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
        let initial = self.config().initial_threads;
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
        let have = self.threads();
        if have < min {
            self.add_threads(min - have);
        }
        // Workers above the new maximum retire at their next idle moment.
        self.wake_all();
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
        if !self.controller_enabled {
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
        left
    }

    fn retire(&self) -> bool {
        let config = self.config();
        self.threads
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |t| {
                (t > config.min_threads).then(|| t - 1)
            })
            .is_ok()
    }

    fn work(self: Arc<Self>) {
        ON_WORKER.with(|w| w.set(true));
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
            let count = stages.len();
            let mut worked = false;
            for i in 0..count {
                worked |= stages[(turn + i) % count].run_batch();
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
            let over_max = self.threads() > config.max_threads;
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
