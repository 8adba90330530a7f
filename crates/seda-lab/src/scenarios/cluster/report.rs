//! `cluster`'s checks, report and plots.

use anyhow::Result;
use seda_sim::summary::{RunSummary, SETTLE_TOLERANCE, spike_table};

use super::{CORES_PER_REPLICA, LOAD_X, MOVE_WITHIN_S, REPLICAS, Run, SLOW_X, Timing};
use crate::Lab;
use crate::figure::fmt;
use crate::haproxy::Balance;
use crate::outcome::Check;
use crate::plot::{LineChart, Series};

fn find(runs: &[Run], b: Balance) -> Option<&Run> {
    runs.iter().find(|r| r.balance == b)
}

/// Agent weights move load off the slowed replica and round robin does not, and the issue's
/// goals: the excess moved within 2 s, and the aggregate p90 after the move.
pub(super) fn checks(runs: &[Run], t: &Timing) -> Vec<Check> {
    let mut out = Vec::new();
    let agent = find(runs, Balance::AgentWeights);
    let rr = find(runs, Balance::RoundRobin);
    let after = |r: Option<&Run>| r.and_then(|r| r.share_after);
    let served = agent.map(|r| r.slowed_served);
    out.push(Check::new(
        "once slowed, the replica serves a smaller share of the requests reaching it (what its \
         agent steers its weight by)",
        served.is_some_and(|(b, a)| a.unwrap_or(1.0) < b.unwrap_or(0.0)),
        format!(
            "r1 served {} of its requests before the slowdown, {} after",
            fmt(served.and_then(|r| r.0)),
            fmt(served.and_then(|r| r.1))
        ),
    ));
    out.push(Check::new(
        "with agent-check weights, the slowed replica gets a smaller share of the new \
         sessions after the slowdown than with round robin",
        after(agent).zip(after(rr)).is_some_and(|(a, r)| a < r),
        format!(
            "slowed replica's share of new sessions after the slowdown: agent weights {}, round robin {}",
            fmt(after(agent)),
            fmt(after(rr))
        ),
    ));
    let moved = agent.and_then(Run::moved_by_goal);
    out.push(Check::new(
        format!(
            "goal: with agent weights, >= 70% of the slowed replica's excess load moves to the \
             others within {MOVE_WITHIN_S} s"
        ),
        moved.is_some_and(|m| m >= 0.7),
        format!(
            "moved {} of its excess (share of new sessions {} before, {} in the second ending \
             {MOVE_WITHIN_S} s after the slowdown; excess = share before x (1 - 1/{SLOW_X}))",
            fmt(moved),
            fmt(agent.and_then(|r| r.share_before)),
            fmt(agent.and_then(|r| r.share_at_goal))
        ),
    ));
    let p90 = agent.and_then(|r| r.p90_after_goal_s);
    out.push(Check::new(
        format!("goal: with agent weights, the aggregate p90 after the move is <= {SETTLE_TOLERANCE} x target"),
        p90.is_some_and(|p| p <= SETTLE_TOLERANCE * t.target_s),
        format!("{} s against target {} s", fmt(p90), t.target_s),
    ));
    out
}

