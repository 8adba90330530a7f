//! Building a stage from code; the runtime overlays the configuration file on top.

use std::fmt;

use seda_control::terminate::Terminator;
use seda_control::{AdmissionController, Knob, KnobKind, KnobSlot, RejectReason};

use crate::Event;
use crate::config::{RateLimitConfig, StageConfig};
use crate::handler::Handler;
use crate::queue::Order;
use crate::stage::admission::Predicate;

/// Entry point for building stages: `Stage::builder("name")`.
#[derive(Debug)]
pub struct Stage;

impl Stage {
    /// Starts building a stage called `name` (unique within a runtime): see [`StageBuilder`].
    pub fn builder<E: Event>(name: impl Into<String>) -> StageBuilder<E> {
        StageBuilder {
            name: name.into(),
            handler: None,
            config: StageConfig::default(),
            predicates: Vec::new(),
            controller: None,
            terminator: None,
            knobs: Vec::new(),
            on_drop: None,
        }
    }
}

/// Hook called with events the stage dropped after admitting them.
pub(crate) type DropHook<E> = Box<dyn Fn(E, RejectReason) + Send + Sync>;

/// A stage under construction. Add it to a runtime with [`Runtime::stage`](crate::Runtime::stage).
///
/// Every setting is optional except the handler; the configuration file's settings for a
/// stage of the same name override the builder's when the stage is added. No method panics:
/// settings are checked when the stage is built, and a bad one is a
/// [`BuildError`](crate::BuildError).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use seda::{Order, Runtime, Stage, handler};
///
/// let rt = Runtime::start()?;
/// let sink = rt.stage(
///     Stage::builder("render")
///         .threads(2)
///         .batch(8)
///         .threshold(1_000) // admission: enqueues past 1,000 queued are refused
///         .order(Order::Lifo) // under overload, the newest requests first
///         .drop_after(Duration::from_millis(500))
///         .handler(handler::each(|page: String, _cx| {
///             let _ = page.len();
///         })),
/// )?;
/// assert_eq!(sink.threshold(), Some(1_000));
/// rt.shutdown();
/// # Ok::<(), seda::BuildError>(())
/// ```
pub struct StageBuilder<E: Event> {
    pub(crate) name: String,
    pub(crate) handler: Option<Box<dyn Handler<E>>>,
    pub(crate) config: StageConfig,
    pub(crate) predicates: Vec<Predicate<E>>,
    pub(crate) controller: Option<Box<dyn AdmissionController>>,
    pub(crate) terminator: Option<Box<dyn Terminator>>,
    pub(crate) knobs: Vec<KnobSlot>,
    pub(crate) on_drop: Option<DropHook<E>>,
}

