//! The runtime: builds the stage graph, runs the controllers, exposes stats, shuts down.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex, RwLock};
use seda_control::{BatchController, TokenBucket};
use serde::{Deserialize, Serialize};

use crate::Event;
use crate::config::{Config, ConfigError, PoolSettings};
use crate::error::BuildError;
use crate::global::{GlobalControl, GlobalSnapshot};
use crate::graph::{Graph, GraphEdge, GraphNode};
use crate::pool::Pool;
use crate::queue::Queue;
use crate::shared::Shared;
use crate::sink::Sink;
use crate::sizer::SizerState;
use crate::stage::{CoreParts, Mode, StageBuilder, StageCore, StageDyn, Termination, admission_of};
use crate::stats::{EDGE_SOURCES, StageHistograms, StageSnapshot};

/// Queue threshold of a queued stage when none is configured: queues are never unbounded by
/// default (set `threshold = 0` to opt out).
pub const DEFAULT_THRESHOLD: usize = 10_000;
/// Largest batch when none is configured.
pub const DEFAULT_BATCH: usize = 64;

/// What a shutdown achieved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ShutdownReport {
    /// Every admitted event was handled or dropped by its stage before the pools stopped.
    pub drained: bool,
    /// Events still queued when the wait ran out, dropped with reason `Closed`.
    pub abandoned: usize,
    /// Worker threads still busy in a handler when the wait ran out (left detached).
    pub threads_left_running: usize,
}

/// A snapshot of every stage and pool.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RuntimeSnapshot {
    /// Seconds since the runtime started.
    pub uptime_s: f64,
    /// Events admitted somewhere and not yet handled or dropped.
    pub in_flight: u64,
    /// Stages, in the order they were added.
    pub stages: Vec<StageSnapshot>,
    /// Pools (a queued stage's own pool has the stage's name).
    pub pools: Vec<PoolSnapshot>,
    /// Global control, if configured (`[runtime.global]`).
    pub global: Option<GlobalSnapshot>,
}

impl RuntimeSnapshot {
    /// The pool that runs `stage` (none for an inline stage).
    pub fn pool_of(&self, stage: &StageSnapshot) -> Option<&PoolSnapshot> {
        let name = stage.pool.as_ref()?;
        self.pools.iter().find(|p| &p.name == name)
    }
}

/// A pool's size and backlog.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PoolSnapshot {
    /// Pool name.
    pub name: String,
    /// Worker threads.
    pub threads: usize,
    /// Events waiting in its stages.
    pub queue_len: usize,
    /// Its sizer: `seda`, `fixed`, `self_tuning` or `hill_climbing`.
    pub sizer: std::borrow::Cow<'static, str>,
    /// What the sizer asks for and measured.
    pub sizing: SizerState,
}

/// Stages and pools, shared with the control thread.
#[derive(Default)]
struct Registry {
    stages: RwLock<Vec<Arc<dyn StageDyn>>>,
    pools: RwLock<Vec<Arc<Pool>>>,
    domains: RwLock<BTreeMap<String, Arc<Pool>>>,
    /// Shared resources whose culprits the control thread cuts ([`Runtime::watch`]).
    resources: RwLock<Vec<Arc<crate::Contended>>>,
}

struct Inner {
    shared: Arc<Shared>,
    config: Config,
    registry: Arc<Registry>,
    started: Instant,
    control: Mutex<Option<JoinHandle<()>>>,
    stop: Arc<(Mutex<bool>, Condvar)>,
    report: Mutex<Option<ShutdownReport>>,
    global: Option<Arc<Mutex<GlobalControl>>>,
}

/// A running stage graph. Cheap to clone; every clone is the same runtime.
///
/// [`shutdown`](Self::shutdown) drains every queue and joins every thread; dropping the last
/// clone does the same (as tokio's blocking pool does), so a runtime never outlives its owner
/// with threads running. Shutting down twice is harmless: the second call returns the first
/// report. (A handler that holds a clone keeps the runtime alive until it is shut down.)
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use seda::{Config, Runtime, Stage, handler};
///
/// let config = Config::from_toml("[stages.work]\nthreshold = 8")?;
/// let rt = Runtime::builder().config(config).start()?;
/// let work = rt.stage(Stage::builder("work").handler(handler::each(|_: u64, _cx| {})))?;
/// assert_eq!(work.threshold(), Some(8)); // the file's setting overrides the code's
/// let report = rt.shutdown_timeout(Duration::from_secs(5));
/// assert!(report.drained);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Runtime {
    inner: Arc<Inner>,
}

