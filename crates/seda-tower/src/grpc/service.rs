//! The gRPC service [`GrpcSedaLayer`](crate::GrpcSedaLayer) makes, and its future.

use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Instant;

use http::{Request, Response};
use pin_project_lite::pin_project;
use seda_control::SharedRetryAfter;
use tower_service::Service;

use super::status::{Code, trailers_only};
use super::timeout::ClientDeadline;
use crate::admission::Ticket;
use crate::answered::{AnsweredFuture, Cut, Watch};
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
                let watch = GrpcWatch {
                    termination: Deadline::new(),
                    client,
                    retry_after_s: self.retry.seconds(),
                };
                AnsweredFuture::admitted(self.seda.inner.call(request), ticket, watch)
            }
            Err(reason) => {
                let pushback_ms = u64::from(self.retry.refused()) * 1000;
                let message = format!("service overloaded ({reason}); retry in {pushback_ms} ms");
                AnsweredFuture::rejected(trailers_only(
                    Code::ResourceExhausted,
                    &message,
                    reason.as_str(),
                    Some(pushback_ms),
                ))
            }
        }
    }
}

/// The response future of [`GrpcSeda`]: a refusal's `RESOURCE_EXHAUSTED`, or the service's
/// response unless the call's `grpc-timeout` (`DEADLINE_EXCEEDED`) or the terminator
/// (`RESOURCE_EXHAUSTED` with a pushback) cuts it first.
pub type GrpcResponseFuture<F, RB> = AnsweredFuture<F, RB, GrpcWatch>;

pin_project! {
    /// What the gRPC form watches an admitted call for: the client's deadline, then the
    /// terminator's threshold.
    pub struct GrpcWatch {
        #[pin]
        termination: Deadline,
        #[pin]
        client: ClientDeadline,
        retry_after_s: u32,
    }
}

impl<RB: Default> Watch<RB> for GrpcWatch {
    const FUTURE: &'static str = "GrpcResponseFuture";

    fn poll_cut(
        self: Pin<&mut Self>,
        ticket: &Ticket,
        cx: &mut Context<'_>,
    ) -> Poll<(Cut, Response<RB>)> {
        let mut this = self.project();
        // The client's deadline first: past it the client has stopped listening, so the call
        // is lost whatever else fired, and DEADLINE_EXCEEDED is the truth.
        if this.client.as_mut().poll_passed(cx).is_ready() {
            let message = format!(
                "deadline exceeded: the call ran past its grpc-timeout of {:?}",
                this.client.timeout()
            );
            let response = trailers_only(Code::DeadlineExceeded, &message, DEADLINE, None);
            return Poll::Ready((Cut::Abandoned, response));
        }
        ready!(this.termination.poll_expired(ticket, cx));
        let threshold = ticket
            .termination()
            .map(|x| x.threshold())
            .unwrap_or_default();
        let pushback_ms = u64::from(*this.retry_after_s) * 1000;
        let message = format!(
            "terminated after running past {threshold:?} (service overloaded); retry in \
             {pushback_ms} ms"
        );
        let response = trailers_only(
            Code::ResourceExhausted,
            &message,
            TERMINATED,
            Some(pushback_ms),
        );
        Poll::Ready((Cut::Terminated, response))
    }
}
