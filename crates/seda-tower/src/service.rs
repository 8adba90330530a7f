//! The service [`SedaLayer`](crate::SedaLayer) makes, and its future.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use pin_project_lite::pin_project;
use seda_control::RejectReason;
use tower_service::Service;

use crate::admission::{Admission, Ticket};
use crate::classify::Classify;
use crate::error::Overloaded;

/// A boxed error, as tower's middleware returns.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A service behind admission control (made by [`SedaLayer`](crate::SedaLayer)).
#[derive(Clone)]
pub struct Seda<S, C> {
    pub(crate) inner: S,
    pub(crate) admission: Arc<Admission>,
    pub(crate) classify: C,
}

impl<S, C> Seda<S, C> {
    /// Admits a request of `class` or says why not.
    pub(crate) fn admit(&self, class: u8) -> Result<Ticket, RejectReason> {
        self.admission.admit(class)
    }
}

impl<S, C, Request> Service<Request> for Seda<S, C>
where
    S: Service<Request>,
    S::Error: Into<BoxError>,
    C: Classify<Request>,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = ResponseFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        let class = self.classify.class(&request);
        match self.admit(class) {
            Ok(ticket) => ResponseFuture::admitted(self.inner.call(request), ticket),
            Err(reason) => ResponseFuture::rejected(reason),
        }
    }
}

pin_project! {
    /// The response future of [`Seda`]: the inner future, reporting its outcome to the
    /// controller, or an immediate [`Overloaded`] error.
    pub struct ResponseFuture<F> {
        #[pin]
        state: State<F>,
    }
}

pin_project! {
    #[project = StateProj]
    enum State<F> {
        Admitted { #[pin] inner: F, ticket: Option<Ticket> },
        Rejected { reason: RejectReason },
    }
}

impl<F> ResponseFuture<F> {
    pub(crate) fn admitted(inner: F, ticket: Ticket) -> Self {
        ResponseFuture {
            state: State::Admitted {
                inner,
                ticket: Some(ticket),
            },
        }
    }

    pub(crate) fn rejected(reason: RejectReason) -> Self {
        ResponseFuture {
            state: State::Rejected { reason },
        }
    }
}

impl<F, T, E> Future for ResponseFuture<F>
where
    F: Future<Output = Result<T, E>>,
    E: Into<BoxError>,
{
    type Output = Result<T, BoxError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project().state.project() {
            StateProj::Admitted { inner, ticket } => {
                let out = ready!(inner.poll(cx));
                if let (Some(t), true) = (ticket.take(), out.is_ok()) {
                    t.complete();
                }
                // An error drops the ticket unused: a congestion signal, not a latency sample.
                Poll::Ready(out.map_err(Into::into))
            }
            StateProj::Rejected { reason } => Poll::Ready(Err(Box::new(Overloaded::new(*reason)))),
        }
    }
}

impl<F> std::fmt::Debug for ResponseFuture<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ResponseFuture")
    }
}
