//! [`Answering`]: the service an [`AnsweringLayer`](super::AnsweringLayer) makes.

use std::marker::PhantomData;
use std::task::{Context, Poll};

use http::{Request, Response};
use seda_control::SharedRetryAfter;
use tower_service::Service;

use super::{AnsweredFuture, Form};
use crate::classify::Classify;
use crate::service::Seda;

/// A service behind admission control that answers refusals itself, as its form (HTTP or
/// gRPC) writes them (`HttpSeda`, `GrpcSeda`).
pub struct Answering<S, C, F> {
    seda: Seda<S, C>,
    /// Shared by every service the layer makes, so it counts all their refusals.
    retry: SharedRetryAfter,
    form: PhantomData<fn() -> F>,
}

impl<S, C, F> Answering<S, C, F> {
    pub(crate) fn new(seda: Seda<S, C>, retry: SharedRetryAfter) -> Self {
        Answering {
            seda,
            retry,
            form: PhantomData,
        }
    }
}

impl<S: Clone, C: Clone, F> Clone for Answering<S, C, F> {
    fn clone(&self) -> Self {
        Answering::new(self.seda.clone(), self.retry.clone())
    }
}

impl<S, C, B, RB, F> Service<Request<B>> for Answering<S, C, F>
where
    S: Service<Request<B>, Response = Response<RB>>,
    RB: Default,
    C: Classify<Request<B>>,
    F: Form,
{
    type Response = Response<RB>;
    type Error = S::Error;
    type Future = AnsweredFuture<S::Future, RB, F>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.seda.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        F::call(&mut self.seda, &self.retry, request)
    }
}
