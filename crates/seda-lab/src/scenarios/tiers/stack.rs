//! The three tiers of one variant, each a process in its own namespace ([`TierNet`]): the
//! front and the middle are `seda serve tier` (axum behind seda's tower layer, 5 ms of their
//! own work a request, then a call below), the back is the hold service ([`crate::hold`]),
//! whose capacity is its workers over the hold each request asks for.
//!
//! Under DAGOR the back is the same hold service behind a gate in its namespace (`seda serve
//! tier --policy dagor --work-ms 0 --below-limit 2 --below-queue 16`): the gate lets two
//! requests at a time reach the two workers and queues the rest, at most 16 as the hold
//! service's own queue bound, so that DAGOR's agent sees the back's queueing time, sets the
//! back's level from it and says it on the back's answers.

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::{Context, Result};
use seda_http::admin::StatsDocument;

use super::net::TierNet;
use crate::child::Child;
use crate::hold::HoldSetup;
use crate::tier_stats::{PATH, TierStats};
use crate::{Lab, bottleneck};

/// Port every tier listens on (each namespace has its own ports).
const PORT: u16 = 8080;
/// The back's admin port.
const ADMIN_PORT: u16 = 8081;
/// Under DAGOR, the hold service's port behind the back's gate.
const HELD_PORT: u16 = 8082;
/// The back's workers. Two (100/s), not four: at 200/s the three tiers' real CPU came near
/// and past the design's half a core of the servers' core. Fewer workers lower every rate and
/// keep every time (the hold, the queue's longest wait: 8 holds), and every figure the
/// scenario checks is a share of the capacity or a time; a longer hold would have changed the
/// times, and what the variants did (`docs/lab-notebook.md`, 2026-12-07).
pub const BACK_WORKERS: usize = 2;
/// The back's queue bound: past it, 503 with `Retry-After`.
pub const BACK_QUEUE: usize = 16;
/// The hold each request asks of the back, ms.
pub const HOLD_MS: u64 = 20;
/// The front's and the middle's own work a request, ms (a hold of one of their workers).
pub const TIER_WORK_MS: f64 = 5.0;
/// The front's and the middle's workers: their own capacity (12,800/s) is far above the
/// back's, so the back is the one tier overloaded.
pub const TIER_WORKERS: usize = 64;
/// A request's budget, set by the front for requests that bring none, ms.
pub const DEADLINE_MS: u64 = 500;

/// The back's capacity, requests a second, by design: workers over the hold.
pub fn back_capacity_per_s() -> f64 {
    BACK_WORKERS as f64 / (HOLD_MS as f64 / 1e3)
}

/// The running tiers of one variant.
pub struct Stack {
    /// The front's address (where the load goes).
    pub front: SocketAddr,
    middle: SocketAddr,
    back_admin: SocketAddr,
    /// Under DAGOR, the back's gate (its counters).
    gate: Option<SocketAddr>,
    children: Vec<Child>,
}

impl Stack {
    /// Starts the back, the middle and the front of `variant`, whose tiers run `policy`
    /// (`alone`, `ours` or `dagor`), the middle with `middle_help` besides (`seda serve tier`'s
    /// `--throttle`, `--retries`, `--retry-budget`).
    pub fn start(
        lab: &Lab,
        net: &TierNet,
        variant: &str,
        policy: &str,
        middle_help: &[String],
    ) -> Result<Stack> {
        let at = |tier: usize, port: u16| SocketAddr::from((net.tier_addr(tier), port));
        let (front, middle, back) = (at(0, PORT), at(1, PORT), at(2, PORT));
        let back_admin = at(2, ADMIN_PORT);
        let dagor = policy == "dagor";
        let held = if dagor { at(2, HELD_PORT) } else { back };
        let mut children = Vec::new();

        let setup = HoldSetup {
            workers: BACK_WORKERS,
            queue: BACK_QUEUE,
            terminate: None,
            stats_period_ms: None,
        };
        let name = format!("{variant}-back");
        let config = bottleneck::write_config(lab, &name, &setup.serve_config())?;
        let mut cmd = lab.seda(&["serve", "bottleneck"]);
        cmd.args([
            "--addr",
            &held.to_string(),
            "--admin",
            &back_admin.to_string(),
        ])
        .arg("--config")
        .arg(config);
        children.push(Self::spawn(lab, net, 2, &name, &cmd, held)?);
        if dagor {
            let name = format!("{variant}-back-gate");
            let cmd = lab.seda(&[
                "serve",
                "tier",
                "--addr",
                &back.to_string(),
                "--downstream",
                &format!("http://{held}/hold"),
                "--policy",
                policy,
                "--work-ms",
                "0",
                "--below-limit",
                &BACK_WORKERS.to_string(),
                "--below-queue",
                &BACK_QUEUE.to_string(),
                "--deadline-ms",
                &DEADLINE_MS.to_string(),
                "--target-ms",
                &DEADLINE_MS.to_string(),
            ]);
            children.push(Self::spawn(lab, net, 2, &name, &cmd, back)?);
        }

        for (tier, addr, below) in [
            // Under DAGOR the back's gate serves `/` and calls the hold service's `/hold`.
            (
                1,
                middle,
                format!("http://{back}/{}", if dagor { "" } else { "hold" }),
            ),
            (0, front, format!("http://{middle}/")),
        ] {
            let name = format!("{variant}-{}", super::net::TIERS[tier]);
            let mut cmd = lab.seda(&[
                "serve",
                "tier",
                "--addr",
                &addr.to_string(),
                "--downstream",
                &below,
                "--policy",
                policy,
                "--work-ms",
                &TIER_WORK_MS.to_string(),
                "--workers",
                &TIER_WORKERS.to_string(),
                "--deadline-ms",
                &DEADLINE_MS.to_string(),
                "--target-ms",
                &DEADLINE_MS.to_string(),
            ]);
            if dagor && tier == 0 {
                // The front is the trusted edge that gives requests their priorities.
                cmd.arg("--edge");
            }
            if tier == 1 {
                cmd.args(middle_help);
            }
            children.push(Self::spawn(lab, net, tier, &name, &cmd, addr)?);
        }
        Ok(Stack {
            front,
            middle,
            back_admin,
            gate: dagor.then_some(back),
            children,
        })
    }

