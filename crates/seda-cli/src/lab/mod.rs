//! `seda lab`: the seeds' experiments on the real system, with plots and reports.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use seda_lab::health::Verdict;
use seda_lab::{scenario, scenarios};

mod repeat;

/// `seda lab` subcommands.
#[derive(clap::Subcommand, Debug)]
pub enum LabCommand {
    /// List the scenarios.
    List,
    /// Run a scenario (or `all`) and write result.json, report.md and plots for each, then
    /// results.md over every result.json in the output directory.
    Run(RunArgs),
    /// Run a scenario (or `all`) N times and report each headline figure's median and spread
    /// (`repeat.json` and a table per scenario; figures straying over +-10% of their median
    /// are flagged), and how many runs failed or were inconclusive.
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
    /// A scenario from `seda lab list`, or `all`.
    name: String,
    /// How many runs (of each scenario).
    #[arg(long, default_value_t = 5)]
    times: usize,
    /// The quick form of each run.
    #[arg(long)]
    quick: bool,
    /// Where to write: `run-1/`, `run-2/`... (one directory per scenario in each) and
    /// `repeat.json`.
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
        LabCommand::Repeat(args) => repeat::run(args),
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

/// The scenarios `name` picks: every one for `all`.
fn chosen(name: &str) -> Result<Vec<&'static dyn seda_lab::Scenario>> {
    Ok(if name == "all" {
        scenarios::all().to_vec()
    } else {
        vec![scenarios::find(name)?]
    })
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
    let chosen = chosen(&args.name)?;
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
