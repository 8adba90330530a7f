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
use crate::error::{Overloaded, Terminated};
use crate::running::Running;

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
    /// controller, or an immediate [`Overloaded`] error; under a terminating layer, a
    /// [`Terminated`] error once the inner future ran past the threshold (it is dropped then).
    pub struct ResponseFuture<F> {
        #[pin]
        state: State<F>,
    }
}

pin_project! {
    #[project = StateProj]
    enum State<F> {
        Admitted { #[pin] run: Running<F> },
        Rejected { reason: RejectReason },
        Terminated,
    }
}

impl<F> ResponseFuture<F> {
    pub(crate) fn admitted(inner: F, ticket: Ticket) -> Self {
        ResponseFuture {
            state: State::Admitted {
                run: Running::new(inner, ticket),
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
        let mut state = self.project().state;
        match state.as_mut().project() {
            StateProj::Admitted { mut run } => {
                if let Poll::Ready(out) = run.as_mut().poll_inner(cx) {
                    return Poll::Ready(out.map_err(Into::into));
                }
                ready!(run.as_mut().poll_expired(cx));
                let threshold = run
                    .ticket()
                    .and_then(|t| t.termination())
                    .map(|x| x.threshold())
                    .unwrap_or_default();
                let t = run.take_ticket();
                // Dropping the inner future is the termination: it releases what it held.
                state.set(State::Terminated);
                if let Some(t) = t {
                    t.terminate();
                }
                Poll::Ready(Err(Box::new(Terminated::new(threshold))))
            }
            StateProj::Rejected { reason } => Poll::Ready(Err(Box::new(Overloaded::new(*reason)))),
            StateProj::Terminated => Poll::Pending,
        }
    }
}

impl<F> std::fmt::Debug for ResponseFuture<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ResponseFuture")
    }
}