    fn spawn(
        lab: &Lab,
        net: &TierNet,
        tier: usize,
        name: &str,
        cmd: &std::process::Command,
        addr: SocketAddr,
    ) -> Result<Child> {
        let mut child = lab.spawn(name, &net.inside(tier, cmd))?;
        child.wait_port(addr, Duration::from_secs(30))?;
        Ok(child)
    }

    /// The front's and the middle's counters now.
    pub fn tiers(&self) -> Result<[TierStats; 2]> {
        Ok([
            crate::admin::get_json(self.front, PATH).context("the front's counters")?,
            crate::admin::get_json(self.middle, PATH).context("the middle's counters")?,
        ])
    }

    /// The back's admin document now.
    pub fn back(&self) -> Result<StatsDocument> {
        crate::admin::stats(self.back_admin).context("the back's counters")
    }

    /// The back's counts now: the hold service's, and under DAGOR its gate's refusals (its
    /// level's and its queue bound's) and arrivals.
    pub fn back_counts(&self) -> Result<BackCounts> {
        let mut counts = BackCounts::of(&self.back()?);
        if let Some(gate) = self.gate {
            let g = self.gate_stats(gate)?;
            counts.refused += g.refused_at_door;
            counts.requests = g.requests;
        }
        Ok(counts)
    }

    /// Under DAGOR, the back gate's counters (with the back's admission level).
    pub fn gate(&self) -> Result<Option<TierStats>> {
        self.gate.map(|g| self.gate_stats(g)).transpose()
    }

    fn gate_stats(&self, gate: SocketAddr) -> Result<TierStats> {
        crate::admin::get_json(gate, PATH).context("the back gate's counters")
    }

    /// Stops the tiers, front first.
    pub fn stop(mut self) {
        while let Some(c) = self.children.pop() {
            c.stop();
        }
    }
}

/// The back's counters that matter here: requests its front end saw cancelled by their client
/// (the middle's call dropped), and its stage's refusals and completions.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct BackCounts {
    pub cancelled: u64,
    pub refused: u64,
    pub completed: u64,
    pub requests: u64,
}

impl BackCounts {
    /// Read from the back's document.
    pub fn of(doc: &StatsDocument) -> BackCounts {
        let frontend = doc.frontend.as_ref();
        let stage = doc.runtime.as_ref().and_then(|r| {
            r.stages
                .iter()
                .find(|s| s.name == seda_testbed::bottleneck::STAGE)
        });
        BackCounts {
            cancelled: frontend.map_or(0, |f| f.cancelled_requests),
            requests: frontend.map_or(0, |f| f.requests),
            refused: stage.map_or(0, |s| s.totals.counters.rejected_total),
            completed: stage.map_or(0, |s| s.totals.counters.completed),
        }
    }

    /// The counts gained since `before`.
    pub fn since(&self, before: &BackCounts) -> BackCounts {
        BackCounts {
            cancelled: self.cancelled.saturating_sub(before.cancelled),
            refused: self.refused.saturating_sub(before.refused),
            completed: self.completed.saturating_sub(before.completed),
            requests: self.requests.saturating_sub(before.requests),
        }
    }
}
