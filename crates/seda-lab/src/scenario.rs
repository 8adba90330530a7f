//! A named experiment, and running one or all of them.

use std::path::Path;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use anyhow::Result;

use crate::health::{LoadHealth, Verdict};
use crate::lab::Lab;
use crate::machine::Machine;
use crate::outcome::{Check, Outcome, RunInfo, write};

/// One experiment of the seeds, run on the real system.
pub trait Scenario: Sync {
    /// The name `seda lab run` takes.
    fn name(&self) -> &'static str;
    /// One line: what it shows and which figures it reproduces.
    fn about(&self) -> &'static str;
    /// Runs it: starts what it needs (as pinned child processes), calibrates, drives load,
    /// draws its plots through `lab`, and returns what it measured.
    fn run(&self, lab: &Lab) -> Result<Outcome>;
    /// The figures `seda lab repeat` compares across runs: paths into the summary, `/`
    /// between keys (e.g. `response_time_tuned/goodput_fraction_of_capacity`).
    fn headline(&self) -> &'static [&'static str] {
        &[]
    }
    /// Whether its bottleneck is a capacity stated before the run (an emulated processor or a
    /// hold service), not this machine's CPU: then a run also checks that the servers' real
    /// CPU stayed under [`REAL_CPU_BOUND`] of a core in every load, or the design did not hold.
    fn capacity_by_design(&self) -> bool {
        false
    }
}

/// The most of a core the servers of a scenario whose capacity is by design may use in any
/// load: past it, the machine's CPU could be what bounds them, and its speed would decide the
/// run again.
pub const REAL_CPU_BOUND: f64 = 0.5;

/// The check that the servers' real CPU stayed under [`REAL_CPU_BOUND`] in every load.
fn real_cpu_stays_low(health: &[LoadHealth]) -> Check {
    let worst = health
        .iter()
        .max_by(|a, b| a.server_cpu_share.total_cmp(&b.server_cpu_share));
    Check::new(
        format!(
            "the stated capacity, not this machine's CPU, is the bottleneck (the servers' real \
             CPU under {REAL_CPU_BOUND} of a core in every load)"
        ),
        !health.is_empty() && health.iter().all(|h| h.server_cpu_share < REAL_CPU_BOUND),
        match worst {
            Some(h) => format!(
                "highest {:.2} of a core ({}) over {} loads",
                h.server_cpu_share,
                h.label,
                health.len()
            ),
            None => "no load watched".into(),
        },
    )
}

/// How one scenario ended.
#[derive(Debug)]
pub struct Ran {
    /// Scenario name.
    pub name: &'static str,
    /// Its outcome, or why it could not run.
    pub outcome: Result<Outcome>,
    /// Wall-clock seconds.
    pub elapsed_s: f64,
    /// What the watch saw of each load it drove.
    pub health: Vec<LoadHealth>,
}

impl Ran {
    /// Pass, fail, or inconclusive because the machine was loaded; `None` if it could not run.
    pub fn verdict(&self) -> Option<Verdict> {
        let o = self.outcome.as_ref().ok()?;
        Some(Verdict::of(o.passed(), &self.health))
    }
}

/// Runs `scenario` into `<out>/<name>/`, writing `result.json`, `report.md` and the plots.
pub fn run(scenario: &dyn Scenario, out: &Path, seda_bin: &Path, quick: bool) -> Ran {
    let name = scenario.name();
    let start = Instant::now();
    let started_unix_s = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let machine = Machine::probe();
    let commit = crate::provenance::git_commit();
    let mut health = Vec::new();
    let outcome = Lab::new(name, &out.join(name), seda_bin, quick).and_then(|lab| {
        let outcome = scenario.run(&lab);
        health = lab.health();
        let mut outcome = outcome?;
        if scenario.capacity_by_design() && !outcome.config["skipped"].is_string() {
            outcome.checks.push(real_cpu_stays_low(&health));
        }
        let info = RunInfo {
            name,
            about: scenario.about(),
            quick,
            started_unix_s,
            elapsed_s: start.elapsed().as_secs_f64(),
            machine: &machine,
            plots: &lab.plots(),
            health: &health,
            headline: scenario.headline(),
            commit: commit.as_deref(),
        };
        write(&lab.dir, &info, &outcome)?;
        Ok(outcome)
    });
    Ran {
        name,
        outcome,
        elapsed_s: start.elapsed().as_secs_f64(),
        health,
    }
}