pub(super) fn markdown(runs: &[Run], t: &Timing, capacity: f64) -> String {
    let mut s = format!(
        "**Setup.** {REPLICAS} replicas of `seda serve mail` (per-stage `response_time_tuned`, \
         p90 target {} s, `--agent`), one PostgreSQL database shared by all (its own table \
         prefix), HAProxy in front; all pinned to the server core, the load generator on the \
         other. The cluster's capacity is {capacity:.0} requests/s by design (each replica \
         on an emulated processor of {CORES_PER_REPLICA} core, on the user model's mix); \
         partly-open mail sessions offer {LOAD_X} x that, which two \
         replicas could carry alone. At {:.0} s, replica r1's processor becomes {SLOW_X} \
         times slower (`--slow-on-usr1`). HAProxy keeps each session on the replica that \
         logged it in (stick table on the `sid` cookie; a login starts a new session and is \
         placed afresh), so only new sessions, and sessions refused with 503 that log in \
         again, can move. Agent weights: HAProxy asks each \
         replica's agent every 250 ms; the agent steers its weight by the share of the \
         requests reaching its stages since the last poll that they served (completed, not \
         rejected or dropped): multiplied by that share when it is under 0.9, plus 10 points \
         when it is not, `drain` under 0.1. A replica whose backlog stops moving is judged at \
         once: when it completes under a quarter of its arrivals plus the requests already \
         waiting in it, over its window or over the last poll from a backlog of 3 or more, its \
         weight is multiplied by that share (its sessions wait for their replies, so once it \
         slows few new requests arrive to fill a window). A drained replica comes back at 10% \
         when it serves its sticky sessions well, or after 2 s without traffic (twice as long \
         after each such probe that ends drained).\n\n",
        t.target_s, t.slow_at_s
    );
    s += "r1's share of the new sessions (logins) HAProxy placed, before the slowdown, in the \
          second ending 2 s after it, and from then on; the share of its excess moved by 2 s, \
          and from then to the end; its share of all requests before and after; the aggregate p90 from \
          2 s after the slowdown, and the share of all requests sent from then on (refused ones \
          included) answered within the target.\n\n\
          | balance | sessions before | 1-2 s after | after | excess moved by 2 s | from then on | requests before | requests after | p90 after 2 s (s) | within target after 2 s |\n\
          |---|---|---|---|---|---|---|---|---|---|\n";
    for r in runs {
        s += &format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            r.balance.name(),
            fmt(r.share_before),
            fmt(r.share_at_goal),
            fmt(r.share_after),
            fmt(r.moved_by_goal()),
            fmt(r.moved_after()),
            fmt(r.requests_share.0),
            fmt(r.requests_share.1),
            fmt(r.p90_after_goal_s),
            fmt(r.within_target_after_goal)
        );
    }
    let rows: Vec<(&str, &RunSummary)> = runs
        .iter()
        .map(|r| (r.balance.name(), &r.summary))
        .collect();
    s += &format!(
        "\nAll requests from the slowdown on (`seda sim spike`'s table; \"settle\" counts from \
         the slowdown):\n\n```\n{}```\n",
        spike_table(&rows)
    );
    s += "\n**Where this stands.** None of the seeds runs replicas; WC03 controls one server. \
          The claim is the issue's: a load balancer that reads each replica's serving state \
          moves load off a struggling replica, where round robin keeps sending it its share \
          and least connections moves only what the slowed replica's longer response times \
          hold back. The slowed replica's emulated processor does a fiftieth of its work a \
          second, so the requests it keeps getting wait there.\n";
    s
}

pub(super) fn plots(lab: &Lab, runs: &[Run], t: &Timing) -> Result<()> {
    let mut share: Vec<Series> = runs
        .iter()
        .map(|r| Series::new(r.balance.name(), r.share.clone()))
        .collect();
    share.push(Series::new(
        "slowdown",
        vec![(t.slow_at_s, 0.0), (t.slow_at_s, 1.0)],
    ));
    lab.plot(
        "slowed_share",
        &LineChart::over_time(
            format!(
                "replica r1's share of new sessions (slowed {SLOW_X} x at {:.0} s)",
                t.slow_at_s
            ),
            "share of logins",
            share,
        ),
    )?;
    let mut p90: Vec<Series> = runs
        .iter()
        .map(|r| Series::new(r.balance.name(), r.p90.clone()))
        .collect();
    p90.push(Series::new(
        "target",
        vec![(0.0, t.target_s), (t.total_s, t.target_s)],
    ));
    lab.plot(
        "p90",
        &LineChart::over_time("p90 response time, all replicas", "p90 (s)", p90),
    )?;
    Ok(())
}
