//! A load generator for HTTP services: closed, open and partly-open users, real workloads, and
//! latency measured honestly.
//!
//! # Tour
//!
//! Describe a run with a [`LoadConfig`]: a [`Target`] (`http://host:port/path`), a loop
//! [`Model`], optionally a [`Schedule`] that changes the number of users or the rate over time, a
//! [`Workload`](workload::Workload) and the [`ClientConfig`]. [`run`] drives it on one thread
//! (a current-thread tokio runtime and a small HTTP/1.1 client of its own) and returns a
//! [`Report`]: whole-run figures, one row per interval, one per request class and one per client.
//! `Report` prints as a human summary and serializes to JSON.
//!
//! ```no_run
//! use std::time::Duration;
//! use seda_load::{Closed, LoadConfig, Model, Target};
//!
//! # fn main() -> Result<(), seda_load::LoadError> {
//! let target = Target::parse("http://127.0.0.1:8080/index.html")?;
//! let model = Model::Closed(Closed {
//!     users: 64,
//!     think: Duration::ZERO,
//!     think_exponential: false,
//!     ramp: Duration::ZERO,
//! });
//! let mut config = LoadConfig::new(target, model)?;
//! config.duration = Duration::from_secs(5);
//! let report = seda_load::run(config)?;
//! println!("{report}");
//! # Ok(()) }
//! ```
//!
//! # Loop models
//!
//! - [`Closed`]: N users (or a schedule of N over time), each sending, waiting and thinking.
//!   Latency is from send to reply. A stalled server slows the users down, so a closed loop
//!   *under-reports* stalls: only the requests caught in the stall see it.
//! - [`Open`]: arrivals at a rate (Poisson or constant) regardless of replies. Latency is
//!   measured from the **intended** send time, so time a request spent waiting for a connection
//!   (because the server stalled) counts: no coordinated omission.
//! - [`PartlyOpen`]: sessions arrive as a Poisson process and stay for another request with
//!   probability p after each reply.
//!
//! # Workloads
//!
//! [`workload::UrlList`] (one URL or many), [`workload::SpecWeb`] (the SPECweb99 static mix as
//! Haboob's client ran it, with its never-requested-file quirk fixed), [`workload::Synthetic`]
//! (service times as a request parameter), and the [`workload::Session`] trait for stateful user
//! models that pick the next request from the previous reply.
//!
//! # Overload
//!
//! A `503` is a *rejection*, counted apart from errors; with
//! [`ClientConfig::backoff_on_503`] the user waits and starts over (on the same connection, if
//! the server kept it open). The AIMD window of SSM ([`seda_control::AimdWindow`]) can bound
//! outstanding requests ([`ClientConfig::aimd`]); under an open load it should refuse what it
//! cannot take at once, as SSM's stub does ([`ClientConfig::aimd_reject_when_full`]), rather
//! than queue it. Every request sent ends exactly once: completed, rejected, timed out, failed,
//! or still in flight when the run ends ([`record::Counts`]).
//!
//! # Bounds
//!
//! Response heads and bodies have size limits ([`ClientConfig`]); bodies are discarded as they
//! arrive through one per-thread buffer, so an idle connection holds no buffer. The open model's
//! backlog is bounded ([`Open::max_backlog`]).

#![warn(missing_docs)]

mod affinity;
mod config;
mod driver;
mod error;
mod http;
pub mod record;
mod schedule;
mod target;
mod timer;
pub mod workload;

pub use affinity::pin_to_cpu;
pub use config::{Arrivals, ClientConfig, Closed, Eager, LoadConfig, Model, Open, PartlyOpen};
pub use driver::run;
pub use error::LoadError;
#[cfg(feature = "fuzzing")]
pub use http::parse_response_in_pieces;
pub use record::{Report, jain_index};
pub use schedule::{Point, Schedule};
pub use target::{Target, parse_duration};
