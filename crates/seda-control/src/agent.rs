//! What a replica tells its load balancer: HAProxy's `agent-check` reply, from the share of
//! requests its admission control is admitting.
//!
//! HAProxy polls a TCP port of each server every `agent-inter` and reads one line: a weight
//! relative to the configured one (`75%`), `drain` (weight 0: no new traffic, existing
//! connections finish), `ready`, and optionally `maxconn:N`. A replica that is shedding load
//! should get less of it, so the others (which are admitting) take it: the weight is the share
//! of requests admitted over the last window, and below [`AgentPolicy::drain_below`] the
//! replica asks to be drained. This moves load away from a slowed replica within one or two
//! polls, where HAProxy's round robin or least-connections would keep sending it its share.

/// Turns cumulative admission counters into agent-check replies.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentPolicy {
    /// Share admitted under which the replica asks to be drained (0.1).
    pub drain_below: f64,
    /// Lowest weight reported while not drained, in percent (1).
    pub min_weight_pct: u32,
    /// Weight a drained replica comes back with after a window with no traffic, in percent
    /// (10): a drained replica gets no requests, so without a probe it could never show it
    /// has recovered.
    pub probe_weight_pct: u32,
    last: Option<(u64, u64)>,
    weight_pct: u32,
}

impl Default for AgentPolicy {
    fn default() -> Self {
        AgentPolicy {
            drain_below: 0.1,
            min_weight_pct: 1,
            probe_weight_pct: 10,
            last: None,
            weight_pct: 100,
        }
    }
}

impl AgentPolicy {
    /// The reply for a poll, given the cumulative `admitted` and `rejected` counts and, when
    /// the controller has one, its current concurrency limit. A window with no traffic keeps
    /// the previous weight (an idle replica is not a slow one), except after a drain, when
    /// the replica asks for [`probe_weight_pct`](Self::probe_weight_pct) to show whether it
    /// has recovered.
    pub fn reply(&mut self, admitted: u64, rejected: u64, limit: Option<u64>) -> String {
        let (a0, r0) = self.last.replace((admitted, rejected)).unwrap_or((0, 0));
        let (da, dr) = (admitted.saturating_sub(a0), rejected.saturating_sub(r0));
        if da + dr > 0 {
            let share = da as f64 / (da + dr) as f64;
            self.weight_pct = if share < self.drain_below {
                0
            } else {
                ((share * 100.0).round() as u32).clamp(self.min_weight_pct.max(1), 100)
            };
        } else if self.weight_pct == 0 {
            self.weight_pct = self.probe_weight_pct.clamp(1, 100);
        }
        let state = if self.weight_pct == 0 {
            "drain".to_string()
        } else {
            format!("ready,{}%", self.weight_pct)
        };
        match limit {
            Some(n) => format!("{state},maxconn:{}\n", n.max(1)),
            None => format!("{state}\n"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weight_follows_the_admitted_share_of_the_last_window() {
        let mut p = AgentPolicy::default();
        assert_eq!(p.reply(0, 0, None), "ready,100%\n");
        assert_eq!(p.reply(100, 0, None), "ready,100%\n");
        assert_eq!(p.reply(175, 25, None), "ready,75%\n");
        // No traffic in the window: keep the last weight.
        assert_eq!(p.reply(175, 25, Some(40)), "ready,75%,maxconn:40\n");
        // Shedding almost everything: drain.
        assert_eq!(p.reply(180, 125, None), "drain\n");
        assert_eq!(p.reply(280, 125, None), "ready,100%\n");
    }

    #[test]
    fn a_drained_replica_with_no_traffic_asks_for_a_probe_weight() {
        let mut p = AgentPolicy::default();
        p.reply(0, 0, None);
        assert_eq!(p.reply(5, 95, None), "drain\n");
        assert_eq!(p.reply(5, 95, None), "ready,10%\n");
        // Still shedding under the probe: drained again.
        assert_eq!(p.reply(6, 150, None), "drain\n");
    }

    #[test]
    fn counters_that_go_backwards_do_not_underflow() {
        let mut p = AgentPolicy::default();
        p.reply(100, 100, None);
        assert_eq!(p.reply(10, 10, Some(0)), "ready,50%,maxconn:1\n");
    }
}