impl fmt::Debug for Runtime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Runtime")
            .field("stages", &self.inner.registry.stages.read().len())
            .finish()
    }
}

/// Builds a [`Runtime`].
#[derive(Debug, Default)]
pub struct RuntimeBuilder {
    config: Config,
}

impl RuntimeBuilder {
    /// Uses `config` (from [`Config::from_file`] or code).
    pub fn config(mut self, config: Config) -> Self {
        self.config = config;
        self
    }

    /// Global control toward a p90 target (FAIR07 Section 4.2.1; see [`crate::global`]).
    pub fn global(mut self, global: crate::GlobalControlConfig) -> Self {
        self.config.runtime.global = Some(global);
        self
    }

    /// Starts the control thread and the domains of the configuration.
    ///
    /// # Errors
    ///
    /// [`BuildError::Config`] when the global control settings are invalid
    /// ([`ConfigError::Runtime`]) or the control thread cannot be spawned
    /// ([`ConfigError::ControlThread`]).
    pub fn start(self) -> Result<Runtime, BuildError> {
        let registry = Arc::new(Registry::default());
        let shared = Arc::new(Shared::new());
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let tick = Duration::from_millis(self.config.runtime.tick_ms.max(1));
        let period = Duration::from_millis(self.config.runtime.stats_period_ms.max(1));
        let global = match &self.config.runtime.global {
            Some(g) => {
                if let Some((setting, reason)) = g.problem() {
                    return Err(ConfigError::Runtime { setting, reason }.into());
                }
                Some(Arc::new(Mutex::new(GlobalControl::new(g.clone()))))
            }
            None => None,
        };
        let control = {
            let registry = registry.clone();
            let shared = shared.clone();
            let stop = stop.clone();
            let global = global.clone();
            std::thread::Builder::new()
                .name("seda-control".into())
                .spawn(move || {
                    control_loop(&registry, &shared, &stop, global.as_deref(), tick, period)
                })
                .map_err(ConfigError::ControlThread)?
        };
        let rt = Runtime {
            inner: Arc::new(Inner {
                shared,
                config: self.config.clone(),
                registry,
                started: Instant::now(),
                control: Mutex::new(Some(control)),
                stop,
                report: Mutex::new(None),
                global,
            }),
        };
        for (name, settings) in &self.config.domains {
            rt.domain(name, settings.clone())?;
        }
        Ok(rt)
    }
}

fn control_loop(
    registry: &Registry,
    shared: &Shared,
    stop: &(Mutex<bool>, Condvar),
    global: Option<&Mutex<GlobalControl>>,
    tick: Duration,
    period: Duration,
) {
    let mut next_roll = Instant::now() + period;
    loop {
        {
            let mut stopped = stop.0.lock();
            if *stopped {
                return;
            }
            stop.1.wait_for(&mut stopped, tick);
            if *stopped {
                return;
            }
        }
        let now = Instant::now();
        let stages: Vec<_> = registry.stages.read().clone();
        for s in &stages {
            s.control(now);
        }
        for r in registry.resources.read().iter() {
            r.police(now);
        }
        let pools: Vec<_> = registry.pools.read().clone();
        if now >= next_roll {
            for s in &stages {
                s.roll_stats(now);
            }
            if let Some(global) = global {
                apply_global(global, &stages, &pools);
            }
            next_roll += period;
            if next_roll < now {
                next_roll = now + period;
            }
        }
        // After global control, so that a sizer whose period ends in this tick sizes its pool
        // for this period's target rather than the last one's.
        for p in &pools {
            p.control(shared.time(now));
        }
    }
}

/// One period of global control: the service's throughput target, and each pool's share.
fn apply_global(global: &Mutex<GlobalControl>, stages: &[Arc<dyn StageDyn>], pools: &[Arc<Pool>]) {
    let snapshots: Vec<_> = stages.iter().map(|s| s.snapshot()).collect();
    let targets = global.lock().update(&snapshots);
    for pool in pools {
        let share: Option<f64> = snapshots
            .iter()
            .filter(|s| s.pool.as_deref() == Some(pool.name.as_str()))
            .filter_map(|s| targets.get(&s.name))
            .copied()
            .reduce(|a, b| a + b);
        pool.set_global_target(share);
    }
}

