//! [`AnsweringLayer`]: [`SedaLayer`] with a [`Form`] that answers refusals itself.

use std::fmt;
use std::marker::PhantomData;

use seda_control::SharedRetryAfter;
use tower_layer::Layer;

use super::{Answering, Form};
use crate::layer::{DEFAULT_RETRY_AFTER_S, SedaLayer};
use crate::{ArrivalLag, StatsHandle};

/// [`SedaLayer`] answering a refused request itself, as its form (HTTP or gRPC) writes it
/// ([`HttpSedaLayer`](crate::HttpSedaLayer), [`GrpcSedaLayer`](crate::GrpcSedaLayer)).
pub struct AnsweringLayer<C, F> {
    pub(crate) inner: SedaLayer<C>,
    /// Shared by every service the layer makes, so it counts all their refusals.
    retry: SharedRetryAfter,
    form: PhantomData<fn() -> F>,
}

impl<C, F> AnsweringLayer<C, F> {
    /// `inner` answering in form `F`, asking refused clients to wait
    /// [`DEFAULT_RETRY_AFTER_S`] while refusals are few.
    pub(crate) fn new(inner: SedaLayer<C>) -> Self {
        AnsweringLayer {
            inner,
            retry: SharedRetryAfter::around(DEFAULT_RETRY_AFTER_S),
            form: PhantomData,
        }
    }

    /// Sets the wait a refusal asks for while refusals are few, in seconds (HTTP's
    /// `Retry-After`; gRPC's pushback, sent in milliseconds).
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

impl<C: Clone, F> Clone for AnsweringLayer<C, F> {
    fn clone(&self) -> Self {
        AnsweringLayer {
            inner: self.inner.clone(),
            retry: self.retry.clone(),
            form: PhantomData,
        }
    }
}

impl<S, C: Clone, F> Layer<S> for AnsweringLayer<C, F> {
    type Service = Answering<S, C, F>;

    fn layer(&self, inner: S) -> Self::Service {
        Answering::new(self.inner.layer(inner), self.retry.clone())
    }
}

impl<C, F: Form> fmt::Debug for AnsweringLayer<C, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct(F::LAYER)
            .field("stats", &self.stats())
            .field("retry_after_s", &self.retry.seconds())
            .finish()
    }
}
