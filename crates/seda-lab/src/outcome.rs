//! What a scenario returns, and how it is written: `result.json` and `report.md`.

use std::path::Path;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::figure::fmt;
use crate::health::{LoadHealth, Verdict};
use crate::machine::Machine;

/// One qualitative claim of a paper, checked against what the scenario measured.
///
/// Three kinds: *enforced* ([`Check::new`]: a run fails when it does not hold), *observed*
/// ([`Check::observed`]: a short run on a noisy machine cannot decide it either way, so its
/// verdict is only reported) and *known shortfall* ([`Check::shortfall`]: a goal the code does
/// not meet yet, reported in its own section of the results page and at the end of
/// `seda lab run`, never failing a run). [`Check::paper`] adds the paper's own figure.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Check {
    /// The claim, as the paper makes it.
    pub claim: String,
    /// Whether our figures bear it out (within the scenario's stated tolerance).
    pub passed: bool,
    /// The figures behind the verdict.
    pub detail: String,
    /// Whether a run fails when the claim does not hold. Claims that a short run on a noisy
    /// machine cannot decide either way are only observed: their verdict is reported, and
    /// a failing one is named in the report and the command's output. False for a known
    /// shortfall too (readers of `result.json` rely on this field alone to fail a run).
    pub enforced: bool,
    /// A goal not met yet ([`Check::shortfall`]): reported apart, never fails the run.
    /// Written to `result.json` only when true.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub shortfall: bool,
    /// The paper's figure for this claim, where the claim states one (e.g. `WC03 Fig. 10:
    /// p90 ~1 s`). Written to `result.json` only when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paper: Option<String>,
}

impl Check {
    /// A claim the run must bear out.
    pub fn new(claim: impl Into<String>, passed: bool, detail: impl Into<String>) -> Check {
        Check {
            claim: claim.into(),
            passed,
            detail: detail.into(),
            enforced: true,
            shortfall: false,
            paper: None,
        }
    }

    /// A claim whose verdict is reported but does not fail the run.
    pub fn observed(claim: impl Into<String>, passed: bool, detail: impl Into<String>) -> Check {
        Check {
            enforced: false,
            ..Check::new(claim, passed, detail)
        }
    }

    /// A known shortfall: a goal the code does not meet yet. Its verdict is reported (in its
    /// own section of the results page, and on a line of its own at the end of `seda lab
    /// run`) but does not fail the run.
    pub fn shortfall(claim: impl Into<String>, passed: bool, detail: impl Into<String>) -> Check {
        Check {
            enforced: false,
            shortfall: true,
            ..Check::new(claim, passed, detail)
        }
    }

    /// An observed goal on a cost: `ours` spends at most `at_most` x `base`'s CPU per request,
    /// each given as its name and its ms per request (`None` where not measured). The detail
    /// names `what` was measured (`server CPU`) and gives both figures and their ratio.
    pub(crate) fn cpu_goal(
        claim: &str,
        what: &str,
        (name, ours): (&str, Option<f64>),
        (base_name, base): (&str, Option<f64>),
        at_most: f64,
    ) -> Check {
        Check::observed(
            claim,
            ours.zip(base).is_some_and(|(o, b)| o <= at_most * b),
            format!(
                "{what} per request: {name} {} ms, {base_name} {} ms ({} x)",
                fmt(ours),
                fmt(base),
                fmt(ours.zip(base).map(|(o, b)| o / b))
            ),
        )
    }

    /// The paper's figure for this claim, e.g. `.paper("WC03 Fig. 10: p90 ~1 s")`.
    #[must_use]
    pub fn paper(mut self, figure: impl Into<String>) -> Check {
        self.paper = Some(figure.into());
        self
    }

    /// What the check is, in the words of the results page and of `seda lab run`'s output.
    pub fn kind(&self) -> &'static str {
        match (self.enforced, self.shortfall) {
            (true, _) => "enforced",
            (false, true) => "known shortfall",
            (false, false) => "observed",
        }
    }
}

