//! One connection's refusals answered by the proxy's [`RefusalPolicy`] and its pace across
//! connections ([`ServerRefusals`]): at once, after a pause, or with the connection closed
//! (`seda_control::refusal` says why and decides; this file does the waiting and the closing).

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use http::{HeaderValue, Response, header};
use seda_control::{ConnectionRefusals, RefusalAction, RefusalPolicy, ServerRefusals};

use crate::body::ProxyBody;

/// The refusal state of one client connection.
pub(crate) struct Pacing {
    policy: RefusalPolicy,
    server: Arc<ServerRefusals>,
    /// When the connection was accepted: the epoch of the policy's times.
    epoch: Instant,
    /// hyper serves one request of a connection at a time, so this lock is never contended.
    state: Mutex<ConnectionRefusals>,
}

impl Pacing {
    pub(crate) fn new(policy: RefusalPolicy, server: Arc<ServerRefusals>, epoch: Instant) -> Self {
        Pacing {
            policy,
            server,
            epoch,
            state: Mutex::new(ConnectionRefusals::new()),
        }
    }

    /// A request on the connection was admitted.
    pub(crate) fn admitted(&self) {
        // Only the count in a row depends on admissions; other policies skip the lock.
        if let RefusalPolicy::CloseAfter(_) = self.policy {
            self.lock().admitted();
        }
    }

    /// Answers a refusal as the policy and the proxy's pace say: `response` now, after a
    /// pause (a timer: no CPU meanwhile), or now with `Connection: close`.
    pub(crate) async fn refused(&self, mut response: Response<ProxyBody>) -> Response<ProxyBody> {
        let mut pause = self.server.wait();
        if self.policy != RefusalPolicy::Immediate {
            let action = self.lock().refused(&self.policy, self.epoch.elapsed());
            match action {
                RefusalAction::Answer => {}
                RefusalAction::AnswerAfter(own) => pause = pause.max(own),
                RefusalAction::AnswerAndClose => {
                    // hyper closes the connection after a response that says so.
                    response
                        .headers_mut()
                        .insert(header::CONNECTION, HeaderValue::from_static("close"));
                }
            }
        }
        if !pause.is_zero() {
            tokio::time::sleep(pause).await;
        }
        response
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ConnectionRefusals> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
