//! What a replica tells its load balancer: HAProxy's `agent-check` reply, from the share of
//! the requests reaching it that it serves.
//!
//! HAProxy polls a TCP port of each server every `agent-inter` and reads one line: a weight
//! relative to the configured one (`75%`), `drain` (weight 0: no new traffic, existing
//! connections finish), `ready`, and optionally `maxconn:N`. A replica that cannot serve what
//! it gets should get less of it, so the others take it.
//!
//! The signal is the *served share* of the last window: requests completed over requests that
//! arrived (admitted or rejected). Rejections lower it, and so do admitted requests the
//! replica then drops (a response-time controller drops those queued past the target): a
//! slowed replica that still admits 90% of its requests but drops most of them is not a
//! healthy one. (The first version reported the admitted share alone; in the lab's `cluster`
//! a replica slowed 50 x kept admitting 91% and its weight barely moved.)
//!
//! The weight is steered like TCP's window, additive increase and multiplicative decrease: a
//! window whose served share is below [`AgentPolicy::healthy`] multiplies the weight by that
//! share, a healthy one adds [`AgentPolicy::increase_pct`]. The weight then settles where the
//! replica serves what it is sent, and a slowed replica sheds most of its weight within a few
//! polls, where HAProxy's round robin or least-connections would keep sending it its share.
//!
//! A replica that stalls is judged on its backlog too. Its clients wait for their replies, so
//! once it slows, few new requests arrive at all (the lab's `cluster`: from 25 per 250 ms poll
//! to 2-4) and a window counted in arrivals would take seconds to fill. The requests already
//! waiting in it are demand it is not serving: a window whose completions are under
//! [`AgentPolicy::fast_below`] of its arrivals plus the backlog it started with decides at once.
//! A healthy replica completes its backlog within a response time, so this needs the poll
//! interval (`agent-inter`) to exceed a quarter of the service's normal response time.
//!
//! The same test runs on the last poll alone when the replica had a backlog of at least
//! [`AgentPolicy::fast_backlog`] at the poll before. A window still open when the replica
//! slows holds the completions it made before, and in the lab's `cluster` a replica slowed
//! at 7-13 arrivals a poll held 5-7 requests, received 0-5 a poll and completed 0-3: its
//! window took 2 s to decide, where the poll after its backlog stood still shows it at once.

/// Cumulative counts a replica's agent reads at each poll.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AgentSample {
    /// Requests admitted so far.
    pub admitted: u64,
    /// Requests rejected so far.
    pub rejected: u64,
    /// Admitted requests completed so far (not dropped, failed or terminated).
    pub completed: u64,
    /// Admitted requests not yet settled (queued or in service), now.
    pub outstanding: u64,
    /// The controller's current concurrency limit (`maxconn:N` in the reply), if it has one.
    pub limit: Option<u64>,
}

/// Turns cumulative counters into agent-check replies.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentPolicy {
    /// Served share under which the replica asks to be drained (0.1).
    pub drain_below: f64,
    /// Served share from which a window counts as healthy (0.9).
    pub healthy: f64,
    /// Weight added after a healthy window, in percent (10).
    pub increase_pct: u32,
    /// Arrivals a window needs before it decides anything (20): in a smaller one, the few
    /// requests still in service at its end weigh too much. A smaller window is extended to
    /// the next poll.
    pub min_arrivals: u64,
    /// Demand (arrivals plus the backlog the window started with) after which a window whose
    /// share served is under [`fast_below`](Self::fast_below) decides at once (10). A replica
    /// that has nearly stopped completing is unmistakable in fewer requests: a healthy one
    /// completes about as many as it is asked, and with 10 expected, 2 or fewer happen 0.3%
    /// of the time (Poisson). Waiting for `min_arrivals` would leave a slowed replica its full
    /// weight for a second more.
    pub fast_arrivals: u64,
    /// Share of the demand served under which a window of [`fast_arrivals`](Self::fast_arrivals)
    /// decides (0.25).
    pub fast_below: f64,
    /// Backlog at the previous poll from which the last poll alone decides when it served
    /// under [`fast_below`](Self::fast_below) of that backlog and its arrivals (3): a healthy
    /// replica holds a request or two at a poll and completes them before the next.
    pub fast_backlog: u64,
    /// Lowest weight reported while not drained, in percent (1).
    pub min_weight_pct: u32,
    /// Weight a drained replica comes back with after a window with no traffic, in percent
    /// (10): a drained replica gets no new sessions, so without a probe it could never show
    /// it has recovered.
    pub probe_weight_pct: u32,
    /// Polls a drained replica with no traffic waits before it asks for the probe weight (8:
    /// 2 s at the lab's 250 ms `agent-inter`), doubled each time in a row a probe ends drained
    /// again, up to 16 x. A replica drained because it stalled still completes a request now
    /// and then, and its sticky sessions leave it idle for a poll soon after the drain: in the
    /// lab's `cluster`, a replica slowed 50 x asked for its probe 0.5-1.2 s after its drain
    /// and took a twentieth of new sessions again while still slowed. Envoy's outlier
    /// detection ejects a host for 30 s times its ejections, for the same reason. A drained
    /// replica that serves its sticky sessions well comes back at the probe weight at once.
    pub probe_after_polls: u32,
    last: Option<AgentSample>,
    /// The sample of the previous poll.
    previous: Option<AgentSample>,
    weight_pct: u32,
    /// Polls since the replica was drained.
    drained_polls: u32,
    /// Probes in a row that ended drained (reset once the weight is back to 100%).
    failed_probes: u32,
    /// The weight is climbing back from a probe.
    probing: bool,
}

