//! seda's overload control for any [tower] service: a [`Layer`](tower_layer::Layer) that puts
//! one of seda's admission controllers in front of an axum, tonic or hyper service.
//!
//! tower's own middleware bounds a service with fixed numbers: `ConcurrencyLimit` waits for one
//! of N permits, `LoadShed` rejects when the inner service is not ready, `Timeout` gives up
//! after a fixed time. None of them knows what response time the operator wants. This layer
//! measures every response's time and lets a controller decide, per request, whether to admit
//! it: the response-time controller of Welsh and Culler (WC03: a token rate steered toward
//! a 90th-percentile target), its class-aware form, or the peers (Vegas, Gradient2, AIMD,
//! Envoy's gradient, CoDel). A request turned away costs almost nothing and gets an explicit
//! answer: `503` with `Retry-After` for HTTP, or an [`Overloaded`] error.
//!
//! # Example
//!
//! ```
//! use std::time::Duration;
//! use axum::{Router, routing::get};
//! use seda_tower::SedaLayer;
//!
//! // Keep the 90th percentile of response times under 200 ms; reject the excess with 503.
//! let layer = SedaLayer::response_time(Duration::from_millis(200))?.http();
//! let stats = layer.stats(); // read it from a metrics endpoint
//! let app: Router = Router::new().route("/", get(|| async { "hello" })).layer(layer);
//! # let _ = (app, stats);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # What the controller sees
//!
//! - `admit` for every request, with the class your [`Classify`] gives it (0 by default);
//! - the time from admission to the response as the response time, when the inner service
//!   answers `Ok` (any status: a 500 is still a response the client waited for);
//! - a drop, never a latency sample, when the inner service fails or the response future is
//!   dropped unfinished (the client went away, an outer `Timeout` fired);
//! - `tick` on the first request after each [`DEFAULT_TICK`] (the layer owns no thread).
//!
//! There is no queue in front of the service: put the layer outermost so rejected requests
//! cost nothing. [`SedaLayer::response_time`] treats the requests in flight in the inner
//! service as its queue and bounds them by Little's law ([`QueueModel::InFlight`]); any other
//! controller ([`SedaLayer::new`]) sees each request dequeued as it is admitted.
//!
//! # Termination
//!
//! Admission decides at the door, before anyone knows how long a request will take.
//! [`SedaLayer::terminate`] adds the other lever of SERT06: an admitted request still running
//! past a terminator's threshold has its inner future dropped and is answered `503` with
//! `x-seda-reject: terminated` (a [`Terminated`] error for non-HTTP services), counted in
//! [`LayerStats::terminated`]. Dropping the future is the safe release: what it held (a pooled
//! connection, a lock guard, an uncommitted transaction) is released by its `Drop`. The
//! threshold is SERT's adaptive one, a fixed statement timeout or a percentile of running times
//! (`seda_control::terminate`). It is off unless asked.
//!
//! ```
//! use std::time::Duration;
//! use seda_control::terminate::{SertConfig, SertThreshold};
//! use seda_tower::SedaLayer;
//!
//! // Let requests run up to 10 s at light load, cut them from 0.2 s as the loss grows.
//! let sert = SertThreshold::new(SertConfig::new(Duration::from_millis(200), Duration::from_secs(10)));
//! let layer = SedaLayer::response_time(Duration::from_millis(500))?.terminate(sert)?.http();
//! # let _ = layer;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Deadlines
//!
//! [`HttpSedaLayer::deadlines`] reads each request's remaining budget (`grpc-timeout` or
//! [`DEADLINE_HEADER`], else [`Deadlines::default_budget`]), answers `504` with
//! `x-seda-reject: deadline` at the door when the budget is spent or below the 10th percentile
//! of recent response times, drops the future of an admitted request still running at its
//! deadline (counted in [`DeadlineStats::cut`]), and puts a [`RequestDeadline`] in the
//! request's extensions, whose [`propagate`](RequestDeadline::propagate) sends the next tier
//! what is left. It is off unless asked.
//!
//! ```
//! use std::time::Duration;
//! use axum::{Extension, Router, routing::get};
//! use seda_tower::{Deadlines, RequestDeadline, SedaLayer};
//!
//! let layer = SedaLayer::response_time(Duration::from_millis(200))?
//!     .http()
//!     .deadlines(Deadlines::new().default_budget(Duration::from_secs(2)))?;
//! let app: Router = Router::new()
//!     .route("/", get(|Extension(deadline): Extension<RequestDeadline>| async move {
//!         let mut call = http::Request::get("http://backend/").body(()).unwrap();
//!         let left = deadline.propagate(call.headers_mut()); // x-seda-deadline-ms
//!         format!("{} ms left for the backend", left.as_millis())
//!     }))
//!     .layer(layer);
//! # let _ = app;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # gRPC
//!
//! [`SedaLayer::grpc`] answers as a gRPC server should. A rejected call gets a trailers-only
//! response (HTTP 200, `content-type: application/grpc`) with `grpc-status: 8`
//! (`RESOURCE_EXHAUSTED`), a `grpc-message` naming the reason, and [`RETRY_PUSHBACK_HEADER`]
//! (`grpc-retry-pushback-ms`, gRPC A6), the wait the HTTP form would send as `Retry-After`,
//! in milliseconds. The HTTP form's 503 would reach a gRPC client as `UNAVAILABLE`, which
//! reads as "the server is down".
//!
//! A call's deadline is its [`GRPC_TIMEOUT`] header: an admitted call still running when it
//! passes has its inner future dropped and is answered `DEADLINE_EXCEEDED` (tonic's own server
//! would answer `CANCELLED`); the controller sees a drop. The work stops at the deadline
//! whether or not the client's cancellation arrives; a tonic client enforces the same timeout
//! itself and reports its own `CANCELLED` at that moment, so the answer is read by clients
//! that wait for it (a proxy, another gRPC stack). A call cut by
//! [termination](#termination) is answered `RESOURCE_EXHAUSTED` with the pushback, not
//! `DEADLINE_EXCEEDED`: its client's deadline has not passed, the server cut it because it is
//! overloaded, and a client may retry it after the pushback (`DEADLINE_EXCEEDED` would tell
//! the client its time is up, and a retry pointless).
//!
//! ```
//! use std::time::Duration;
//! use seda_tower::SedaLayer;
//!
//! let layer = SedaLayer::response_time(Duration::from_millis(200))?.grpc();
//! // In front of a tonic server:
//! // tonic::transport::Server::builder().layer(layer).add_service(svc).serve(addr).await?;
//! # let _ = layer;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Criticality
//!
//! When some requests must be cut, cut the ones that matter least: [`CriticalityLayer`] sets
//! each request's [`Criticality`] (Google's four levels, and a cohort rotated over users) at
//! the trusted edge, from the route or session, never from a client's header unless the
//! caller is a trusted tier; [`SedaLayer::prioritized`] then cuts sheddable first, cohort by
//! cohort, and critical last. The level reaches the handler in the request's extensions and
//! in [`CRITICALITY_HEADER`], which [`forward_criticality`] copies onto outgoing calls.
//!
//! [tower]: https://docs.rs/tower

