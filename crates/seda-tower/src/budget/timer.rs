//! The timer that cuts an admitted request when its deadline passes.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::time::{Instant, Sleep};

use super::request::RequestDeadline;

/// One admitted request's deadline timer, armed on the first poll (inside the server's
/// runtime). It never fires for a request without a deadline, nor outside a tokio runtime with
/// a timer. The HTTP form's deadlines and the gRPC form's `grpc-timeout` both use it. Boxed
/// when armed, as the termination timer is (`crate::deadline::Deadline` says why).
pub(crate) struct BudgetTimer {
    deadline: Option<std::time::Instant>,
    sleep: Option<Pin<Box<Sleep>>>,
}

impl BudgetTimer {
    pub(crate) fn new(deadline: Option<RequestDeadline>) -> Self {
        Self::at(deadline.map(|d| d.at()))
    }

    /// A timer that passes at `deadline` (never, for `None`).
    pub(crate) fn at(deadline: Option<std::time::Instant>) -> Self {
        BudgetTimer {
            deadline,
            sleep: None,
        }
    }

    /// `Ready` once the request's deadline has passed.
    pub(crate) fn poll_passed(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        let Some(deadline) = this.deadline else {
            return Poll::Pending;
        };
        let sleep = match this.sleep.as_mut() {
            Some(sleep) => sleep,
            None => {
                if tokio::runtime::Handle::try_current().is_err() {
                    this.deadline = None;
                    return Poll::Pending;
                }
                let at = Instant::from_std(deadline);
                // tokio panics making a timer in a runtime built without one (`enable_time`):
                // the request is then served without its deadline, never failed for the
                // server's setup.
                match std::panic::catch_unwind(|| tokio::time::sleep_until(at)) {
                    Ok(sleep) => this.sleep.insert(Box::pin(sleep)),
                    Err(_) => {
                        this.deadline = None;
                        return Poll::Pending;
                    }
                }
            }
        };
        sleep.as_mut().poll(cx)
    }
}
