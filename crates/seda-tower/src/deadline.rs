//! The timer that tells an admitted request it has run past its layer's termination threshold.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use tokio::time::{Instant, Sleep};

use crate::admission::Ticket;
use crate::terminate::RECHECK;

/// One admitted request's timer. It is armed on the first poll (inside the server's runtime),
/// wakes at the threshold or every [`RECHECK`] before it (an adaptive threshold may fall while
/// the request runs), and never fires for a layer without a terminator.
///
/// The timer is boxed when armed: a request that is never terminable (no terminator, or
/// answered on its first poll) carries 16 bytes instead of tokio's `Sleep` inline, and the
/// response future, which servers and callers move, stays small (see `examples/layer_cost.rs`).
pub(crate) struct Deadline {
    timer: Option<Pin<Box<Sleep>>>,
    // No tokio runtime with a timer around the poll: the request is not terminable.
    unarmed: bool,
}

impl Deadline {
    pub(crate) fn new() -> Self {
        Deadline {
            timer: None,
            unarmed: false,
        }
    }

    /// `Ready` once the request `ticket` stands for has run past the threshold in force.
    pub(crate) fn poll_expired(
        self: Pin<&mut Self>,
        ticket: &Ticket,
        cx: &mut Context<'_>,
    ) -> Poll<()> {
        let this = self.get_mut();
        let Some(termination) = ticket.termination() else {
            return Poll::Pending;
        };
        if this.unarmed {
            return Poll::Pending;
        }
        loop {
            let (running, threshold) = (ticket.running(), termination.threshold());
            if running >= threshold {
                return Poll::Ready(());
            }
            let at = Instant::now() + (threshold - running).min(RECHECK);
            let timer = match this.timer.as_mut() {
                Some(timer) => {
                    if timer.is_elapsed() {
                        timer.as_mut().reset(at);
                    }
                    timer
                }
                None => {
                    if tokio::runtime::Handle::try_current().is_err() {
                        this.unarmed = true;
                        return Poll::Pending;
                    }
                    this.timer.insert(Box::pin(tokio::time::sleep_until(at)))
                }
            };
            ready!(timer.as_mut().poll(cx));
        }
    }
}
