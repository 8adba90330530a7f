//! A named experiment, and running one or all of them.

use std::path::Path;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Result, bail};

use crate::health::{LoadHealth, Verdict};
use crate::lab::Lab;
use crate::machine::Machine;
use crate::outcome::{Outcome, RunInfo, write};
use crate::scenarios;

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
}

/// Every scenario, in the order `run all` takes them.
pub fn all() -> &'static [&'static dyn Scenario] {
    scenarios::ALL
}

/// The scenario called `name`.
pub fn find(name: &str) -> Result<&'static dyn Scenario> {
    match all().iter().find(|s| s.name() == name) {
        Some(s) => Ok(*s),
        None => bail!(
            "no scenario `{name}`: `seda lab list` shows {}",
            all()
                .iter()
                .map(|s| s.name())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
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
    let commit = crate::results::git_commit();
    let mut health = Vec::new();
    let outcome = Lab::new(name, &out.join(name), seda_bin, quick).and_then(|lab| {
        let outcome = scenario.run(&lab);
        health = lab.health();
        let outcome = outcome?;
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
