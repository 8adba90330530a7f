//! The gRPC form of the layer: [`GrpcSedaLayer`] answers as a gRPC server should.
//!
//! Why a form of its own: the HTTP form's `503` reaches a gRPC client as `UNAVAILABLE` (the
//! HTTP-to-gRPC mapping), which callers read as "the server is down", and a tower error
//! becomes `INTERNAL` or `UNKNOWN` in tonic (tonic#1616, #2189 ask for RESOURCE_EXHAUSTED).
//! Here a rejection is a trailers-only response ([`status`]) with `RESOURCE_EXHAUSTED` and
//! gRPC A6's `grpc-retry-pushback-ms`; `timeout` reads the call's `grpc-timeout`.

mod layer;
mod service;
mod status;
mod timeout;

pub use layer::GrpcSedaLayer;
pub use service::{GrpcResponseFuture, GrpcSeda};
pub use status::{GRPC_MESSAGE, GRPC_STATUS, RETRY_PUSHBACK_HEADER};
pub use timeout::GRPC_TIMEOUT;
