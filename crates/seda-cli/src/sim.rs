//! `seda sim <scenario>`: parses the arguments of the simulator's experiments
//! (`seda_sim::scenarios`) and prints their table or JSON.

use anyhow::Result;
use clap::Args;
use seda_sim::scenarios::{self, Options};

/// Arguments of `seda sim`.
#[derive(Args, Debug, Clone)]
pub struct SimArgs {
    /// Scenario: spike, users, classes, goodput, degrade, stages, pool-control, thesis-open,
    /// sert-shift, sert-threshold, sert-motivation, dynamic-groups or follow-target.
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
    let opts = Options {
        controller: args.controller,
        seed: args.seed,
        users: args.users,
        servers: args.servers,
        service: args.service,
        params: args.params,
        series: args.series,
    };
    let out = scenarios::run(&args.scenario, &opts)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&out.json)?);
    } else {
        print!("{}", out.text);
    }
    Ok(())
}
