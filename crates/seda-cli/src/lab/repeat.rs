//! `seda lab repeat`: a scenario, or all of them, run N times; each headline figure's median
//! and spread, and how many runs failed or were inconclusive.
//!
//! With `all`, each round runs every scenario once, in `seda lab run all`'s order, before the
//! next round starts: a spell of load on the machine then touches one run of many scenarios,
//! not every run of one.

use std::path::Path;

use anyhow::{Context, Result, bail};
use seda_lab::Scenario;
use seda_lab::health::Verdict;
use seda_lab::repeat::{MAX_SPREAD, Spread};
use seda_lab::scenario::{self, Ran};
use serde_json::{Value, json};

use super::RepeatArgs;

/// One scenario's runs so far.
struct Tally {
    scenario: &'static dyn Scenario,
    /// Per headline figure, its value in each run.
    values: Vec<Vec<Option<f64>>>,
    /// Per run: whether the watch saw the machine loaded.
    loaded: Vec<bool>,
    runs: Vec<Value>,
    failed: usize,
    inconclusive: usize,
}

impl Tally {
    fn new(scenario: &'static dyn Scenario) -> Self {
        Tally {
            scenario,
            values: vec![Vec::new(); scenario.headline().len()],
            loaded: Vec::new(),
            runs: Vec::new(),
            failed: 0,
            inconclusive: 0,
        }
    }

    /// Takes run `i`'s figures and verdict, and prints its line.
    fn record(&mut self, i: usize, ran: &Ran) {
        let verdict = ran.verdict();
        match verdict {
            Some(Verdict::Pass) => {}
            Some(Verdict::Inconclusive) => self.inconclusive += 1,
            Some(Verdict::Fail) | None => self.failed += 1,
        }
        let summary = ran.outcome.as_ref().ok().map(|o| &o.summary);
        for (path, column) in self.scenario.headline().iter().zip(&mut self.values) {
            column.push(summary.and_then(|s| seda_lab::repeat::figure(s, path)));
        }
        let loaded: Vec<String> = ran
            .health
            .iter()
            .flat_map(|h| h.loaded_because.iter().cloned())
            .collect();
        let verdict = verdict.map_or("could not run", |v| v.as_str());
        println!("{} run {i}: {verdict} in {:.0} s", ran.name, ran.elapsed_s);
        for why in &loaded {
            println!("  loaded: {why}");
        }
        if let Err(e) = &ran.outcome {
            println!("  could not run: {e:#}");
        }
        self.loaded.push(!loaded.is_empty());
        self.runs.push(json!({
            "run": i,
            "verdict": verdict,
            "elapsed_s": ran.elapsed_s,
            "loaded_because": loaded,
        }));
    }

    fn spreads(&self) -> Vec<Spread> {
        self.scenario
            .headline()
            .iter()
            .zip(&self.values)
            .map(|(path, v)| seda_lab::repeat::spread(path, v.clone(), &self.loaded))
            .collect()
    }
}

/// Runs `seda lab repeat`.
pub(super) fn run(args: &RepeatArgs) -> Result<()> {
    if args.times == 0 {
        bail!("--times must be at least 1");
    }
    let chosen = super::chosen(&args.name)?;
    if let Some(s) = chosen.iter().find(|s| s.headline().is_empty()) {
        bail!("`{}` declares no headline figures to repeat", s.name());
    }
    let seda_bin = std::env::current_exe().context("cannot find the seda binary")?;
    let mut tallies: Vec<Tally> = chosen.into_iter().map(Tally::new).collect();
    for i in 1..=args.times {
        let dir = args.out.join(format!("run-{i}"));
        share_cache(&args.out, &dir)?;
        for t in &mut tallies {
            eprintln!("== {} run {i} of {}", t.scenario.name(), args.times);
            let ran = scenario::run(t.scenario, &dir, &seda_bin, args.quick);
            t.record(i, &ran);
        }
    }
    let mut scenarios = Vec::new();
    let (mut flagged, mut figures) = (0, 0);
    for t in &tallies {
        let spreads = t.spreads();
        println!("\n{}:", t.scenario.name());
        print!("{}", seda_lab::repeat::table(&spreads));
        flagged += spreads.iter().filter(|s| s.flagged).count();
        figures += spreads.len();
        scenarios.push(json!({
            "scenario": t.scenario.name(),
            "runs": t.runs,
            "failed": t.failed,
            "inconclusive": t.inconclusive,
            "figures": spreads,
        }));
    }
    let path = args.out.join("repeat.json");
    let doc = json!({
        "quick": args.quick,
        "times": args.times,
        "max_spread": MAX_SPREAD,
        "scenarios": scenarios,
    });
    std::fs::create_dir_all(&args.out)?;
    std::fs::write(&path, serde_json::to_string_pretty(&doc)?)
        .with_context(|| format!("cannot write {}", path.display()))?;
    println!("{}", path.display());
    let failed: usize = tallies.iter().map(|t| t.failed).sum();
    let inconclusive: usize = tallies.iter().map(|t| t.inconclusive).sum();
    println!(
        "{} run(s) of {} scenario(s): {failed} failed or could not run, {inconclusive} \
         inconclusive; {} of {figures} headline figures within +-{:.0}% of their median over \
         the quiet runs",
        args.times * tallies.len(),
        tallies.len(),
        figures - flagged,
        MAX_SPREAD * 100.0
    );
    if failed > 0 {
        bail!("{failed} run(s) failed or could not run");
    }
    Ok(())
}

/// Points `run/.cache` (where a scenario keeps what it builds once: corpora, file sets) at
/// `out/.cache`, so that the runs of a repeat share one.
fn share_cache(out: &Path, run: &Path) -> Result<()> {
    let shared = out.join(".cache");
    std::fs::create_dir_all(&shared)
        .with_context(|| format!("cannot create {}", shared.display()))?;
    std::fs::create_dir_all(run).with_context(|| format!("cannot create {}", run.display()))?;
    let link = run.join(".cache");
    if link.symlink_metadata().is_err() {
        std::os::unix::fs::symlink("../.cache", &link)
            .with_context(|| format!("cannot link {}", link.display()))?;
    }
    Ok(())
}