impl Default for AgentPolicy {
    fn default() -> Self {
        AgentPolicy {
            drain_below: 0.1,
            healthy: 0.9,
            increase_pct: 10,
            min_arrivals: 20,
            fast_arrivals: 10,
            fast_below: 0.25,
            fast_backlog: 3,
            min_weight_pct: 1,
            probe_weight_pct: 10,
            probe_after_polls: 8,
            last: None,
            previous: None,
            weight_pct: 100,
            drained_polls: 0,
            failed_probes: 0,
            probing: false,
        }
    }
}

impl AgentPolicy {
    /// The reply for a poll, given the cumulative counts. The first poll only starts the
    /// first window and answers the configured weight. A window with no traffic keeps the
    /// previous weight (an idle replica is not a slow one), except after a drain, when the
    /// replica asks for [`probe_weight_pct`](Self::probe_weight_pct) to show whether it has
    /// recovered; one with fewer than [`min_arrivals`](Self::min_arrivals) keeps it too.
    pub fn reply(&mut self, now: AgentSample) -> String {
        let previous = self.previous.replace(now);
        let Some(before) = self.last else {
            // The first poll starts the first window: what the replica did before a balancer
            // asked (an earlier balancer's traffic, a slowdown since lifted) is no window of
            // this one's. Judging it made a replica the lab's `cluster` had slowed in an
            // earlier run start the next at 1% of its weight.
            self.last = Some(now);
            return self.format(now.limit);
        };
        let delta = |a: u64, b: u64| a.saturating_sub(b);
        let arrived = delta(now.admitted, before.admitted) + delta(now.rejected, before.rejected);
        let probe = self.probe_weight_pct.clamp(1, 100);
        let completed = delta(now.completed, before.completed) as f64;
        // Completions can lead arrivals in a window (requests queued in the last one).
        let mut served = (completed / arrived.max(1) as f64).min(1.0);
        let demand = arrived + before.outstanding;
        let mut stalled =
            demand >= self.fast_arrivals.max(1) && completed < self.fast_below * demand as f64;
        if stalled {
            served = served.min(completed / demand as f64);
        }
        // The last poll alone, from a backlog that should have moved.
        if let Some(p) = previous.filter(|p| p.outstanding >= self.fast_backlog.max(1)) {
            let asked =
                p.outstanding + delta(now.admitted, p.admitted) + delta(now.rejected, p.rejected);
            let done = delta(now.completed, p.completed) as f64;
            if done < self.fast_below * asked as f64 {
                stalled = true;
                served = served.min(done / asked as f64);
            }
        }
        let was = self.weight_pct;
        if was == 0 {
            self.drained_polls = self.drained_polls.saturating_add(1);
        }
        if arrived >= self.min_arrivals.max(1) || stalled {
            self.last = Some(now);
            self.weight_pct = if served < self.drain_below {
                0
            } else if served < self.healthy {
                // A drained replica comes back only when it serves well (or by the probe).
                let w = (f64::from(self.weight_pct) * served).round() as u32;
                if self.weight_pct == 0 {
                    0
                } else {
                    w.clamp(self.min_weight_pct.max(1), 100)
                }
            } else if self.weight_pct == 0 {
                probe
            } else {
                (self.weight_pct + self.increase_pct).min(100)
            };
        } else if arrived == 0 {
            // Also re-bases counters that went backwards (a restarted server).
            self.last = Some(now);
            let wait = self.probe_after_polls << self.failed_probes.min(4);
            if self.weight_pct == 0 && self.drained_polls >= wait {
                self.weight_pct = probe;
            }
        }
        self.note_drains(was);
        self.format(now.limit)
    }

