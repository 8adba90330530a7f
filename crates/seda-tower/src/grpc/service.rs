//! The gRPC form of the layer ([`GrpcSedaLayer`](crate::GrpcSedaLayer)): how it admits,
//! refuses and cuts a call.

use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Instant;

use http::{Request, Response};
use pin_project_lite::pin_project;
use seda_control::SharedRetryAfter;

use super::status::{Code, trailers_only};
use super::timeout::ClientDeadline;
use crate::admission::Ticket;
use crate::classify::Classify;
use crate::form::{AnsweredFuture, Answering, Cut, Form, Inner};
use crate::http::TERMINATED;
use crate::service::Seda;

/// The [`REJECT_HEADER`](crate::REJECT_HEADER) value of a call whose `grpc-timeout` passed
/// while it ran.
const DEADLINE: &str = "deadline";

/// A gRPC service behind admission control (made by [`GrpcSedaLayer`](crate::GrpcSedaLayer)).
pub type GrpcSeda<S, C> = Answering<S, C, GrpcForm>;

/// The response future of [`GrpcSeda`]: a refusal's `RESOURCE_EXHAUSTED`, or the service's
/// response unless the call's `grpc-timeout` (`DEADLINE_EXCEEDED`) or the terminator
/// (`RESOURCE_EXHAUSTED` with a pushback) cuts it first.
pub type GrpcResponseFuture<F, RB> = AnsweredFuture<F, RB, GrpcForm>;

pin_project! {
    /// The gRPC form: a refusal is a trailers-only `RESOURCE_EXHAUSTED` with a pushback; an
    /// admitted call is watched for the client's deadline (`DEADLINE_EXCEEDED`), and a
    /// termination is `RESOURCE_EXHAUSTED` with the same pushback.
    pub struct GrpcForm {
        #[pin]
        client: ClientDeadline,
        retry_after_s: u32,
    }
}

impl Form for GrpcForm {
    const LAYER: &'static str = "GrpcSedaLayer";
    const FUTURE: &'static str = "GrpcResponseFuture";

    fn call<S: Inner<B, RB>, C: Classify<Request<B>>, B, RB: Default>(
        seda: &mut Seda<S, C>,
        retry: &SharedRetryAfter,
        request: Request<B>,
    ) -> AnsweredFuture<S::Future, RB, Self> {
        let class = seda.classify.class(&request);
        match seda.admit(class) {
            Ok(ticket) => {
                retry.admitted();
                let form = GrpcForm {
                    client: ClientDeadline::new(request.headers(), Instant::now()),
                    retry_after_s: retry.seconds(),
                };
                AnsweredFuture::admitted(seda.inner.call(request), ticket, form)
            }
            Err(reason) => {
                let pushback_ms = u64::from(retry.refused()) * 1000;
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

    /// Past the client's deadline the client has stopped listening, so the call is lost
    /// whatever else fired, and DEADLINE_EXCEEDED is the truth: checked before termination.
    fn poll_deadline<RB: Default>(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<(Cut, Response<RB>)> {
        let mut client = self.project().client;
        ready!(client.as_mut().poll_passed(cx));
        let message = format!(
            "deadline exceeded: the call ran past its grpc-timeout of {:?}",
            client.timeout()
        );
        let response = trailers_only(Code::DeadlineExceeded, &message, DEADLINE, None);
        Poll::Ready((Cut::Abandoned, response))
    }

    fn terminated<RB: Default>(&self, ticket: Option<&Ticket>) -> Response<RB> {
        let threshold = ticket
            .and_then(|t| t.termination())
            .map(|x| x.threshold())
            .unwrap_or_default();
        let pushback_ms = u64::from(self.retry_after_s) * 1000;
        let message = format!(
            "terminated after running past {threshold:?} (service overloaded); retry in \
             {pushback_ms} ms"
        );
        trailers_only(
            Code::ResourceExhausted,
            &message,
            TERMINATED,
            Some(pushback_ms),
        )
    }
}
