//! What a scenario returns, and how it is written: `result.json` and `report.md`.

use std::path::Path;

use anyhow::{Context, Result};
use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::machine::Machine;

/// One qualitative claim of a paper, checked against what the scenario measured.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    /// The claim, as the paper makes it.
    pub claim: String,
    /// Whether our figures bear it out (within the scenario's stated tolerance).
    pub passed: bool,
    /// The figures behind the verdict.
    pub detail: String,
    /// Whether a run fails when the claim does not hold. Claims that a short run on a noisy
    /// machine cannot decide either way are only observed: their verdict is reported, and
    /// a failing one is named in the report and the command's output.
    pub enforced: bool,
}

impl Check {
    /// A claim the run must bear out.
    pub fn new(claim: impl Into<String>, passed: bool, detail: impl Into<String>) -> Check {
        Check {
            claim: claim.into(),
            passed,
            detail: detail.into(),
            enforced: true,
        }
    }

    /// A claim whose verdict is reported but does not fail the run.
    pub fn observed(claim: impl Into<String>, passed: bool, detail: impl Into<String>) -> Check {
        Check {
            enforced: false,
            ..Check::new(claim, passed, detail)
        }
    }
}

/// Everything a scenario measured.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    /// The figures of the seeds this reproduces, e.g. "WC03 Figures 7 and 10".
    pub paper: String,
    /// The configuration it ran with (loads, durations, targets, scale-down).
    pub config: Value,
    /// Headline figures per run or variant: a [`seda_sim::summary::RunSummary`] serialized
    /// (`p90_admitted_after_settle_s`, `settle_time_s`, `goodput_per_s`, `capacity_per_s`,
    /// `rejected_fraction`, `target_s`...), or a scenario's own shape built from them.
    pub summary: Map<String, Value>,
    /// Everything else: per-interval series, per-run tables.
    pub data: Value,
    /// The paper's claims, checked.
    pub checks: Vec<Check>,
    /// Markdown: our figures beside the paper's, the scale-down, and where we differ and why.
    pub report: String,
}

impl Outcome {
    /// Whether every enforced check passed.
    pub fn passed(&self) -> bool {
        self.checks.iter().all(|c| c.passed || !c.enforced)
    }
}

/// How and when a scenario ran, written with its outcome.
pub(crate) struct RunInfo<'a> {
    pub name: &'a str,
    pub about: &'a str,
    pub quick: bool,
    pub started_unix_s: u64,
    pub elapsed_s: f64,
    pub machine: &'a Machine,
    pub plots: &'a [String],
}

/// Writes `result.json` and `report.md` into `dir`.
pub(crate) fn write(dir: &Path, info: &RunInfo<'_>, outcome: &Outcome) -> Result<()> {
    let result = json!({
        "scenario": info.name,
        "about": info.about,
        "paper": outcome.paper,
        "quick": info.quick,
        "started_unix_s": info.started_unix_s,
        "elapsed_s": info.elapsed_s,
        "machine": info.machine,
        "config": outcome.config,
        "summary": outcome.summary,
        "checks": outcome.checks,
        "passed": outcome.passed(),
        "plots": info.plots,
        "data": outcome.data,
    });
    let path = dir.join("result.json");
    let text = serde_json::to_string_pretty(&result)?;
    std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    let path = dir.join("report.md");
    std::fs::write(&path, report(info, outcome))
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

fn report(info: &RunInfo<'_>, outcome: &Outcome) -> String {
    let m = info.machine;
    let mut s = format!("# `{}`: {}\n\n", info.name, info.about);
    s += &format!(
        "Reproduces: {}. Form: {}. Ran {:.0} s on {} ({} CPUs, {:.0} GiB, load average {:.2} at \
         start), seda {}.\n\n",
        outcome.paper,
        if info.quick { "quick" } else { "full" },
        info.elapsed_s,
        if m.cpu_model.is_empty() {
            "an unknown CPU"
        } else {
            &m.cpu_model
        },
        m.cpus,
        m.memory_gib,
        m.load_average_1m,
        m.seda_version
    );
    s += outcome.report.trim_end();
    s += "\n\n## The paper's claims, checked\n\n| claim | verdict | figures |\n|---|---|---|\n";
    for c in &outcome.checks {
        let verdict = if c.passed {
            "holds"
        } else {
            "**does not hold**"
        };
        s += &format!("| {} | {verdict} | {} |\n", c.claim, c.detail);
    }
    if !info.plots.is_empty() {
        s += "\n## Plots\n\n";
        for p in info.plots {
            s += &format!("![{p}]({p}.png)\n\n");
        }
    }
    s
}
