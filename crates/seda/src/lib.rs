//! A staged event-driven runtime (SEDA) for services that stay well-conditioned under overload.
//!
//! A service is a graph of *stages*. Each stage has an event queue guarded by admission control,
//! an event handler, and a pool of worker threads sized by a controller. An enqueue can fail:
//! the caller gets its event back with the reason ([`Rejected`]) and decides what to do (answer
//! 503, degrade, wait). Every stage measures queueing, service and response time, so controllers
//! act on measurements.
//!
//! # A tour
//!
//! ```
//! use seda::{Runtime, Stage, handler};
//! use std::sync::mpsc;
//!
//! let rt = Runtime::start()?;
//! let (done_tx, done_rx) = mpsc::channel();
//! let done_tx = std::sync::Mutex::new(done_tx);
//!
//! // The last stage first, so earlier stages can capture its sink.
//! let square = rt.stage(Stage::builder("square").handler(handler::each(move |n: u64, _cx| {
//!     done_tx.lock().unwrap().send(n * n).unwrap();
//! })))?;
//! let parse = rt.stage(
//!     Stage::builder("parse")
//!         .threshold(100) // admission: at most 100 queued events
//!         .handler(handler::each(move |text: String, _cx| {
//!             if let Ok(n) = text.trim().parse::<u64>() {
//!                 let _ = square.enqueue(n); // a full queue hands the event back
//!             }
//!         })),
//! )?;
//!
//! parse.enqueue("12".to_string()).expect("admitted");
//! assert_eq!(done_rx.recv().unwrap(), 144);
//! let report = rt.shutdown(); // drains every queue, joins every thread
//! assert!(report.drained);
//! # Ok::<(), seda::BuildError>(())
//! ```
//!
//! # Main types
//!
//! - [`Runtime`]: adds stages, looks up sinks by name, snapshots [`stats`](Runtime::stats),
//!   dumps the [`graph`](Runtime::graph), shuts down cleanly.
//! - [`Stage::builder`]: a stage's handler, pool, batch size, queue threshold, order, rate limit,
//!   selective dropping, adaptive admission controller, and whether it runs queued (own pool),
//!   on a shared *domain* pool, or *inline* on the caller's thread.
//! - [`Sink`]: `enqueue`, `enqueue_many` (all or none), `enqueue_lossy`, `enqueue_timeout`
//!   (backpressure) and `enqueue_prepare` (transactional).
//! - [`Meta`] and [`Event`]: per-request id, birth time, class, deadline and cancellation,
//!   inherited by derived events.
//! - [`Config`]: stage and pool settings from a TOML file, with single-key overrides.
//!
//! # Overload
//!
//! Nothing is unbounded: a queued stage's threshold defaults to [`DEFAULT_THRESHOLD`]. Admission
//! runs in the enqueuer's thread, in this order: closed, expired (deadline passed or client gone),
//! predicates, token bucket, adaptive controller, queue threshold. Admitted events whose deadline
//! passes, whose client cancels, or that wait longer than `drop_after` are dropped at dequeue
//! (reason `Expired`, handed to the stage's `on_drop` hook so the request can still be answered),
//! never served. Rejected and dropped events are counted, never used as latency samples.
//!
//! # Panics
//!
//! A handler that panics fails only the event it was handling (with [`handler::each`]); the
//! stage keeps running and counts the panic.
//!
//! # Shutdown
//!
//! [`Runtime::shutdown`] stops admitting events from outside the graph, lets hand-offs between
//! stages continue until every queue is empty and no handler runs, then stops and joins every
//! thread: every admitted event is handled or dropped exactly once.

#![warn(missing_docs)]

use seda_control::clock;
mod config;
mod contended;
mod cpu;
mod erased;
mod error;
pub mod global;
mod graph;
pub mod handler;
mod handoff;
mod meta;
mod pool;
pub mod processor;
mod queue;
mod runtime;
mod shared;
mod sink;
pub mod sizer;
mod stage;
pub mod stats;
mod sync;

pub use config::{
    AdmissionConfig, BatchControllerConfig, Config, ConfigError, OverrideProblem,
    PoolControllerConfig, PoolSettings, RateLimitConfig, RuntimeConfig, StageConfig,
    TerminateConfig,
};
pub use contended::{Contended, ContendedSnapshot, CulpritPolicy, Held};
pub use cpu::{server_timing_cpu, thread_cpu_time};
pub use error::{BuildError, Rejected};
pub use global::GlobalControlConfig;
pub use graph::{Graph, GraphEdge, GraphNode};
pub use handler::{Cx, Handler};
pub use meta::{CancelReason, CancelToken, Event, Meta};
pub use processor::EmulatedProcessor;
pub use queue::Order;
pub use runtime::{
    DEFAULT_BATCH, DEFAULT_THRESHOLD, PoolSnapshot, Runtime, RuntimeBuilder, RuntimeSnapshot,
    ShutdownReport,
};
pub use seda_control::{
    AdmissionController, InvalidConfig, Knob, KnobKind, Quality, RejectReason, Time,
};
pub use sink::{Prepared, Sink};
pub use sizer::SizerConfig;
pub use stage::{Stage, StageBuilder};
pub use stats::TerminationSnapshot;

/// The README's example, compiled and run as a doctest so it cannot rot.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct ReadmeExample;
