//! HTTP for seda: a hyper front end that turns requests into events, and Haboob, a static-file
//! server built as stages.
//!
//! The front end ([`HttpServer`]) accepts connections on a tokio runtime, parses requests with
//! hyper, and enqueues each one as an [`HttpRequest`] event into the first stage of a graph;
//! a stage's worker answers through the reply slot the event carries. The static service
//! ([`StaticService`]) is that graph for files: `route` and `cache` run inline on the front
//! end's threads, so a cached file costs no queue hop; misses go to the queued `file_io` stage.
//!
//! # A tour
//!
//! ```no_run
//! use seda_http::{ServeConfig, StaticServer};
//! use std::time::Duration;
//!
//! let mut config = ServeConfig::default();
//! config.statics.root = "/srv/www".into();
//! config.http.addr = "127.0.0.1:0".parse()?;
//! let server = StaticServer::start(config)?;
//! println!("listening on http://{}", server.local_addr());
//! if let Some(admin) = server.admin_addr() {
//!     println!("dashboard, /metrics and /_seda/stats on http://{admin}/");
//! }
//! let done = server.shutdown(Duration::from_secs(5));
//! assert_eq!(done.http.connections_cut, 0);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! To put another stage graph behind the front end, give [`HttpServer::start`] the sink of its
//! first stage; handlers answer with [`HttpRequest::respond`].
//!
//! # Main types
//!
//! - [`HttpServer`]: the front end; [`HttpConfig`] holds its limits.
//! - [`HttpRequest`]: the event (a [`seda::Meta`] born at header parse, the head, the body,
//!   the reply slot); its [`RequestHead`] builds a header map only when asked for one.
//! - [`StaticService`]: Haboob's stages; [`statics::Cache`] is its byte-bounded page cache
//!   (S3-FIFO or LRU); [`StaticServer`] assembles runtime, stages and front end.
//!
//! The lab's services of stated cost (WC03 Section 4.5's page, the hold service) and the
//! SPECweb99 file set are built on these parts in the `seda-testbed` crate.
//!
//! # Overload
//!
//! Nothing waits in an unbounded line. The kernel's listen backlog is drained as fast as
//! connections arrive; past `max_connections` a connection gets `503` and is closed. A request
//! the first stage does not admit is answered `503 Service Unavailable` with `Retry-After` at
//! once; the wait grows while refusals outnumber admissions, so clients that honour it stop
//! costing the server a refusal each ([`seda_control::RetryAfter`]). A request admitted and
//! then dropped (expired, cancelled, shutdown) is answered 503 too.
//!
//! HTTP/1.1 with keep-alive and pipelining; HTTP/2 without TLS (h2c, prior knowledge) on the
//! same port when `h2c` is set.
//!
//! # Limits
//!
//! Request-head size and header count (431), head read time (a slowloris connection is cut off
//! before it becomes an event, so it costs no worker), body size (413), keep-alive idle time,
//! open connections; all in [`HttpConfig`].
//!
//! # Cancellation
//!
//! When a client disconnects, hyper drops the request's future; a guard then cancels the
//! request's [`seda::CancelToken`], and the stages drop its remaining work at dequeue.
//!
//! # Shutdown
//!
//! [`HttpServer::shutdown`] stops accepting, lets in-flight requests finish and keep-alive
//! connections close after their current answer, waits a bounded time, then cuts the rest.

#![warn(missing_docs)]

pub mod admin;
mod body;
pub mod config;
pub mod percent;
mod request;
mod serve;
mod server;
pub mod statics;
pub mod wire;

pub use admin::{AdminServer, AdminSources, ExtraStats, FrontendStats};
pub use body::Body;
pub use config::{ConfigError, HttpConfig, Policy, ServeConfig, StaticConfig};
pub use request::{
    Answer, HttpRequest, REASON_HEADER, Reply, RequestHead, overloaded, terminated, text,
};
pub use serve::{ServerShutdown, StartError, StaticServer};
pub use server::{HttpServer, ShutdownSummary};
pub use statics::{StaticError, StaticService};
