//! The refusals a second the whole server answers at once ([`HttpConfig::refusals_per_s`]):
//! one pace shared by every connection, on top of each connection's own policy.
//!
//! Why: a connection's policy (`cap:10` by default) bounds what one connection costs, not what
//! many do. 1,024 e-mail users that resend at once on a 503 drove `seda serve mail` to 40,000
//! refusals a second and a whole core (each refusal ~25 us: hyper, the response and the
//! loopback's TCP path, half of it in the kernel), however cheap the refusal's own decision.
//! Past the server's cap a refusal waits for its turn on a timer, which costs no CPU, so the
//! CPU refusals take stays bounded whatever the number of connections.
//!
//! [`HttpConfig::refusals_per_s`]: crate::HttpConfig::refusals_per_s

use std::time::{Duration, Instant};

use parking_lot::Mutex;
use seda_control::refusal::MAX_PAUSE;
use seda_control::{ConnectionRefusals, RefusalAction, RefusalPolicy};

/// The server's pace of refusals: the generic cell rate algorithm of a connection's `cap:N`
/// ([`ConnectionRefusals`]), shared.
pub(crate) struct ServerRefusals {
    /// `cap:N` at the server's rate; `None` without a server-wide cap.
    cap: Option<RefusalPolicy>,
    epoch: Instant,
    pace: Mutex<ConnectionRefusals>,
}

impl ServerRefusals {
    /// Up to `per_s` refusals a second answered at once (a burst of as many); 0: no cap.
    pub(crate) fn new(per_s: u32) -> Self {
        ServerRefusals {
            cap: (per_s > 0).then_some(RefusalPolicy::Cap { per_s }),
            epoch: Instant::now(),
            pace: Mutex::new(ConnectionRefusals::new()),
        }
    }

    /// How long a refusal made now waits for its turn: zero while the server is under its
    /// cap, never more than a policy's longest pause.
    pub(crate) fn wait(&self) -> Duration {
        let Some(cap) = &self.cap else {
            return Duration::ZERO;
        };
        match self.pace.lock().refused(cap, self.epoch.elapsed()) {
            RefusalAction::AnswerAfter(d) => d.min(MAX_PAUSE),
            _ => Duration::ZERO,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn past_the_cap_a_refusal_waits_its_turn() {
        let refusals = ServerRefusals::new(100);
        let waits: Vec<Duration> = (0..300).map(|_| refusals.wait()).collect();
        assert!(
            waits[..99].iter().all(Duration::is_zero),
            "the burst is answered at once"
        );
        // 300 refusals at once at 100 a second: the last waits about two seconds.
        let last = waits[299];
        assert!(
            last > Duration::from_millis(1_900) && last <= Duration::from_secs(2),
            "{last:?}"
        );
    }

    #[test]
    fn without_a_cap_no_refusal_waits() {
        let refusals = ServerRefusals::new(0);
        assert!((0..10_000).all(|_| refusals.wait().is_zero()));
    }
}