/// An outcome's `data` (or part of it): each run's figures under its name.
pub(crate) fn by_name<K: ToString>(runs: impl IntoIterator<Item = (K, Value)>) -> Value {
    Value::Object(runs.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
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
    pub health: &'a [LoadHealth],
    /// The scenario's headline figures (paths into the summary).
    pub headline: &'a [&'a str],
    /// The checkout's commit (`git rev-parse`), where there is one.
    pub commit: Option<&'a str>,
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
        "commit": info.commit,
        "build": crate::provenance::BUILD,
        "config": outcome.config,
        "summary": outcome.summary,
        // What `seda lab repeat` compares, read here so a path that names no figure shows.
        "headline": info
            .headline
            .iter()
            .map(|&path| (path.to_string(), json!(crate::repeat::figure(&outcome.summary, path))))
            .collect::<Map<String, Value>>(),
        "checks": outcome.checks,
        "passed": outcome.passed(),
        "verdict": Verdict::of(outcome.passed(), info.health).as_str(),
        "health": {
            "loaded": info.health.iter().any(LoadHealth::loaded),
            "rules": {
                "server_core_others_share_run": crate::health::SERVER_CORE_OTHERS_RUN,
                "server_core_others_share_any_second": crate::health::SERVER_CORE_OTHERS_SECOND,
                "load_core_others_share_run": crate::health::LOAD_CORE_OTHERS_RUN,
            },
            "loads": info.health,
        },
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
        m.cpu_name(),
        m.cpus,
        m.memory_gib,
        m.load_average_1m,
        m.seda_version
    );
    let verdict = Verdict::of(outcome.passed(), info.health);
    s += &format!("**Verdict: {}.**\n\n", verdict.as_str());
    s += outcome.report.trim_end();
    s += "\n\n## The paper's claims, checked\n\n| claim | verdict | figures |\n|---|---|---|\n";
    for c in &outcome.checks {
        let verdict = match (c.passed, c.shortfall) {
            (true, _) => "holds",
            (false, true) => "known shortfall: does not hold yet",
            (false, false) => "**does not hold**",
        };
        let claim = match &c.paper {
            Some(p) => format!("{} (paper: {p})", c.claim),
            None => c.claim.clone(),
        };
        s += &format!("| {claim} | {verdict} | {} |\n", c.detail);
    }
    s += &health_section(info.health);
    if !info.plots.is_empty() {
        s += "\n## Plots\n\n";
        for p in info.plots {
            s += &format!("![{p}]({p}.png)\n\n");
        }
    }
    s
}

/// The machine during each load: what the servers got and what others took.
fn health_section(loads: &[LoadHealth]) -> String {
    if loads.is_empty() {
        return String::new();
    }
    let mut s = String::from(
        "\n## The machine during the run\n\nEach load, watched once a second (`health` in \
         `result.json` has every second): the servers' CPU on their core, other processes' \
         share of the servers' core (run and worst second) and of the load generator's, with \
         the part of it the hypervisor took from this virtual machine (steal), the generator \
         core's worst wake-up lag, and seconds with nothing completed. A load is \
         *loaded* when others took a fifth of the servers' core, 60% of it in one second, a \
         third of the generator's, or the generator's core lagged 250 ms, or when the machine's \
         speed moved twofold (readings of one saturated server's work per CPU-second in the mail \
         service's calibration, or a run's speed against its calibration's); the verdict is \
         then inconclusive.\n\n| load | s | servers' CPU | others on servers' core (worst s), steal | \
         others on generator's core, steal | lag ms | s without completions | loaded |\n|---|---|---|---|---|---|---|---|\n",
    );
    for h in loads {
        s += &format!(
            "| {} | {:.0} | {:.0}% | {:.0}% ({:.0}%), {:.0}% | {:.0}%, {:.0}% | {:.0} | {} | {} |\n",
            h.label,
            h.duration_s,
            h.server_cpu_share * 100.0,
            h.server_core_others_share * 100.0,
            h.worst_second_server_core_others_share * 100.0,
            h.server_core_steal_share * 100.0,
            h.load_core_others_share * 100.0,
            h.load_core_steal_share * 100.0,
            h.worst_lag_ms,
            h.seconds_without_completions,
            if h.loaded() {
                h.loaded_because.join("; ")
            } else {
                "no".into()
            }
        );
    }
    s
}