#![warn(missing_docs)]

mod admission;
mod budget;
mod classify;
mod clock;
mod criticality;
mod deadline;
mod error;
mod form;
mod grpc;
mod http;
mod lag;
mod layer;
mod running;
mod service;
mod terminate;

pub use admission::{DEFAULT_TICK, LayerStats, QueueModel, StatsHandle};
pub use budget::{
    BudgetError, DEADLINE, DEADLINE_HEADER, DeadlineStats, Deadlines, MAX_BUDGET,
    PROPAGATION_ALLOWANCE, RequestDeadline, budget_from_headers, parse_deadline_ms,
    parse_grpc_timeout,
};
pub use classify::{Classify, SingleClass};
pub use criticality::{
    ByCriticality, CRITICALITY_HEADER, CriticalityLayer, SetCriticality, criticality_of,
    forward_criticality,
};
pub use error::{Overloaded, Terminated};
pub use form::{AnsweredFuture, Answering, AnsweringLayer};
pub use grpc::{
    GRPC_MESSAGE, GRPC_STATUS, GRPC_TIMEOUT, GrpcResponseFuture, GrpcSeda, GrpcSedaLayer,
    RETRY_PUSHBACK_HEADER,
};
pub use http::{HttpResponseFuture, HttpSeda, HttpSedaLayer, REJECT_HEADER, TERMINATED};
pub use lag::ArrivalLag;
pub use layer::{DEFAULT_RETRY_AFTER_S, SedaLayer};
pub use seda_control::RejectReason;
pub use seda_control::criticality::{Cohorts, Criticality, Level};
pub use service::{BoxError, ResponseFuture, Seda};
pub use terminate::{TERMINATION_PERIOD, TerminationStats};
