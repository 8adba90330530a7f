//! [`GrpcSedaLayer`]: the layer for gRPC servers (tonic's among them).

use tower_layer::Layer;

use super::service::GrpcSeda;
use crate::classify::SingleClass;
use crate::layer::{DEFAULT_RETRY_AFTER_S, SedaLayer};
use crate::{ArrivalLag, StatsHandle};
use seda_control::SharedRetryAfter;

/// [`SedaLayer`] for gRPC services: a rejected call is answered at once, without reaching
/// the service, with `RESOURCE_EXHAUSTED` and `grpc-retry-pushback-ms` in a trailers-only
/// response; a call past its `grpc-timeout` is answered `DEADLINE_EXCEEDED` (see the
/// [module docs](crate#grpc)).
#[derive(Clone)]
pub struct GrpcSedaLayer<C = SingleClass> {
    inner: SedaLayer<C>,
    /// Shared by every service the layer makes, so it counts all their refusals.
    retry: SharedRetryAfter,
}

impl<C> SedaLayer<C> {
    /// The same layer answering gRPC calls: a rejection is `RESOURCE_EXHAUSTED` with
    /// `grpc-retry-pushback-ms` (the wait [`http`](Self::http) would send as `Retry-After`,
    /// in milliseconds: [`DEFAULT_RETRY_AFTER_S`] while refusals are few, up to 24 x that
    /// while the layer refuses more calls than it admits), a termination is
    /// `RESOURCE_EXHAUSTED` with the same pushback, and a call whose `grpc-timeout` passes
    /// while it runs is cut and answered `DEADLINE_EXCEEDED`.
    pub fn grpc(self) -> GrpcSedaLayer<C> {
        GrpcSedaLayer {
            inner: self,
            retry: SharedRetryAfter::around(DEFAULT_RETRY_AFTER_S),
        }
    }
}

impl<C> GrpcSedaLayer<C> {
    /// Sets the pushback while refusals are few, in seconds (sent in milliseconds).
    pub fn retry_after(mut self, seconds: u32) -> Self {
        self.retry = SharedRetryAfter::around(seconds);
        self
    }

    /// A handle to read the layer's counters and controller state.
    pub fn stats(&self) -> StatsHandle {
        self.inner.stats()
    }

    /// See [`SedaLayer::arrival_lag`].
    pub fn arrival_lag(&self) -> ArrivalLag {
        self.inner.arrival_lag()
    }
}

impl<S, C: Clone> Layer<S> for GrpcSedaLayer<C> {
    type Service = GrpcSeda<S, C>;

    fn layer(&self, inner: S) -> Self::Service {
        GrpcSeda::new(self.inner.layer(inner), self.retry.clone())
    }
}

impl<C> std::fmt::Debug for GrpcSedaLayer<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GrpcSedaLayer")
            .field("stats", &self.stats())
            .field("retry_after_s", &self.retry.seconds())
            .finish()
    }
}
