//! `seda lab`: the seeds' experiments on the real system, with plots and reports.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use seda_lab::scenario;

/// `seda lab` subcommands.
#[derive(clap::Subcommand, Debug)]
pub enum LabCommand {
    /// List the scenarios.
    List,
    /// Run a scenario (or `all`) and write result.json, report.md and plots.
    Run(RunArgs),
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
            for s in scenario::all() {
                println!("{:<14} {}", s.name(), s.about());
            }
            Ok(())
        }
        LabCommand::Run(args) => run_scenarios(args),
    }
}

fn run_scenarios(args: &RunArgs) -> Result<()> {
    let chosen = if args.name == "all" {
        scenario::all().to_vec()
    } else {
        vec![scenario::find(&args.name)?]
    };
    let seda_bin = std::env::current_exe().context("cannot find the seda binary")?;
    let mut failed = Vec::new();
    let mut index = Vec::new();
    for s in chosen {
        eprintln!(
            "== {} ({})",
            s.name(),
            if args.quick { "quick" } else { "full" }
        );
        let ran = scenario::run(s, &args.out, &seda_bin, args.quick);
        let dir = args.out.join(ran.name);
        index.push(seda_lab::index::IndexEntry {
            name: ran.name.to_string(),
            status: match &ran.outcome {
                Ok(o) if o.passed() => "all claims hold".to_string(),
                Ok(_) => "some claims do not hold".to_string(),
                Err(e) => format!("could not run: {e:#}"),
            },
            passed: ran.outcome.as_ref().is_ok_and(|o| o.passed()),
            elapsed_s: ran.elapsed_s,
        });
        match &ran.outcome {
            Ok(outcome) => {
                for c in &outcome.checks {
                    let mark = match (c.passed, c.enforced) {
                        (true, _) => "ok  ",
                        (false, true) => "FAIL",
                        (false, false) => "miss",
                    };
                    println!("{} {mark} {}: {}", ran.name, c.claim, c.detail);
                }
                println!(
                    "{}: {} in {:.0} s; report {}",
                    ran.name,
                    if outcome.passed() {
                        "all claims hold"
                    } else {
                        "some claims do not hold"
                    },
                    ran.elapsed_s,
                    dir.join("report.md").display()
                );
                if !outcome.passed() {
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
    if !failed.is_empty() {
        bail!(
            "{} did not hold or could not run: {}",
            failed.len(),
            failed.join(", ")
        );
    }
    Ok(())
}
