//! The runtime: builds the stage graph, runs the controllers, exposes stats, shuts down.
//!
//! `builder.rs` starts it, `register.rs` adds stages, `control.rs` is the control thread,
//! `snapshot.rs` what it reports, `shutdown.rs` how it stops.

mod builder;
mod control;
mod register;
mod shutdown;
mod snapshot;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex, RwLock};

use crate::Event;
use crate::config::{Config, PoolSettings};
use crate::erased::StageDyn;
use crate::error::BuildError;
use crate::global::GlobalControl;
use crate::pool::Pool;
use crate::shared::Shared;
use crate::sink::Sink;
use crate::stage::StageCore;

pub use builder::RuntimeBuilder;
pub use shutdown::ShutdownReport;
pub use snapshot::{PoolSnapshot, RuntimeSnapshot};

/// Queue threshold of a queued stage when none is configured: queues are never unbounded by
/// default (set `threshold = 0` to opt out).
pub const DEFAULT_THRESHOLD: usize = 10_000;
/// Largest batch when none is configured.
pub const DEFAULT_BATCH: usize = 64;

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
/// # Panics
///
/// No method panics. [`shutdown`](Self::shutdown) called from inside a handler of the same
/// runtime waits for that handler to return, that is forever: shut down from outside the
/// graph, or use [`shutdown_timeout`](Self::shutdown_timeout).
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

impl Runtime {
    /// A builder for a runtime: its configuration and global control ([`RuntimeBuilder`]).
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
    /// [`BuildError::Config`] with [`ConfigError::Domain`](crate::ConfigError::Domain) when
    /// the pool's sizer settings are invalid (an unknown sizer, a setting out of range).
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
        if let Some((setting, reason)) = settings.sizer_config().problem() {
            return Err(BuildError::Config(crate::ConfigError::Domain {
                domain: name.to_string(),
                setting,
                reason,
            }));
        }
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
    ///
    /// # Examples
    ///
    /// ```
    /// use seda::{BuildError, Runtime, Stage, handler};
    ///
    /// let rt = Runtime::start()?;
    /// rt.stage(Stage::builder("db").handler(handler::each(|_: u64, _cx| {})))?;
    /// rt.resize_pool("db", 2, 16)?; // a queued stage's own pool has the stage's name
    /// assert_eq!(rt.stats().stages[0].threads_max, 16);
    /// assert!(matches!(rt.resize_pool("dbs", 2, 16), Err(BuildError::NoSuchPool(_))));
    /// rt.shutdown();
    /// # Ok::<(), BuildError>(())
    /// ```
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
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use seda::{GlobalControlConfig, Runtime};
    ///
    /// let plain = Runtime::start()?;
    /// assert!(!plain.set_response_target(Duration::from_millis(200)));
    /// plain.shutdown();
    /// let global = GlobalControlConfig::new(Duration::from_millis(500), "entry");
    /// let rt = Runtime::builder().global(global).start()?;
    /// assert!(rt.set_response_target(Duration::from_millis(200)));
    /// rt.shutdown();
    /// # Ok::<(), seda::BuildError>(())
    /// ```
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
    /// Stops admitting events from outside, lets every queue drain (hand-offs between stages
    /// continue), then stops and joins every thread. Waits as long as handlers take.
    ///
    /// Call it from outside the graph: a handler calling it waits for itself. A second call
    /// returns the first call's report.
    ///
    /// # Examples
    ///
    /// ```
    /// use seda::{RejectReason, Runtime, Stage, handler};
    ///
    /// let rt = Runtime::start()?;
    /// let sink = rt.stage(Stage::builder("work").handler(handler::each(|_: u64, _cx| {})))?;
    /// for n in 0..100 {
    ///     sink.enqueue(n).expect("admitted");
    /// }
    /// let report = rt.shutdown();
    /// assert!(report.drained && report.abandoned == 0); // all 100 handled
    /// assert_eq!(sink.enqueue(100).unwrap_err().reason, RejectReason::Closed);
    /// assert_eq!(rt.shutdown(), report);
    /// # Ok::<(), seda::BuildError>(())
    /// ```
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
