//! `seda lab`: the seeds' experiments on the real system, with plots and reports.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use seda_lab::health::Verdict;
use seda_lab::{scenario, scenarios};

/// `seda lab` subcommands.
#[derive(clap::Subcommand, Debug)]
pub enum LabCommand {
    /// List the scenarios.
    List,
    /// Run a scenario (or `all`) and write result.json, report.md and plots for each, then
    /// results.md over every result.json in the output directory.
    Run(RunArgs),
    /// Run a scenario N times and report each headline figure's median and spread
    /// (`repeat.json` and a table; figures straying over +-15% of their median are flagged).
    Repeat(RepeatArgs),
    /// Write the results page (`results.md`: every claim, the paper's figure, ours, the
    /// verdict) again from the result.json files of a run directory; with --page and --readme,
    /// also the repository's page and the README's results block.
    Results(ResultsArgs),
}

/// Arguments of `seda lab results`.
#[derive(clap::Args, Debug)]
pub struct ResultsArgs {
    /// The --out directory of a `seda lab run` (one directory per scenario).
    out: PathBuf,
    /// Also write the page here, e.g. docs/results.md (without links into the run directory).
    #[arg(long)]
    page: Option<PathBuf>,
    /// Rewrite the block between `<!-- results:begin -->` and `<!-- results:end -->` of this
    /// file (e.g. README.md) with a short table linking to the page; nothing else changes.
    #[arg(long)]
    readme: Option<PathBuf>,
}

/// Arguments of `seda lab repeat`.
#[derive(clap::Args, Debug)]
pub struct RepeatArgs {
    /// A scenario from `seda lab list`.
    name: String,
    /// How many runs.
    #[arg(long, default_value_t = 5)]
    times: usize,
    /// The quick form of each run.
    #[arg(long)]
    quick: bool,
    /// Where to write: `run-1/`, `run-2/`... and `repeat.json`.
    #[arg(long, default_value = "target/seda-lab-repeat")]
    out: PathBuf,
}

/// Arguments of `seda lab run`.
#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// A scenario from `seda lab list`, or `all`.
    name: String,
    /// The quick form (each scenario under a minute), as CI runs it.
    #[arg(long)]
    quick: bool,
    /// Where to write: one directory per scenario.
    #[arg(long, default_value = "target/seda-lab")]
    out: PathBuf,
}

/// Runs a `seda lab` command.
pub fn run(cmd: &LabCommand) -> Result<()> {
    match cmd {
        LabCommand::List => {
            for s in scenarios::all() {
                println!("{:<14} {}", s.name(), s.about());
            }
            Ok(())
        }
        LabCommand::Run(args) => run_scenarios(args),
        LabCommand::Repeat(args) => repeat(args),
        LabCommand::Results(args) => {
            let written =
                seda_lab::results::write(&args.out, args.page.as_deref(), args.readme.as_deref())?;
            for p in written {
                println!("{}", p.display());
            }
            Ok(())
        }
    }
}

fn repeat(args: &RepeatArgs) -> Result<()> {
    let s = scenarios::find(&args.name)?;
    if args.times == 0 {
        bail!("--times must be at least 1");
    }
    let headline = s.headline();
    if headline.is_empty() {
        bail!("`{}` declares no headline figures to repeat", s.name());
    }
    let seda_bin = std::env::current_exe().context("cannot find the seda binary")?;
    let mut values: Vec<Vec<Option<f64>>> = vec![Vec::new(); headline.len()];
    let mut runs = Vec::new();
    let mut loaded_runs = Vec::new();
    for i in 1..=args.times {
        eprintln!("== {} run {i} of {}", s.name(), args.times);
        let dir = args.out.join(format!("run-{i}"));
        share_cache(&args.out, &dir)?;
        let ran = scenario::run(s, &dir, &seda_bin, args.quick);
        let verdict = ran.verdict().map_or("could not run", |v| v.as_str());
        let summary = ran.outcome.as_ref().ok().map(|o| &o.summary);
        for (path, column) in headline.iter().zip(&mut values) {
            column.push(summary.and_then(|s| seda_lab::repeat::figure(s, path)));
        }
        let loaded: Vec<String> = ran
            .health
            .iter()
            .flat_map(|h| h.loaded_because.iter().cloned())
            .collect();
        println!("run {i}: {verdict} in {:.0} s", ran.elapsed_s);
        for why in &loaded {
            println!("  loaded: {why}");
        }
        loaded_runs.push(!loaded.is_empty());
        if let Err(e) = &ran.outcome {
            println!("  could not run: {e:#}");
        }
        runs.push(serde_json::json!({
            "run": i,
            "verdict": verdict,
            "elapsed_s": ran.elapsed_s,
            "loaded_because": loaded,
        }));
    }
    let spreads: Vec<_> = headline
        .iter()
        .zip(values)
        .map(|(path, v)| seda_lab::repeat::spread(path, v, &loaded_runs))
        .collect();
    print!("{}", seda_lab::repeat::table(&spreads));
    let path = args.out.join("repeat.json");
    let doc = serde_json::json!({
        "scenario": s.name(),
        "quick": args.quick,
        "times": args.times,
        "max_spread": seda_lab::repeat::MAX_SPREAD,
        "runs": runs,
        "figures": spreads,
    });
    std::fs::create_dir_all(&args.out)?;
    std::fs::write(&path, serde_json::to_string_pretty(&doc)?)
        .with_context(|| format!("cannot write {}", path.display()))?;
    println!("{}", path.display());
    let flagged = spreads.iter().filter(|s| s.flagged).count();
    if flagged > 0 {
        println!(
            "{flagged} figure(s) strayed over +-15% of their median, were missing from a quiet run, or had no quiet run"
        );
    }
    Ok(())
}