    /// Restarts the count of polls drained and counts the probes that ended drained, after a
    /// reply that moved the weight from `was`.
    fn note_drains(&mut self, was: u32) {
        match (was, self.weight_pct) {
            (0, 0) => {}
            (_, 0) => {
                self.drained_polls = 0;
                if self.probing {
                    self.failed_probes = self.failed_probes.saturating_add(1);
                }
            }
            (0, _) => self.probing = true,
            (_, 100) => {
                self.probing = false;
                self.failed_probes = 0;
            }
            _ => {}
        }
    }

    /// The reply line for the current weight and the controller's concurrency limit.
    fn format(&self, limit: Option<u64>) -> String {
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

    fn sample(admitted: u64, rejected: u64, completed: u64) -> AgentSample {
        AgentSample {
            admitted,
            rejected,
            completed,
            ..AgentSample::default()
        }
    }

    /// A sample with nothing rejected and `outstanding` requests held.
    fn at(admitted: u64, completed: u64, outstanding: u64) -> AgentSample {
        AgentSample {
            outstanding,
            ..sample(admitted, 0, completed)
        }
    }

    #[test]
    fn weight_falls_by_the_served_share_and_climbs_back_additively() {
        let mut p = AgentPolicy::default();
        assert_eq!(p.reply(sample(0, 0, 0)), "ready,100%\n");
        assert_eq!(p.reply(sample(100, 0, 100)), "ready,100%\n");
        // 75 of 100 arrivals served: the weight is multiplied by 0.75.
        assert_eq!(p.reply(sample(175, 25, 175)), "ready,75%\n");
        // Admitted but dropped counts as not served: 50 of 100.
        assert_eq!(p.reply(sample(275, 25, 225)), "ready,38%\n");
        // No traffic in the window: keep the last weight.
        let limited = AgentSample {
            limit: Some(40),
            ..sample(275, 25, 225)
        };
        assert_eq!(p.reply(limited), "ready,38%,maxconn:40\n");
        // Healthy windows add 10 points each, up to 100.
        assert_eq!(p.reply(sample(375, 25, 325)), "ready,48%\n");
        for _ in 0..10 {
            let last = p.last.unwrap_or_default();
            p.reply(sample(last.admitted + 100, 25, last.completed + 100));
        }
        assert_eq!(p.reply(sample(2000, 25, 1950)), "ready,100%\n");
    }

    #[test]
    fn a_replica_serving_almost_nothing_is_drained_then_probed() {
        let mut p = AgentPolicy::default();
        p.reply(sample(0, 0, 0));
        assert_eq!(p.reply(sample(95, 5, 5)), "drain\n");
        // With no traffic, it waits 8 polls before its probe.
        for _ in 0..7 {
            assert_eq!(p.reply(sample(95, 5, 5)), "drain\n");
        }
        assert_eq!(p.reply(sample(95, 5, 5)), "ready,10%\n");
        // Still serving almost nothing under the probe: drained again, and the next probe
        // waits twice as long.
        assert_eq!(p.reply(sample(150, 6, 10)), "drain\n");
        for _ in 0..15 {
            assert_eq!(p.reply(sample(150, 6, 10)), "drain\n");
        }
        let mut idle = p.clone();
        assert_eq!(idle.reply(sample(150, 6, 10)), "ready,10%\n");
        // Sticky sessions still arrive while drained; served well, it comes back at the probe
        // at once.
        assert_eq!(p.reply(sample(180, 6, 40)), "ready,10%\n");
        assert_eq!(p.reply(sample(210, 6, 70)), "ready,20%\n");
    }

    #[test]
    fn a_window_with_few_arrivals_waits_for_more() {
        let mut p = AgentPolicy::default();
        p.reply(sample(0, 0, 0));
        // One login admitted, not yet counted as completed: no verdict on one request.
        assert_eq!(p.reply(sample(1, 0, 0)), "ready,100%\n");
        // The window extends until it has 20 arrivals: 20 arrived, 10 served.
        assert_eq!(p.reply(sample(20, 0, 10)), "ready,50%\n");
    }

    #[test]
    fn a_replica_that_stops_serving_is_cut_after_fewer_arrivals() {
        let mut p = AgentPolicy::default();
        p.reply(sample(0, 0, 0));
        // 12 arrivals, 6 served: not clear enough yet, the window waits for 20.
        assert_eq!(p.reply(sample(12, 0, 6)), "ready,100%\n");
        // 24 arrivals, 12 served: the full window decides, weight x 0.5.
        assert_eq!(p.reply(sample(24, 0, 12)), "ready,50%\n");
        // 12 more arrivals, 2 served: a replica that nearly stopped decides at once.
        assert_eq!(p.reply(sample(36, 0, 14)), "ready,8%\n");
        // 10 more, 0 served: drained.
        assert_eq!(p.reply(sample(46, 0, 14)), "drain\n");
    }

    #[test]
    fn a_replica_whose_backlog_stops_moving_is_cut_on_few_arrivals() {
        let mut p = AgentPolicy::default();
        p.reply(at(100, 100, 0));
        // 40 arrive, 10 complete, 30 left waiting: the weight falls to 25%.
        assert_eq!(p.reply(at(140, 110, 30)), "ready,25%\n");
        // Then 5 arrive and the backlog moves (20 complete): too few arrivals to decide.
        let mut moving = p.clone();
        assert_eq!(moving.reply(at(145, 130, 15)), "ready,25%\n");
        // Or 3 arrive and 5 complete of the 33 asked: stalled, cut by that share at once.
        assert_eq!(p.reply(at(143, 115, 28)), "ready,4%\n");
        // Then nothing completes: drained.
        assert_eq!(p.reply(at(145, 115, 30)), "drain\n");
    }

    #[test]
    fn a_backlog_that_stands_still_for_a_poll_decides_an_open_window() {
        let mut p = AgentPolicy::default();
        p.reply(at(100, 100, 0));
        // The window opens healthy: 10 arrive, 10 complete. Then the replica slows: 5 arrive,
        // 1 completes, 4 wait; 15 arrivals are too few for the window.
        assert_eq!(p.reply(at(110, 110, 0)), "ready,100%\n");
        assert_eq!(p.reply(at(115, 111, 4)), "ready,100%\n");
        // 1 more arrives, none completes of the 5 asked since the last poll: drained, though
        // the window (16 arrivals, 11 served) would not decide.
        let mut slowed = p.clone();
        assert_eq!(slowed.reply(at(116, 111, 5)), "drain\n");
        // Drained, it completes 1 of the 5: it stays drained (only serving well, or the probe
        // after a wait, brings it back).
        assert_eq!(slowed.reply(at(116, 112, 4)), "drain\n");
        // A backlog that moves (4 of 5 complete) decides nothing.
        assert_eq!(p.reply(at(116, 115, 1)), "ready,100%\n");
        // Nor does a poll from a backlog of a request or two.
        let mut q = AgentPolicy::default();
        q.reply(at(0, 0, 0));
        q.reply(at(2, 0, 2));
        assert_eq!(q.reply(at(3, 0, 3)), "ready,100%\n");
    }

    #[test]
    fn counters_that_go_backwards_do_not_underflow() {
        let mut p = AgentPolicy::default();
        p.reply(sample(0, 0, 0));
        p.reply(sample(100, 100, 100));
        let back = AgentSample {
            limit: Some(0),
            ..sample(10, 10, 10)
        };
        assert_eq!(p.reply(back), "ready,50%,maxconn:1\n");
    }

    #[test]
    fn what_the_replica_did_before_the_first_poll_is_not_judged() {
        let mut p = AgentPolicy::default();
        // A replica that served a tenth of its requests before any balancer asked (slowed in
        // an earlier run) starts at its full weight...
        assert_eq!(p.reply(sample(900, 100, 100)), "ready,100%\n");
        // ...and is judged from then on.
        assert_eq!(p.reply(sample(1000, 100, 200)), "ready,100%\n");
        assert_eq!(p.reply(sample(1100, 100, 250)), "ready,50%\n");
    }
}
