//! [`GrpcSedaLayer`]: the layer for gRPC servers (tonic's among them).

use super::service::GrpcForm;
use crate::classify::SingleClass;
use crate::form::AnsweringLayer;
use crate::layer::SedaLayer;

/// [`SedaLayer`] for gRPC services: a rejected call is answered at once, without reaching
/// the service, with `RESOURCE_EXHAUSTED` and `grpc-retry-pushback-ms` in a trailers-only
/// response; a call past its `grpc-timeout` is answered `DEADLINE_EXCEEDED` (see the
/// [module docs](crate#grpc)).
pub type GrpcSedaLayer<C = SingleClass> = AnsweringLayer<C, GrpcForm>;

impl<C> SedaLayer<C> {
    /// The same layer answering gRPC calls: a rejection is `RESOURCE_EXHAUSTED` with
    /// `grpc-retry-pushback-ms` (the wait [`http`](Self::http) would send as `Retry-After`,
    /// in milliseconds: [`DEFAULT_RETRY_AFTER_S`](crate::DEFAULT_RETRY_AFTER_S) while refusals are few, up to 24 x that
    /// while the layer refuses more calls than it admits), a termination is
    /// `RESOURCE_EXHAUSTED` with the same pushback, and a call whose `grpc-timeout` passes
    /// while it runs is cut and answered `DEADLINE_EXCEEDED`.
    pub fn grpc(self) -> GrpcSedaLayer<C> {
        AnsweringLayer::new(self)
    }
}