impl Runtime {
    /// A builder for a runtime.
    pub fn builder() -> RuntimeBuilder {
        RuntimeBuilder::default()
    }

    /// A runtime with default settings.
    ///
    /// # Errors
    ///
    /// As [`RuntimeBuilder::start`]: with default settings, only when the control thread
    /// cannot be spawned.
    pub fn start() -> Result<Runtime, BuildError> {
        Runtime::builder().start()
    }

    /// Declares a domain: a pool that stages join with `.domain(name)`. Declaring a name
    /// twice keeps the first pool and its settings.
    ///
    /// # Errors
    ///
    /// None today; the `Result` leaves room for settings checked when the pool starts.
    ///
    /// # Examples
    ///
    /// ```
    /// use seda::{PoolSettings, Runtime, Stage, handler};
    ///
    /// let rt = Runtime::start()?;
    /// let settings = PoolSettings { threads: Some(2), ..Default::default() };
    /// rt.domain("shared", settings)?;
    /// let a = rt.stage(Stage::builder("a").domain("shared").handler(handler::each(|_: u8, _cx| {})))?;
    /// let b = rt.stage(Stage::builder("b").domain("shared").handler(handler::each(|_: u8, _cx| {})))?;
    /// assert!(a.enqueue(1).is_ok() && b.enqueue(2).is_ok());
    /// rt.shutdown();
    /// # Ok::<(), seda::BuildError>(())
    /// ```
    pub fn domain(&self, name: &str, settings: PoolSettings) -> Result<(), BuildError> {
        let mut domains = self.inner.registry.domains.write();
        if domains.contains_key(name) {
            return Ok(());
        }
        let pool = Pool::new(
            name.to_string(),
            settings.to_pool_config(),
            settings.controller_enabled(),
            &settings.sizer_config(),
        );
        domains.insert(name.to_string(), pool.clone());
        self.inner.registry.pools.write().push(pool);
        Ok(())
    }

    /// Adds a stage and returns its sink. Settings from the configuration file for a stage of
    /// the same name override those in the builder.
    ///
    /// # Errors
    ///
    /// - [`BuildError::ShutDown`] once the runtime is shut down;
    /// - [`BuildError::MissingHandler`] when the builder has no handler;
    /// - [`BuildError::DuplicateStage`] when a stage of that name exists;
    /// - [`BuildError::UnknownDomain`] when the stage names a domain not declared;
    /// - [`BuildError::Config`] when the file's admission or termination settings for the
    ///   stage are invalid;
    /// - [`BuildError::Knob`] when the handler reads a knob its controller does not have.
    ///
    /// # Examples
    ///
    /// ```
    /// use seda::{BuildError, Runtime, Stage, handler};
    ///
    /// let rt = Runtime::start()?;
    /// rt.stage(Stage::builder("echo").handler(handler::each(|_: u8, _cx| {})))?;
    /// let again = rt.stage(Stage::builder("echo").handler(handler::each(|_: u8, _cx| {})));
    /// assert!(matches!(again, Err(BuildError::DuplicateStage(_))));
    /// rt.shutdown();
    /// # Ok::<(), BuildError>(())
    /// ```
    pub fn stage<E: Event>(&self, builder: StageBuilder<E>) -> Result<Sink<E>, BuildError> {
        if self.inner.report.lock().is_some() {
            return Err(BuildError::ShutDown);
        }
        let StageBuilder {
            name,
            handler,
            config,
            predicates,
            controller,
            terminator,
            knobs,
            on_drop,
        } = builder;
        let handler = handler.ok_or_else(|| BuildError::MissingHandler(name.clone()))?;
        let config = match self.inner.config.stages.get(&name) {
            Some(file) => config.overlaid(file),
            None => config,
        };
        config.validate(&name)?;
        let controller = match &config.admission {
            Some(a) => Some(a.build().map_err(|source| ConfigError::Admission {
                stage: name.clone(),
                source,
            })?),
            None => controller.or(self.entry_dropper(&name)?),
        };
        let terminator = match &config.terminate {
            Some(t) => Some(t.build().map_err(|source| ConfigError::Terminate {
                stage: name.clone(),
                source,
            })?),
            None => terminator,
        };
        let mut stages = self.inner.registry.stages.write();
        if stages.iter().any(|s| s.name() == name) {
            return Err(BuildError::DuplicateStage(name));
        }
        // The controller is final now (the file may have replaced the builder's): the handler's
        // knobs must be its, or the stage is refused.
        for knob in &knobs {
            knob.bind(controller.as_deref())
                .map_err(|source| BuildError::Knob {
                    stage: name.clone(),
                    source,
                })?;
        }
        let (mode, pool) = if config.inline == Some(true) {
            (Mode::Inline, None)
        } else if let Some(domain) = &config.domain {
            let pool = self.inner.registry.domains.read().get(domain).cloned();
            let pool = pool.ok_or_else(|| BuildError::UnknownDomain {
                stage: name.clone(),
                domain: domain.clone(),
            })?;
            (Mode::Domain(domain.clone()), Some(pool))
        } else {
            let pool = Pool::new(
                name.clone(),
                config.pool().to_pool_config(),
                config.pool().controller_enabled(),
                &config.pool().sizer_config(),
            );
            self.inner.registry.pools.write().push(pool.clone());
            (Mode::Queued, Some(pool))
        };
        let threshold = match (config.threshold, &mode) {
            (Some(0), _) | (None, Mode::Inline) => None,
            (Some(t), _) => Some(t),
            (None, _) => Some(DEFAULT_THRESHOLD),
        };
        let batch_controller = config.batch_config().map(BatchController::new);
        let batch_max = match &batch_controller {
            Some(bc) => bc.target(),
            None => config.batch.unwrap_or(DEFAULT_BATCH),
        };
        let rate = config
            .rate_limit
            .as_ref()
            .map(|r| TokenBucket::new(r.rate_per_s, r.depth));
        let core = Arc::new(StageCore::new(CoreParts {
            id: stages.len() + 1,
            name: name.clone(),
            queue: Queue::new(threshold, config.order.unwrap_or_default()),
            mode,
            pool: pool.clone(),
            handler,
            admission: admission_of(predicates, rate, controller),
            batch_max,
            batch_controller,
            drop_after: config.drop_after_ms.map(Duration::from_millis),
            on_drop,
            termination: terminator.map(Termination::new),
            shared: self.inner.shared.clone(),
        }));
        stages.push(core.clone());
        drop(stages);
        if let Some(pool) = pool {
            pool.attach(core.clone());
        }
        Ok(Sink { core })
    }

