//! The gRPC service [`GrpcSedaLayer`](crate::GrpcSedaLayer) makes, and its future.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use http::{Request, Response};
use pin_project_lite::pin_project;
use seda_control::SharedRetryAfter;
use tower_service::Service;

use super::status::{Code, trailers_only};
use super::timeout::ClientDeadline;
use crate::admission::Ticket;
use crate::classify::Classify;
use crate::deadline::Deadline;
use crate::http::TERMINATED;
use crate::service::Seda;

/// The [`REJECT_HEADER`](crate::REJECT_HEADER) value of a call whose `grpc-timeout` passed
/// while it ran.
const DEADLINE: &str = "deadline";

/// A gRPC service behind admission control (made by [`GrpcSedaLayer`](crate::GrpcSedaLayer)).
#[derive(Clone)]
pub struct GrpcSeda<S, C> {
    seda: Seda<S, C>,
    retry: SharedRetryAfter,
}

impl<S, C> GrpcSeda<S, C> {
    pub(crate) fn new(seda: Seda<S, C>, retry: SharedRetryAfter) -> Self {
        GrpcSeda { seda, retry }
    }
}

impl<S, C, B, RB> Service<Request<B>> for GrpcSeda<S, C>
where
    S: Service<Request<B>, Response = Response<RB>>,
    RB: Default,
    C: Classify<Request<B>>,
{
    type Response = Response<RB>;
    type Error = S::Error;
    type Future = GrpcResponseFuture<S::Future, RB>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.seda.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let class = self.seda.classify.class(&request);
        match self.seda.admit(class) {
            Ok(ticket) => {
                self.retry.admitted();
                let client = ClientDeadline::new(request.headers(), Instant::now());
                GrpcResponseFuture {
                    state: GrpcState::Admitted {
                        inner: self.seda.inner.call(request),
                        ticket: Some(ticket),
                        termination: Deadline::new(),
                        client,
                        retry_after_s: self.retry.seconds(),
                    },
                }
            }
            Err(reason) => {
                let pushback_ms = u64::from(self.retry.refused()) * 1000;
                let message = format!("service overloaded ({reason}); retry in {pushback_ms} ms");
                GrpcResponseFuture {
                    state: GrpcState::Rejected {
                        response: Some(trailers_only(
                            Code::ResourceExhausted,
                            &message,
                            reason.as_str(),
                            Some(pushback_ms),
                        )),
                    },
                }
            }
        }
    }
}

pin_project! {
    /// The response future of [`GrpcSeda`].
    pub struct GrpcResponseFuture<F, RB> {
        #[pin]
        state: GrpcState<F, RB>,
    }
}

pin_project! {
    #[project = GrpcStateProj]
    enum GrpcState<F, RB> {
        Admitted {
            #[pin] inner: F,
            ticket: Option<Ticket>,
            #[pin] termination: Deadline,
            #[pin] client: ClientDeadline,
            retry_after_s: u32,
        },
        Rejected { response: Option<Response<RB>> },
        Cut,
    }
}

impl<F, RB, E> Future for GrpcResponseFuture<F, RB>
where
    F: Future<Output = Result<Response<RB>, E>>,
    RB: Default,
{
    type Output = Result<Response<RB>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut state = self.project().state;
        match state.as_mut().project() {
            GrpcStateProj::Admitted {
                inner,
                ticket,
                termination,
                mut client,
                retry_after_s,
            } => {
                if let Poll::Ready(out) = inner.poll(cx) {
                    if let (Some(t), true) = (ticket.take(), out.is_ok()) {
                        t.complete();
                    }
                    return Poll::Ready(out);
                }
                let Some(t) = ticket.as_ref() else {
                    return Poll::Pending;
                };
                // The client's deadline first: past it the client has stopped listening, so
                // the call is lost whatever else fired, and DEADLINE_EXCEEDED is the truth.
                if client.as_mut().poll_passed(cx).is_ready() {
                    let message = format!(
                        "deadline exceeded: the call ran past its grpc-timeout of {:?}",
                        client.timeout()
                    );
                    // The ticket is dropped unused: a drop, a congestion signal.
                    drop(ticket.take());
                    // Dropping the inner future releases what it held.
                    state.set(GrpcState::Cut);
                    return Poll::Ready(Ok(trailers_only(
                        Code::DeadlineExceeded,
                        &message,
                        DEADLINE,
                        None,
                    )));
                }
                if termination.poll_expired(t, cx).is_ready() {
                    let threshold = t.termination().map(|x| x.threshold()).unwrap_or_default();
                    let pushback_ms = u64::from(*retry_after_s) * 1000;
                    let t = ticket.take();
                    state.set(GrpcState::Cut);
                    if let Some(t) = t {
                        t.terminate();
                    }
                    let message = format!(
                        "terminated after running past {threshold:?} (service overloaded); \
                         retry in {pushback_ms} ms"
                    );
                    return Poll::Ready(Ok(trailers_only(
                        Code::ResourceExhausted,
                        &message,
                        TERMINATED,
                        Some(pushback_ms),
                    )));
                }
                Poll::Pending
            }
            GrpcStateProj::Cut => Poll::Pending,
            GrpcStateProj::Rejected { response } => match response.take() {
                Some(r) => Poll::Ready(Ok(r)),
                None => panic!("GrpcResponseFuture polled after completion"),
            },
        }
    }
}

impl<F, RB> std::fmt::Debug for GrpcResponseFuture<F, RB> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("GrpcResponseFuture")
    }
}
