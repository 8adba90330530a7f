//! What the HTTP and gRPC forms of the layer share: a layer ([`AnsweringLayer`]) whose
//! services ([`Answering`]) answer a refusal themselves, and whose future
//! ([`AnsweredFuture`]) reports an admitted request's outcome to the controller unless the
//! form cuts it first. A [`Form`] says only what differs: how a request is admitted or
//! refused, what an admitted one is watched for, and how each answer is written.
//! `HttpSedaLayer` and `GrpcSedaLayer` are this layer with the HTTP and gRPC forms.

mod future;
mod layer;
mod service;

use std::pin::Pin;
use std::task::{Context, Poll};

use http::{Request, Response};
use seda_control::SharedRetryAfter;
use tower_service::Service;

use crate::admission::Ticket;
use crate::classify::Classify;
use crate::service::Seda;

pub use future::AnsweredFuture;
pub use layer::AnsweringLayer;
pub use service::Answering;

/// What a cut does with the request's ticket (what the controller learns).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cut {
    /// The terminator cut it: [`Ticket::terminate`].
    Terminated,
    /// Its own deadline passed: [`Ticket::cut`].
    PastDeadline,
    /// The client stopped waiting: the ticket is dropped unused, before the request's work is
    /// (a drop, a congestion signal).
    Abandoned,
}

/// The service behind a form: HTTP requests in, HTTP responses out.
pub trait Inner<B, RB>: Service<Request<B>, Response = Response<RB>> {}

impl<S, B, RB> Inner<B, RB> for S where S: Service<Request<B>, Response = Response<RB>> {}

/// A protocol's way of answering for the layer; the value is the request's own deadline, what
/// an admitted request is watched for (before the terminator's threshold) while it runs.
pub trait Form: Sized {
    /// The layer's name in `Debug`.
    const LAYER: &'static str;
    /// The future's name, in `Debug` and in the panic of a poll after completion.
    const FUTURE: &'static str;

    /// Admits `request` through `seda` or refuses it (asking for `retry`'s wait).
    fn call<S: Inner<B, RB>, C: Classify<Request<B>>, B, RB: Default>(
        seda: &mut Seda<S, C>,
        retry: &SharedRetryAfter,
        request: Request<B>,
    ) -> AnsweredFuture<S::Future, RB, Self>;

    /// `Ready` with the cut and its answer once the request's own deadline has passed.
    fn poll_deadline<RB: Default>(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<(Cut, Response<RB>)>;

    /// The answer to a request the terminator cut (`ticket` its admission, if still held),
    /// asking the client to wait as long as a refusal did when it was admitted.
    fn terminated<RB: Default>(&self, ticket: Option<&Ticket>) -> Response<RB>;
}
