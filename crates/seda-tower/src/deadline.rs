//! The timer that tells an admitted request it has run past its layer's termination threshold.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use pin_project_lite::pin_project;
use tokio::time::{Instant, Sleep};

use crate::admission::Ticket;
use crate::terminate::RECHECK;

pin_project! {
    /// One admitted request's timer. It is armed on the first poll (inside the server's
    /// runtime), wakes at the threshold or every [`RECHECK`] before it (an adaptive threshold
    /// may fall while the request runs), and never fires for a layer without a terminator.
    pub(crate) struct Deadline {
        #[pin]
        timer: Option<Sleep>,
        // No tokio runtime with a timer around the poll: the request is not terminable.
        unarmed: bool,
    }
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
        let mut this = self.project();
        let Some(termination) = ticket.termination() else {
            return Poll::Pending;
        };
        if *this.unarmed {
            return Poll::Pending;
        }
        loop {
            let (running, threshold) = (ticket.running(), termination.threshold());
            if running >= threshold {
                return Poll::Ready(());
            }
            let at = Instant::now() + (threshold - running).min(RECHECK);
            match this.timer.as_mut().as_pin_mut() {
                Some(timer) if timer.is_elapsed() => timer.reset(at),
                Some(_) => {}
                None => {
                    if tokio::runtime::Handle::try_current().is_err() {
                        *this.unarmed = true;
                        return Poll::Pending;
                    }
                    this.timer.set(Some(tokio::time::sleep_until(at)));
                }
            }
            let Some(timer) = this.timer.as_mut().as_pin_mut() else {
                return Poll::Pending;
            };
            ready!(timer.poll(cx));
        }
    }
}
