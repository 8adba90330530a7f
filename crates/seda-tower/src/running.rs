//! [`Running`]: an admitted request's work, as every future of the layer runs it.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use pin_project_lite::pin_project;

use crate::admission::Ticket;
use crate::deadline::Deadline;

pin_project! {
    /// An admitted request: the service's future, the ticket that reports its outcome to the
    /// controller, and the terminator's timer. [`ResponseFuture`](crate::ResponseFuture) and
    /// [`AnsweredFuture`](crate::AnsweredFuture) run one each; they differ in what they answer.
    pub struct Running<F> {
        #[pin]
        inner: F,
        ticket: Option<Ticket>,
        termination: Deadline,
    }
}

impl<F> Running<F> {
    pub(crate) fn new(inner: F, ticket: Ticket) -> Self {
        Running {
            inner,
            ticket: Some(ticket),
            termination: Deadline::new(),
        }
    }

    /// The ticket while the request runs (`None` once it finished or was cut).
    pub(crate) fn ticket(&self) -> Option<&Ticket> {
        self.ticket.as_ref()
    }

    /// Takes the ticket, for the caller to report a cut with (or drop unused).
    pub(crate) fn take_ticket(self: Pin<&mut Self>) -> Option<Ticket> {
        self.project().ticket.take()
    }

    /// `Ready` once the request has run past the terminator's threshold (never once it
    /// finished, or without a terminator).
    pub(crate) fn poll_expired(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.project();
        match this.ticket.as_ref() {
            Some(t) => Pin::new(this.termination).poll_expired(t, cx),
            None => Poll::Pending,
        }
    }
}

impl<F, T, E> Running<F>
where
    F: Future<Output = Result<T, E>>,
{
    /// The service's output once ready. A success completes the ticket (a latency sample);
    /// an error drops it unused (a congestion signal).
    pub(crate) fn poll_inner(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<T, E>> {
        let this = self.project();
        let out = std::task::ready!(this.inner.poll(cx));
        if let (Some(t), true) = (this.ticket.take(), out.is_ok()) {
            t.complete();
        }
        Poll::Ready(out)
    }
}