/// Points `run/.cache` (where a scenario keeps what it builds once: corpora, file sets) at
/// `out/.cache`, so that the runs of a repeat share one.
fn share_cache(out: &std::path::Path, run: &std::path::Path) -> Result<()> {
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

/// The line `seda lab run` ends with for each known shortfall: a goal not met yet, which does
/// not fail the run but must not pass unseen.
fn shortfall_line(scenario: &str, c: &seda_lab::Check) -> String {
    format!(
        "KNOWN SHORTFALL ({}; does not fail the run) {scenario}: {}: {}",
        if c.passed { "met this run" } else { "not met" },
        c.claim,
        c.detail
    )
}

fn run_scenarios(args: &RunArgs) -> Result<()> {
    let chosen = if args.name == "all" {
        scenarios::all().to_vec()
    } else {
        vec![scenarios::find(&args.name)?]
    };
    let seda_bin = std::env::current_exe().context("cannot find the seda binary")?;
    let mut failed = Vec::new();
    let mut shortfalls = Vec::new();
    let mut index = Vec::new();
    for s in chosen {
        eprintln!(
            "== {} ({})",
            s.name(),
            if args.quick { "quick" } else { "full" }
        );
        let ran = scenario::run(s, &args.out, &seda_bin, args.quick);
        let dir = args.out.join(ran.name);
        let verdict = ran.verdict();
        let status = |o: &seda_lab::Outcome| match verdict {
            Some(Verdict::Inconclusive) => format!(
                "loaded, inconclusive ({})",
                if o.passed() {
                    "its claims held"
                } else {
                    "some claims do not hold"
                }
            ),
            _ if o.passed() => "all claims hold".to_string(),
            _ => "some claims do not hold".to_string(),
        };
        index.push(seda_lab::index::IndexEntry {
            name: ran.name.to_string(),
            status: match &ran.outcome {
                Ok(o) => status(o),
                Err(e) => format!("could not run: {e:#}"),
            },
            passed: verdict == Some(Verdict::Pass),
            elapsed_s: ran.elapsed_s,
        });
        match &ran.outcome {
            Ok(outcome) => {
                for c in &outcome.checks {
                    let mark = match (c.passed, c.enforced, c.shortfall) {
                        (true, _, _) => "ok  ",
                        (false, true, _) => "FAIL",
                        (false, false, true) => "todo",
                        (false, false, false) => "miss",
                    };
                    println!("{} {mark} {}: {}", ran.name, c.claim, c.detail);
                    if c.shortfall {
                        shortfalls.push(shortfall_line(ran.name, c));
                    }
                }
                for h in ran.health.iter().filter(|h| h.loaded()) {
                    println!(
                        "{} loaded: {}: {}",
                        ran.name,
                        h.label,
                        h.loaded_because.join("; ")
                    );
                }
                println!(
                    "{}: {} in {:.0} s; report {}",
                    ran.name,
                    status(outcome),
                    ran.elapsed_s,
                    dir.join("report.md").display()
                );
                if verdict == Some(Verdict::Fail) {
                    failed.push(ran.name);
                }
            }
            Err(e) => {
                println!("{}: could not run: {e:#}", ran.name);
                failed.push(ran.name);
            }
        }
    }
    if args.name == "all" {
        let page = seda_lab::index::write_index(&args.out, &index)?;
        println!("index of every scenario: {}", page.display());
    }
    // Every result.json in the directory, this run's and any earlier one's beside it.
    match seda_lab::results::write(&args.out, None, None) {
        Ok(pages) => {
            for p in pages {
                println!("results page: {}", p.display());
            }
        }
        Err(e) => println!("no results page: {e:#}"),
    }
    for line in &shortfalls {
        println!("{line}");
    }
    if !failed.is_empty() {
        bail!(
            "{} did not hold or could not run: {}",
            failed.len(),
            failed.join(", ")
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shortfall_gets_a_line_of_its_own() {
        let c = seda_lab::Check::shortfall("P within 5% on PostgreSQL", false, "0.93 of the best");
        assert_eq!(
            shortfall_line("pool-control", &c),
            "KNOWN SHORTFALL (not met; does not fail the run) pool-control: P within 5% on \
             PostgreSQL: 0.93 of the best"
        );
        let met = seda_lab::Check::shortfall("goal", true, "1.00");
        assert!(shortfall_line("x", &met).contains("(met this run;"));
    }
}
