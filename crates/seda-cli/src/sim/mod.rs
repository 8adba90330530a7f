//! `seda sim <scenario>`: the seeds' overload experiments in the simulator, with every
//! controller compared on the same seed.

mod classes;
mod common;
mod degrade;
mod goodput;
mod spike;
mod stages;
mod users;

use anyhow::{Result, bail};
use clap::Args;

/// Arguments of `seda sim`.
#[derive(Args, Debug, Clone)]
pub struct SimArgs {
    /// Scenario: spike, users, classes, goodput, degrade or stages.
    pub scenario: String,
    /// Run only this controller (default: every controller of the scenario).
    #[arg(long, long_help = controller_help())]
    pub controller: Option<String>,
    /// Seed of the run.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// spike: number of users during the spike (think time is scaled to offer 3 x capacity).
    #[arg(long)]
    pub users: Option<u32>,
    /// spike: servers of the stage (10 ms exponential service each).
    #[arg(long)]
    pub servers: Option<u32>,
    /// spike: service-time distribution with a 10 ms mean: exp, lognormal (sigma 1.5), pareto
    /// (alpha 1.5) or bimodal (90% 5 ms, 10% 55 ms, exponential each).
    #[arg(long, default_value = "exp")]
    pub service: String,
    /// Extra controller parameter NAME=VALUE (repeatable), passed to the controller of
    /// `--controller` (e.g. `--param setpoint=0.3`).
    #[arg(long = "param", value_parser = parse_param)]
    pub params: Vec<(String, f64)>,
    /// Print a per-second series for each run (table mode).
    #[arg(long)]
    pub series: bool,
}

/// `--controller`'s long help: the catalogue, one controller a line.
fn controller_help() -> String {
    format!(
        "Run only this controller (default: every controller of the scenario). `none` runs \
         without one; `degrade` and `goodput` compare their own modes. The controllers:\n{}",
        seda_control::catalogue::listing()
    )
}

fn parse_param(s: &str) -> std::result::Result<(String, f64), String> {
    let (k, v) = s
        .split_once('=')
        .ok_or_else(|| format!("expected NAME=VALUE, got `{s}`"))?;
    let v: f64 = v
        .trim()
        .parse()
        .map_err(|_| format!("`{v}` is not a number in `{s}`"))?;
    Ok((k.trim().to_string(), v))
}

/// Runs `seda sim`.
pub fn run(args: SimArgs) -> Result<()> {
    // Controller names are checked where they are built (build_admission lists the valid
    // ones); the goodput scenario compares client modes instead and checks its own names.
    if !args.params.is_empty() && args.controller.is_none() {
        bail!("--param needs --controller: parameters differ between controllers");
    }
    let out = match args.scenario.as_str() {
        "spike" => spike::run(&args)?,
        "users" => users::run(&args)?,
        "classes" => classes::run(&args)?,
        "goodput" => goodput::run(&args)?,
        "degrade" => degrade::run(&args)?,
        "stages" => stages::run(&args)?,
        other => {
            bail!(
                "unknown scenario `{other}`; valid: spike, users, classes, goodput, degrade, stages"
            )
        }
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&out.json)?);
    } else {
        print!("{}", out.text);
    }
    Ok(())
}

/// A scenario's output in both forms.
pub struct Output {
    json: serde_json::Value,
    text: String,
}
