//! The future the HTTP and gRPC forms share ([`HttpResponseFuture`](crate::HttpResponseFuture),
//! [`GrpcResponseFuture`](crate::GrpcResponseFuture)): a refusal answered at once, or an
//! admitted request that reports its outcome to the controller unless the form's [`Watch`]
//! cuts it first. The forms differ only in what they watch for and how they answer a cut.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use http::Response;
use pin_project_lite::pin_project;

use crate::admission::Ticket;

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

/// What a form watches an admitted request for, while its inner future runs.
pub trait Watch<RB> {
    /// The form's name for its future, in `Debug` and in the panic of a poll after completion.
    const FUTURE: &'static str;

    /// `Ready` with the cut and its answer once the request must stop; `ticket` is its
    /// admission.
    fn poll_cut(
        self: Pin<&mut Self>,
        ticket: &Ticket,
        cx: &mut Context<'_>,
    ) -> Poll<(Cut, Response<RB>)>;
}

pin_project! {
    /// The response future of a form that answers refusals and cuts itself; `W` is what it
    /// watches an admitted request for.
    pub struct AnsweredFuture<F, RB, W> {
        #[pin]
        state: State<F, RB, W>,
    }
}

pin_project! {
    #[project = StateProj]
    enum State<F, RB, W> {
        Admitted {
            #[pin] inner: F,
            ticket: Option<Ticket>,
            #[pin] watch: W,
        },
        Rejected { response: Option<Response<RB>> },
        Cut,
    }
}

impl<F, RB, W> AnsweredFuture<F, RB, W> {
    /// An admitted request: `inner` runs under `ticket`, watched by `watch`.
    pub(crate) fn admitted(inner: F, ticket: Ticket, watch: W) -> Self {
        AnsweredFuture {
            state: State::Admitted {
                inner,
                ticket: Some(ticket),
                watch,
            },
        }
    }

    /// A request answered at once with `response`, without reaching the service.
    pub(crate) fn rejected(response: Response<RB>) -> Self {
        AnsweredFuture {
            state: State::Rejected {
                response: Some(response),
            },
        }
    }

    /// Whether the layer refused the request (its answer was decided before anything read the
    /// request's body). A front end uses it to pace the refusals on one connection
    /// (`seda_control::refusal`); an upstream's own refusal is not one.
    pub fn is_rejected(&self) -> bool {
        matches!(self.state, State::Rejected { .. })
    }
}

impl<F, RB, E, W> Future for AnsweredFuture<F, RB, W>
where
    F: Future<Output = Result<Response<RB>, E>>,
    W: Watch<RB>,
{
    type Output = Result<Response<RB>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut state = self.project().state;
        match state.as_mut().project() {
            StateProj::Admitted {
                inner,
                ticket,
                watch,
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
                let (cut, response) = ready!(watch.poll_cut(t, cx));
                let t = match (cut, ticket.take()) {
                    (Cut::Abandoned, t) => {
                        drop(t);
                        None
                    }
                    (_, t) => t,
                };
                // Dropping the inner future is the cut: it stops the work nobody waits for and
                // releases what it held.
                state.set(State::Cut);
                match (cut, t) {
                    (Cut::Terminated, Some(t)) => t.terminate(),
                    (Cut::PastDeadline, Some(t)) => t.cut(),
                    _ => {}
                }
                Poll::Ready(Ok(response))
            }
            StateProj::Cut => Poll::Pending,
            StateProj::Rejected { response } => match response.take() {
                Some(r) => Poll::Ready(Ok(r)),
                None => panic!("{} polled after completion", W::FUTURE),
            },
        }
    }
}

impl<F, RB, W: Watch<RB>> fmt::Debug for AnsweredFuture<F, RB, W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(W::FUTURE)
    }
}
