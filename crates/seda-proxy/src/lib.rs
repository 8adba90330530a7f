//! `seda proxy`: a reverse proxy that gives any HTTP service seda's overload control.
//!
//! Most services will not be rewritten as seda stages. Put this proxy in front instead: each
//! route (a path prefix) gets its own response-time controller (WC03's p90 controller on a
//! token rate), so only the route that is the bottleneck sheds load, and a request turned away
//! gets `503` with `Retry-After` at once instead of waiting in a queue it would time out in.
//!
//! Each route is a stage without a queue: the proxy forwards asynchronously, so what the stage
//! adds is admission control and accounting ([`seda_tower`]'s layer), in front of a pool of
//! HTTP/1.1 connections to each upstream. Bodies stream both ways; hop-by-hop headers are dropped; the client's
//! address is appended to `X-Forwarded-For`; the wait for an upstream's response head is
//! bounded (504 after it; 502 when the upstream cannot be reached).
//!
//! Each route may give its requests a criticality, forwarded upstream in `x-seda-criticality`;
//! a client's own header is honoured only from `trusted_tiers` ([`criticality`]).
//!
//! A refusal is decided before anything reads the request's body, and answered by the
//! connection's refusal policy ([`ProxyConfig::refusal`], `seda_control::refusal`): by
//! default a connection's first 10 refusals a second go out at once and the rest are paced to
//! 10 a second by a timer, so clients that resend at once on a 503 cannot keep the proxy busy
//! refusing them (`bench/retry-storm.sh` compares the policies; its table is in
//! `docs/benchmarks.md`).
//!
//! Behind a load balancer, [`serve_agent`] answers HAProxy's `agent-check` from the share of
//! requests the routes serve, so a replica that sheds load gets less of it.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
//! use std::time::Duration;
//! use seda_proxy::{Proxy, ProxyConfig};
//!
//! let config = ProxyConfig::single(
//!     "127.0.0.1:8080".parse()?,
//!     "http://127.0.0.1:9000",
//!     Some(Duration::from_millis(500)),
//! )?;
//! Proxy::bind(config).await?.serve().await?;
//! # Ok(()) }
//! ```
//!

#![warn(missing_docs)]

mod agent;
mod body;
mod config;
pub mod criticality;
mod forward;
mod lag;
mod pacing;
mod pool;
mod server;

pub use agent::{routes_sample, serve_agent};
pub use body::{Frames, ProxyBody};
pub use config::{
    ConfigError, DEFAULT_HEADER_READ_TIMEOUT, DEFAULT_MAX_CONNECTIONS, DEFAULT_UPSTREAM_TIMEOUT,
    ProxyConfig, RouteConfig,
};
pub use forward::ClientAddr;
pub use lag::LagMeter;
pub use server::{LISTEN_BACKLOG, Proxy, RouteStats, listen};
