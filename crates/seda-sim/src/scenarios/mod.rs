//! The seeds' overload experiments in the simulator, with every controller compared on the
//! same seed: what `seda sim <scenario>` runs. Each is a [`Scenario`], as the lab's experiments
//! on the real system are (a name, a line about it, a run); `seda sim` only parses its arguments into [`Options`] and prints
//! the [`Output`].

mod classes;
mod common;
mod degrade;
pub mod dynamic_groups;
pub mod follow_target;
mod goodput;
pub mod pool_control;
pub mod sert;
pub mod sert_motivation;
mod spike;
mod stages;
pub mod thesis_open;
mod users;

use anyhow::{Result, bail};
use serde_json::Value;

pub use common::{controller, measure_capacity, selected, sim};

/// How to run a scenario (`seda sim`'s options).
#[derive(Debug, Clone)]
pub struct Options {
    /// Run only this controller (or mode); `None`: every one of the scenario.
    pub controller: Option<String>,
    /// Seed of the run.
    pub seed: u64,
    /// spike, degrade: users during the spike.
    pub users: Option<u32>,
    /// spike: servers of the stage.
    pub servers: Option<u32>,
    /// spike: service-time distribution (exp, lognormal, pareto, bimodal).
    pub service: String,
    /// Extra parameters for the controller of `controller`.
    pub params: Vec<(String, f64)>,
    /// Add a per-interval table of each run to the text.
    pub series: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            controller: None,
            seed: 1,
            users: None,
            servers: None,
            service: "exp".into(),
            params: Vec::new(),
            series: false,
        }
    }
}

/// A scenario's output in both forms.
#[derive(Debug, Clone)]
pub struct Output {
    /// Everything, for `--json`: the setup and each run's summary (and series).
    pub json: Value,
    /// The table for a reader.
    pub text: String,
}

/// One experiment of the seeds in the simulator.
#[derive(Debug, Clone, Copy)]
pub struct Scenario {
    /// The name `seda sim` takes.
    pub name: &'static str,
    /// One line: what it shows and which figures it reproduces.
    pub about: &'static str,
    /// Runs it.
    pub run: fn(&Options) -> Result<Output>,
}

/// Every scenario.
pub const ALL: [Scenario; 13] = [
    spike::SCENARIO,
    users::SCENARIO,
    classes::SCENARIO,
    goodput::SCENARIO,
    degrade::SCENARIO,
    stages::SCENARIO,
    pool_control::SCENARIO,
    thesis_open::SCENARIO,
    sert::SHIFT,
    sert::THRESHOLD,
    sert_motivation::SCENARIO,
    dynamic_groups::SCENARIO,
    follow_target::SCENARIO,
];

/// Runs the scenario called `name`.
pub fn run(name: &str, opts: &Options) -> Result<Output> {
    // Controller names are checked where they are built (the catalogue lists the valid
    // ones); the goodput scenario compares client modes instead and checks its own names.
    if !opts.params.is_empty() && opts.controller.is_none() {
        bail!("--param needs --controller: parameters differ between controllers");
    }
    match ALL.iter().find(|s| s.name == name) {
        Some(s) => (s.run)(opts),
        None => bail!(
            "unknown scenario `{name}`; valid: {}",
            ALL.iter().map(|s| s.name).collect::<Vec<_>>().join(", ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_bad_requests_say_what_is_valid() {
        let mut names: Vec<&str> = ALL.iter().map(|s| s.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), ALL.len());
        let e = run("nope", &Options::default()).unwrap_err().to_string();
        assert!(e.contains("spike") && e.contains("stages"), "{e}");
        let opts = Options {
            params: vec![("setpoint".into(), 0.3)],
            ..Options::default()
        };
        let e = run("spike", &opts).unwrap_err().to_string();
        assert!(e.contains("--param needs --controller"), "{e}");
    }
}
