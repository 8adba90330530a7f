//! [`AnsweredFuture`]: a refusal answered at once, or an admitted request watched by its form.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use http::Response;
use pin_project_lite::pin_project;

use super::{Cut, Form};
use crate::admission::Ticket;
use crate::running::Running;

pin_project! {
    /// The response future of a layer that answers refusals and cuts itself; `W` is its
    /// form (HTTP or gRPC), what it watches an admitted request for.
    pub struct AnsweredFuture<F, RB, W> {
        #[pin]
        state: State<F, RB, W>,
    }
}

pin_project! {
    #[project = StateProj]
    enum State<F, RB, W> {
        Admitted {
            #[pin] run: Running<F>,
            #[pin] form: W,
        },
        Rejected { response: Option<Response<RB>> },
        Cut,
    }
}

impl<F, RB, W> AnsweredFuture<F, RB, W> {
    /// An admitted request: `inner` runs under `ticket`, watched by `form`.
    pub(crate) fn admitted(inner: F, ticket: Ticket, form: W) -> Self {
        AnsweredFuture {
            state: State::Admitted {
                run: Running::new(inner, ticket),
                form,
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
    RB: Default,
    W: Form,
{
    type Output = Result<Response<RB>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut state = self.project().state;
        match state.as_mut().project() {
            StateProj::Admitted { mut run, mut form } => {
                if let Poll::Ready(out) = run.as_mut().poll_inner(cx) {
                    return Poll::Ready(out);
                }
                if run.ticket().is_none() {
                    return Poll::Pending;
                }
                // The form's own deadline first, then the terminator's threshold.
                let (cut, response) = match form.as_mut().poll_deadline(cx) {
                    Poll::Ready(cut) => cut,
                    Poll::Pending => {
                        ready!(run.as_mut().poll_expired(cx));
                        let answer = form.terminated(run.ticket());
                        (Cut::Terminated, answer)
                    }
                };
                let ticket = run.take_ticket();
                let ticket = match cut {
                    Cut::Abandoned => {
                        drop(ticket);
                        None
                    }
                    _ => ticket,
                };
                // Dropping the inner future is the cut: it stops the work nobody waits for and
                // releases what it held.
                state.set(State::Cut);
                match (cut, ticket) {
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

impl<F, RB, W: Form> fmt::Debug for AnsweredFuture<F, RB, W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(W::FUTURE)
    }
}