impl<E: Event> fmt::Debug for StageBuilder<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StageBuilder")
            .field("name", &self.name)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl<E: Event> StageBuilder<E> {
    /// The event handler (required).
    pub fn handler(mut self, handler: impl Handler<E>) -> Self {
        self.handler = Some(Box::new(handler));
        self
    }

    /// Initial number of worker threads of the stage's own pool.
    pub fn threads(mut self, n: usize) -> Self {
        self.config.threads = Some(n);
        self
    }

    /// Bounds of the stage's own pool: its sizer keeps the worker count within them.
    ///
    /// # Examples
    ///
    /// ```
    /// use seda::{Runtime, Stage, handler};
    ///
    /// let rt = Runtime::start()?;
    /// rt.stage(
    ///     Stage::builder("db")
    ///         .threads(2)
    ///         .thread_bounds(1, 8)
    ///         .handler(handler::each(|_: u64, _cx| {})),
    /// )?;
    /// assert_eq!(rt.stats().stages[0].threads_max, 8);
    /// rt.shutdown();
    /// # Ok::<(), seda::BuildError>(())
    /// ```
    pub fn thread_bounds(mut self, min: usize, max: usize) -> Self {
        self.config.min_threads = Some(min);
        self.config.max_threads = Some(max);
        self
    }

    /// What sizes the stage's own pool (SEDA's heuristic by default; see [`crate::sizer`]).
    pub fn sizer(mut self, sizer: crate::SizerConfig) -> Self {
        self.config.sizer = Some(sizer);
        self
    }

    /// Largest batch handed to the handler (0: everything queued).
    pub fn batch(mut self, max: usize) -> Self {
        self.config.batch = Some(max);
        self
    }

    /// Queue length limit: enqueues beyond it are rejected with `QueueFull` (0: unbounded;
    /// a queued stage without one gets [`DEFAULT_THRESHOLD`](crate::DEFAULT_THRESHOLD)).
    pub fn threshold(mut self, limit: usize) -> Self {
        self.config.threshold = Some(limit);
        self
    }

    /// Dequeue order (FIFO by default).
    pub fn order(mut self, order: Order) -> Self {
        self.config.order = Some(order);
        self
    }

    /// Token-bucket admission: `rate_per_s` sustained, bursts up to `depth`.
    pub fn rate_limit(mut self, rate_per_s: f64, depth: f64) -> Self {
        self.config.rate_limit = Some(RateLimitConfig { rate_per_s, depth });
        self
    }

    /// Drops events that waited longer than `after` in the queue (FAIR07's selective dropping).
    pub fn drop_after(mut self, after: std::time::Duration) -> Self {
        self.config.drop_after_ms = Some(after.as_millis().try_into().unwrap_or(u64::MAX));
        self
    }

    /// Runs on the shared pool of domain `name` instead of an own pool.
    pub fn domain(mut self, name: impl Into<String>) -> Self {
        self.config.domain = Some(name.into());
        self
    }

    /// Runs the handler on the enqueuing thread: no queue hop, same admission and stats.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::{Mutex, mpsc};
    /// use seda::{Runtime, Stage, handler};
    ///
    /// let rt = Runtime::start()?;
    /// let (tx, rx) = mpsc::channel();
    /// let tx = Mutex::new(tx);
    /// let sink = rt.stage(Stage::builder("parse").inline().handler(handler::each(
    ///     move |_: u8, _cx| tx.lock().unwrap().send(std::thread::current().id()).unwrap(),
    /// )))?;
    /// sink.enqueue(1).expect("admitted");
    /// // Handled on this thread, before `enqueue` returned.
    /// assert_eq!(rx.try_recv()?, std::thread::current().id());
    /// rt.shutdown();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn inline(mut self) -> Self {
        self.config.inline = Some(true);
        self
    }

    /// Any other setting, as in the configuration file: the fields set in `config` replace
    /// the builder's.
    ///
    /// # Examples
    ///
    /// ```
    /// use seda::{Runtime, Stage, StageConfig, handler};
    ///
    /// let rt = Runtime::start()?;
    /// let settings = StageConfig { threshold: Some(50), batch: Some(1), ..Default::default() };
    /// let sink = rt.stage(
    ///     Stage::builder("work")
    ///         .config(settings)
    ///         .handler(handler::each(|_: u8, _cx| {})),
    /// )?;
    /// assert_eq!(sink.threshold(), Some(50));
    /// rt.shutdown();
    /// # Ok::<(), seda::BuildError>(())
    /// ```
    pub fn config(mut self, config: StageConfig) -> Self {
        self.config = self.config.overlaid(&config);
        self
    }

    /// Adds an admission predicate, checked on every enqueue in the enqueuer's thread, before
    /// the token bucket and the controller: `Err(reason)` turns the event away with `reason`.
    ///
    /// # Panics
    ///
    /// The builder does not; a predicate that panics unwinds into the thread that enqueued
    /// (see [`Sink`](crate::Sink)'s "Panics").
    ///
    /// # Examples
    ///
    /// ```
    /// use seda::{RejectReason, Runtime, Stage, handler};
    ///
    /// let rt = Runtime::start()?;
    /// let sink = rt.stage(
    ///     Stage::builder("upload")
    ///         .admit_if(|body: &Vec<u8>| {
    ///             if body.len() <= 1024 { Ok(()) } else { Err(RejectReason::Limit) }
    ///         })
    ///         .handler(handler::each(|_: Vec<u8>, _cx| {})),
    /// )?;
    /// assert!(sink.enqueue(vec![0; 10]).is_ok());
    /// assert_eq!(sink.enqueue(vec![0; 4096]).unwrap_err().reason, RejectReason::Limit);
    /// rt.shutdown();
    /// # Ok::<(), seda::BuildError>(())
    /// ```
    pub fn admit_if(
        mut self,
        predicate: impl Fn(&E) -> Result<(), RejectReason> + Send + Sync + 'static,
    ) -> Self {
        self.predicates.push(Box::new(predicate));
        self
    }

    /// Attaches an adaptive admission controller (response time, class, concurrency limit...).
    /// An `admission` table in the configuration file for this stage replaces it.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::collections::BTreeMap;
    /// use seda::{Runtime, Stage, handler};
    ///
    /// let rt = Runtime::start()?;
    /// let target = BTreeMap::from([("target_s".to_string(), 0.5)]);
    /// let controller = seda_control::build_admission("response_time", &target)?;
    /// rt.stage(
    ///     Stage::builder("work")
    ///         .admission(controller)
    ///         .handler(handler::each(|_: u64, _cx| {})),
    /// )?;
    /// let stats = rt.stats();
    /// let controller = stats.stages[0].controller.as_ref().map(|c| c.name.as_ref());
    /// assert_eq!(controller, Some("response_time"));
    /// rt.shutdown();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn admission(mut self, controller: Box<dyn AdmissionController>) -> Self {
        self.controller = Some(controller);
        self
    }

    /// Makes the stage terminable (SERT06): every control tick, `terminator` chooses a
    /// running-time threshold and the runtime cancels, as terminated, the stage's requests
    /// (events with a [`Meta`](crate::Meta)) that have been in its handler longer. The handler
    /// must check [`CancelToken::checkpoint`](crate::CancelToken::checkpoint) at safe points
    /// and answer a terminated request itself. Running time counts from the start of the
    /// handler's batch: give terminable stages batch 1 unless a batch is one piece of work.
    /// Terminate only work that can be abandoned whole: reads, or writes whose transaction
    /// rolls back.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::collections::BTreeMap;
    /// use seda::{Meta, Runtime, Stage, handler};
    ///
    /// let rt = Runtime::start()?;
    /// let bounds = BTreeMap::from([("upper_s".to_string(), 2.0)]);
    /// let terminator = seda_control::terminate::build("sert", &bounds)?;
    /// rt.stage(
    ///     Stage::builder("search")
    ///         .batch(1)
    ///         .terminate(terminator)
    ///         .handler(handler::each(|(meta, _query): (Meta, String), _cx| {
    ///             for _step in 0..3 {
    ///                 if meta.cancel_token().checkpoint().is_err() {
    ///                     return; // answer the request as terminated, and stop
    ///                 }
    ///                 // ... one step of the search ...
    ///             }
    ///         })),
    /// )?;
    /// assert!(rt.stats().stages[0].termination.is_some());
    /// rt.shutdown();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn terminate(mut self, terminator: Box<dyn Terminator>) -> Self {
        self.terminator = Some(terminator);
        self
    }

    /// Binds `knob` to the stage's admission controller when the stage is built: the handler
    /// reads the controller's output through it (the degradation quality...).
    ///
    /// # Errors
    ///
    /// The builder returns none; [`Runtime::stage`](crate::Runtime::stage) then fails with
    /// [`BuildError::Knob`](crate::BuildError::Knob) if the controller, chosen in code or in
    /// the configuration file, has no such knob.
    ///
    /// # Examples
    ///
    /// ```
    /// use seda::{Runtime, Stage, handler};
    /// use seda::{Knob, Quality};
    ///
    /// let rt = Runtime::start().unwrap();
    /// let quality = Knob::<Quality>::new();
    /// let q = quality.clone();
    /// let built = rt.stage(
    ///     Stage::builder("render")
    ///         .knob(&quality)
    ///         .handler(handler::each(move |_: u64, _| assert!(q.get() <= 1.0))),
    /// );
    /// // No controller publishes a quality here: the stage is refused, not run at full quality.
    /// assert!(built.unwrap_err().to_string().contains("quality"));
    /// ```
    pub fn knob<K: KnobKind>(mut self, knob: &Knob<K>) -> Self {
        self.knobs.push(knob.slot());
        self
    }

    /// Called with each event the stage drops after admitting it (expired, cancelled, or left
    /// queued when a shutdown gives up), so the request can still be answered (e.g. with a 503).
    /// A hook that panics is caught: the worker goes on.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::{Mutex, mpsc};
    /// use seda::{Meta, RejectReason, Runtime, Stage, handler};
    ///
    /// let rt = Runtime::start()?;
    /// let (started, is_busy) = mpsc::channel();
    /// let (release, go) = mpsc::channel::<()>();
    /// let (dropped, was_dropped) = mpsc::channel();
    /// let (started, go, dropped) = (Mutex::new(started), Mutex::new(go), Mutex::new(dropped));
    /// let sink = rt.stage(
    ///     Stage::builder("work")
    ///         .threads(1)
    ///         .thread_bounds(1, 1)
    ///         .on_drop(move |(_, n): (Meta, u32), reason| {
    ///             dropped.lock().unwrap().send((n, reason)).unwrap(); // answer it with a 503
    ///         })
    ///         .handler(handler::each(move |(_, n): (Meta, u32), _cx| {
    ///             if n == 0 {
    ///                 started.lock().unwrap().send(()).unwrap();
    ///                 go.lock().unwrap().recv().unwrap(); // hold the stage's one worker
    ///             }
    ///         })),
    /// )?;
    /// sink.enqueue((Meta::new(), 0)).expect("admitted");
    /// is_busy.recv()?;
    /// let meta = Meta::new();
    /// let client = meta.cancel_token().clone();
    /// sink.enqueue((meta, 1)).expect("admitted");
    /// client.cancel(); // the client goes away while its request waits
    /// release.send(())?;
    /// assert_eq!(was_dropped.recv()?, (1, RejectReason::Expired));
    /// rt.shutdown();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn on_drop(mut self, hook: impl Fn(E, RejectReason) + Send + Sync + 'static) -> Self {
        self.on_drop = Some(Box::new(hook));
        self
    }
}
