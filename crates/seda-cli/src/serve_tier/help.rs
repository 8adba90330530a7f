//! The tier's client of the tier below, helping it as `seda load`'s clients can (issue 53,
//! item 5): Google SRE's adaptive throttling (`--throttle`: a call is refused here, never
//! sent, with probability max(0, (requests - K x accepts) / (requests + 1)), K = 2, an accept
//! being an answer from below that is not a 503) and retries of a refused call (`--retries`)
//! held to a retry budget (`--retry-budget`: at most a share of the first calls, 10% by
//! default, over 10 s). Both are seda-control's, the same the load generator uses.
//!
//! Without `--retry-budget` a tier with `--retries` sends a refused call again at once up to
//! N times: the retry storm that a tier in the middle of a call graph multiplies.

use std::sync::Mutex;
use std::time::Instant;

use anyhow::anyhow;
use seda_control::{RetryBudget, RetryBudgetConfig, SeededThrottle, ThrottleConfig};

use super::lock;

/// The seed of the throttle's draws: a run repeats its decisions for the same arrivals.
const SEED: u64 = 53;

/// How the tier's calls below are throttled and retried.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct HelpArgs {
    /// Google SRE's adaptive throttling, K = 2.
    pub throttle: bool,
    /// Retries of a call the tier below refused (503).
    pub retries: u32,
    /// The retry budget's share of the first calls; `None`: retries unbounded.
    pub budget: Option<f64>,
}

/// The state of [`HelpArgs`] over the tier's life.
pub struct ClientHelp {
    throttle: Option<Mutex<SeededThrottle>>,
    budget: Option<Mutex<RetryBudget>>,
    retries: u32,
    epoch: Instant,
}

impl ClientHelp {
    /// The help `args` ask for.
    pub fn new(args: HelpArgs) -> anyhow::Result<ClientHelp> {
        let throttle = match args.throttle {
            true => Some(Mutex::new(
                SeededThrottle::new(ThrottleConfig::default(), SEED)
                    .map_err(|e| anyhow!("the throttle: {e}"))?,
            )),
            false => None,
        };
        let budget = match args.budget {
            Some(ratio) => Some(Mutex::new(
                RetryBudget::new(RetryBudgetConfig {
                    ratio,
                    ..RetryBudgetConfig::default()
                })
                .map_err(|e| anyhow!("--retry-budget: {e}"))?,
            )),
            None => None,
        };
        Ok(ClientHelp {
            throttle,
            budget,
            retries: args.retries,
            epoch: Instant::now(),
        })
    }

    /// Most retries of one call.
    pub fn retries(&self) -> u32 {
        self.retries
    }

    /// Whether the throttle lets a call (first or retry) go now; it counts the call either
    /// way. Always, without a throttle.
    pub fn may_send(&self) -> bool {
        let Some(t) = &self.throttle else {
            return true;
        };
        lock(t).try_send(self.epoch.elapsed())
    }

    /// The tier below answered a call with something other than a refusal.
    pub fn accepted(&self) {
        if let Some(t) = &self.throttle {
            lock(t).on_accept(self.epoch.elapsed());
        }
    }

    /// A request's first call was sent (what the retry budget is a share of).
    pub fn first_call(&self) {
        if let Some(b) = &self.budget {
            lock(b).on_request(self.epoch.elapsed());
        }
    }

    /// Whether the retry budget allows a retry now (counted against it if so). Always,
    /// without a budget.
    pub fn may_retry(&self) -> bool {
        self.budget
            .as_ref()
            .is_none_or(|b| lock(b).try_retry(self.epoch.elapsed()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_help_everything_goes_and_every_retry_is_allowed() {
        let h = ClientHelp::new(HelpArgs {
            retries: 3,
            ..HelpArgs::default()
        })
        .unwrap();
        assert_eq!(h.retries(), 3);
        assert!((0..1000).all(|_| h.may_send()));
        assert!((0..1000).all(|_| h.may_retry()));
    }

    #[test]
    fn the_budget_holds_retries_to_its_share_of_first_calls() {
        let h = ClientHelp::new(HelpArgs {
            throttle: false,
            retries: 3,
            budget: Some(0.1),
        })
        .unwrap();
        // 1000 first calls, each refused and retried as often as allowed: the budget's 10%
        // (100) and its allowance of one a second over its 10 s window (10).
        let mut retried = 0;
        for _ in 0..1000 {
            h.first_call();
            retried += (0..3).filter(|_| h.may_retry()).count();
        }
        assert_eq!(retried, 110);
    }

    #[test]
    fn the_throttle_refuses_what_the_tier_below_does_not_accept() {
        let h = ClientHelp::new(HelpArgs {
            throttle: true,
            ..HelpArgs::default()
        })
        .unwrap();
        // The tier below takes one call per ten tried (its capacity) and refuses the rest:
        // past the first thousand, about 1 - 2 x 0.1 of the calls tried are refused here.
        let (mut refused, mut next_free) = (0, 0);
        for i in 0..2000 {
            let sent = h.may_send();
            if sent && i >= next_free {
                h.accepted();
                next_free = i + 10;
            }
            refused += usize::from(!sent && i >= 1000);
        }
        assert!((700..=880).contains(&refused), "{refused} of 1000 refused");
    }

    #[test]
    fn rejects_a_nonsense_budget() {
        for ratio in [-0.1, f64::NAN, f64::INFINITY] {
            let args = HelpArgs {
                budget: Some(ratio),
                ..HelpArgs::default()
            };
            assert!(ClientHelp::new(args).is_err());
        }
    }
}