    /// Global control's selective dropper, if `name` is its entry stage (see `global.rs`).
    fn entry_dropper(
        &self,
        name: &str,
    ) -> Result<Option<Box<dyn seda_control::AdmissionController>>, BuildError> {
        let Some(g) = &self.inner.config.runtime.global else {
            return Ok(None);
        };
        let Some(threshold) = g.dropper_threshold().filter(|_| g.entry == name) else {
            return Ok(None);
        };
        let params = BTreeMap::from([("threshold_s".to_string(), threshold.as_secs_f64())]);
        seda_control::build_admission("selective_dropper", &params)
            .map(Some)
            .map_err(|source| {
                ConfigError::Admission {
                    stage: name.to_string(),
                    source,
                }
                .into()
            })
    }

    /// Has the control thread police `resource` every tick: with a
    /// [`CulpritPolicy`](crate::CulpritPolicy), a request that has held it far longer than its
    /// typical hold while others wait is cut as terminated (see [`Contended`](crate::Contended)).
    /// The cut counts in the resource's snapshot, and in its stage's terminated requests when
    /// the stage is terminable.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use seda::{Contended, CulpritPolicy, Runtime};
    ///
    /// let rt = Runtime::start()?;
    /// let lock = Arc::new(Contended::new("folder lock").with_policy(CulpritPolicy::default()));
    /// rt.watch(lock.clone());
    /// rt.shutdown();
    /// # Ok::<(), seda::BuildError>(())
    /// ```
    pub fn watch(&self, resource: Arc<crate::Contended>) {
        self.inner.registry.resources.write().push(resource);
    }

    /// The sink of the stage called `name`, whose events must be of type `E`: for code that
    /// feeds a stage it did not build (the sink [`stage`](Self::stage) returned is the same).
    ///
    /// # Errors
    ///
    /// [`BuildError::NoSuchStage`] when no stage has that name, and
    /// [`BuildError::WrongEventType`] when its events are of another type.
    ///
    /// # Examples
    ///
    /// ```
    /// use seda::{BuildError, Runtime, Stage, handler};
    ///
    /// let rt = Runtime::start()?;
    /// rt.stage(Stage::builder("count").handler(handler::each(|_: u64, _cx| {})))?;
    /// assert!(rt.sink::<u64>("count")?.enqueue(7).is_ok());
    /// assert!(matches!(rt.sink::<String>("count"), Err(BuildError::WrongEventType { .. })));
    /// assert!(matches!(rt.sink::<u64>("counts"), Err(BuildError::NoSuchStage(_))));
    /// rt.shutdown();
    /// # Ok::<(), BuildError>(())
    /// ```
    pub fn sink<E: Event>(&self, name: &str) -> Result<Sink<E>, BuildError> {
        let stage = self
            .inner
            .registry
            .stages
            .read()
            .iter()
            .find(|s| s.name() == name)
            .cloned()
            .ok_or_else(|| BuildError::NoSuchStage(name.to_string()))?;
        let actual = stage.event_type();
        stage
            .into_any()
            .downcast::<StageCore<E>>()
            .map(|core| Sink { core })
            .map_err(|_| BuildError::WrongEventType {
                stage: name.to_string(),
                actual,
                asked: std::any::type_name::<E>(),
            })
    }

    /// Changes the thread bounds of a stage's own pool or of a domain, while running.
    ///
    /// # Errors
    ///
    /// [`BuildError::NoSuchPool`] when no stage with its own pool and no domain has that name.
    pub fn resize_pool(&self, pool: &str, min: usize, max: usize) -> Result<(), BuildError> {
        self.pool_named(pool)?.resize(min, max);
        Ok(())
    }

    /// Sets the throughput target, events/s, of a self-tuning pool (a stage's own pool or a
    /// domain), over its settings' and global control's; `None` gives them back.
    ///
    /// # Errors
    ///
    /// [`BuildError::NoSuchPool`] when no stage with its own pool and no domain has that name.
    pub fn set_throughput_target(
        &self,
        pool: &str,
        target_per_s: Option<f64>,
    ) -> Result<(), BuildError> {
        self.pool_named(pool)?.set_throughput_target(target_per_s);
        Ok(())
    }

    /// Changes global control's p90 target while running (FAIR07 Figure 5-7). Returns false
    /// when the runtime has no global control.
    pub fn set_response_target(&self, target: Duration) -> bool {
        match &self.inner.global {
            Some(g) => {
                g.lock().set_target(target);
                true
            }
            None => false,
        }
    }

    fn pool_named(&self, pool: &str) -> Result<Arc<Pool>, BuildError> {
        let p = self
            .inner
            .registry
            .pools
            .read()
            .iter()
            .find(|p| p.name == pool)
            .cloned();
        p.ok_or_else(|| BuildError::NoSuchPool(pool.to_string()))
    }

    /// The configuration the runtime was started with (file settings by stage name).
    pub fn configuration(&self) -> &Config {
        &self.inner.config
    }

    /// A snapshot of every stage's and pool's state and measurements.
    pub fn stats(&self) -> RuntimeSnapshot {
        let stages = self.inner.registry.stages.read().clone();
        let pools = self.inner.registry.pools.read().clone();
        RuntimeSnapshot {
            uptime_s: self.inner.started.elapsed().as_secs_f64(),
            in_flight: in_flight(&stages).unwrap_or_else(|| approximate_in_flight(&stages)),
            stages: stages.iter().map(|s| s.snapshot()).collect(),
            pools: pools
                .iter()
                .map(|p| {
                    let (kind, sizing) = p.sizing();
                    PoolSnapshot {
                        name: p.name.clone(),
                        threads: p.threads(),
                        queue_len: p.queue_len(),
                        sizer: kind.name().into(),
                        sizing,
                    }
                })
                .collect(),
            global: self.inner.global.as_ref().map(|g| g.lock().snapshot()),
        }
    }

    /// Every stage's cumulative queueing, service and response-time histograms, by stage name,
    /// in the order the stages were added. Exporters render their own buckets from these at
    /// scrape time, so recording stays the one relaxed atomic add it is.
    pub fn histograms(&self) -> Vec<(String, StageHistograms)> {
        let stages = self.inner.registry.stages.read().clone();
        stages
            .iter()
            .map(|s| (s.name().to_string(), s.histograms()))
            .collect()
    }

    /// [`stats`](Self::stats) as pretty JSON.
    pub fn stats_json(&self) -> String {
        serde_json::to_string_pretty(&self.stats())
            .unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
    }

    /// The stage graph with per-edge event counts.
    pub fn graph(&self) -> Graph {
        let stages = self.inner.registry.stages.read().clone();
        let name_of = |id: usize| -> String {
            match id {
                0 => "outside".into(),
                EDGE_SOURCES => "other".into(),
                id => stages
                    .get(id - 1)
                    .map_or_else(|| "other".into(), |s| s.name().to_string()),
            }
        };
        let nodes = stages
            .iter()
            .map(|s| {
                let snap_pool = s.snapshot().pool;
                GraphNode {
                    name: s.name().to_string(),
                    mode: s.mode_name(),
                    pool: snap_pool,
                }
            })
            .collect();
        let edges = stages
            .iter()
            .flat_map(|s| {
                s.edge_counts().into_iter().map(|(from, events)| GraphEdge {
                    from: name_of(from),
                    to: s.name().to_string(),
                    events,
                })
            })
            .collect();
        Graph { nodes, edges }
    }

    /// Stops admitting events from outside, lets every queue drain (hand-offs between stages
    /// continue), then stops and joins every thread. Waits as long as handlers take.
    ///
    /// Call it from outside the graph: a handler calling it waits for itself.
    pub fn shutdown(&self) -> ShutdownReport {
        self.shutdown_inner(None)
    }

    /// Like [`shutdown`](Self::shutdown), but waits at most `timeout` for queues to drain and
    /// as long again for busy handlers; what is left is dropped (reason `Closed`) or left
    /// detached, and reported.
    pub fn shutdown_timeout(&self, timeout: Duration) -> ShutdownReport {
        self.shutdown_inner(Some(timeout))
    }

    fn shutdown_inner(&self, timeout: Option<Duration>) -> ShutdownReport {
        self.inner.shutdown(timeout)
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        // On one of its own workers (a handler dropped the last clone) a drain would wait for
        // the handler itself: give up at once instead, dropping what is queued.
        let timeout = crate::pool::on_worker_thread().then_some(Duration::ZERO);
        self.shutdown(timeout);
    }
}

impl Inner {
    fn shutdown(&self, timeout: Option<Duration>) -> ShutdownReport {
        let mut report = self.report.lock();
        if let Some(r) = report.as_ref() {
            return r.clone();
        }
        let shared = &self.shared;
        shared.start_draining();
        let stages = self.registry.stages.read().clone();
        let drained = wait_quiet(&stages, timeout);
        shared.close();
        let abandoned = if drained {
            0
        } else {
            stages.iter().map(|s| s.abandon()).sum()
        };
        {
            let (flag, cv) = &*self.stop;
            *flag.lock() = true;
            cv.notify_all();
        }
        if let Some(control) = self.control.lock().take() {
            let _ = control.join();
        }
        let pools = self.registry.pools.read().clone();
        let threads_left_running = pools.iter().map(|p| p.stop(timeout)).sum();
        let r = ShutdownReport {
            drained,
            abandoned,
            threads_left_running,
        };
        *report = Some(r.clone());
        r
    }
}

/// Events in flight across `stages`, from a consistent view of their counters, or `None` if the
/// counters kept moving.
///
/// Counters only grow, so two scans that read identical values saw them all unchanged at one
/// instant between the scans (the "double collect"): an event handed from stage A to B cannot
/// hide between the reads, because B counts its admission before A counts it settled.
fn in_flight(stages: &[Arc<dyn StageDyn>]) -> Option<u64> {
    let scan = || {
        stages
            .iter()
            .map(|s| (s.admitted(), s.settled()))
            .collect::<Vec<_>>()
    };
    let first = scan();
    let second = scan();
    (first == second).then(|| second.iter().map(|(a, s)| a.saturating_sub(*s)).sum())
}

fn approximate_in_flight(stages: &[Arc<dyn StageDyn>]) -> u64 {
    stages
        .iter()
        .map(|s| s.admitted().saturating_sub(s.settled()))
        .sum()
}

/// Polls until nothing is in flight or `timeout` passes; true when quiet.
fn wait_quiet(stages: &[Arc<dyn StageDyn>], timeout: Option<Duration>) -> bool {
    let deadline = timeout.map(|t| Instant::now() + t);
    loop {
        if in_flight(stages) == Some(0) {
            return true;
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return false;
        }
        std::thread::sleep(Duration::from_micros(500));
    }
}
