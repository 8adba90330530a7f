//! `pool-control` (FAIR07 Figures 5-2 to 5-6): pool controllers following a throughput target that
//! steps up and down, on two emulated plants where the number of threads sets the throughput,
//! and the throughput each reaches against the best fixed pool when asked for more than the
//! plant can give.
//!
//! The plants (emulated, see [`crate::levers::Contention`]): 10 ms exponential service, kept
//! saturated by 256 closed users with no think time, so throughput depends on the pool alone.
//! `backend`: a blocking backend serving 32 requests at once (flat past 32 threads, about
//! 3200/s). `contention`: requests slow each other past 16 busy threads (slope 0.15: an interior
//! optimum at 16 threads, about 1600/s, falling to about 780/s at 64).
//!
//! Control period 2 s (FAIR07's). Targets: 40%, 80%, then 50% of the best fixed pool's throughput,
//! 60 s each, from 4 threads. The self-tuning pool may move 16 threads a period (the
//! controller's default of 4 could not follow a step of 13 threads within 3 periods).

use std::time::Duration;

use anyhow::{Result, bail};
use seda_control::catalogue::sizers::{self, HILL_CLIMBING, SEDA, SELF_TUNING};
use seda_control::selftune::Law;
use seda_control::sizer::{FixedSizer, SizerSettings};
use serde::Serialize;
use serde_json::{Value, json};

use super::common::{sim, stage};
use super::{Options, Output, Scenario};
use crate::levers::{Contention, Levers, Period, PoolControl, TargetPlan};
use crate::summary::RunSummary;
use crate::{Dist, Population, SimConfig, SimResult, SourceConfig};

/// `seda sim pool-control`.
pub const SCENARIO: Scenario = Scenario {
    name: "pool-control",
    about: "Pool controllers (P, PI, PD, SEDA's heuristic, hill climbing) following a throughput target, and vs the best fixed pool, on emulated plants (FAIR07 Figures 5-2 to 5-6)",
    run,
};

/// The controllers compared.
pub const CONTROLLERS: [&str; 5] = ["p", "pi", "pd", "seda_heuristic", HILL_CLIMBING];
/// Most threads any controller may use.
pub const MAX_THREADS: u32 = 64;
/// The control period.
pub const PERIOD_S: f64 = 2.0;
/// Length of each target step.
pub const STEP_S: f64 = 60.0;
/// The targets, as fractions of the best fixed pool's throughput.
pub const STEPS: [f64; 3] = [0.4, 0.8, 0.5];
/// Band of "followed": within 5% of the target.
pub const BAND: f64 = 0.05;
const MEAN_S: f64 = 0.01;
const USERS: u32 = 4 * MAX_THREADS;
const INITIAL: u32 = 4;
const MAX_STEP: usize = 16;
const SWEEP: [u32; 12] = [1, 2, 4, 8, 12, 16, 20, 24, 32, 40, 48, 64];
const SWEEP_S: f64 = 40.0;
const BEST_RUN_S: f64 = 120.0;

/// An emulated plant.
#[derive(Debug, Clone, Copy)]
pub struct Plant {
    /// Its name.
    pub name: &'static str,
    /// How service slows with busy threads.
    pub contention: Contention,
}

/// The plants.
pub const PLANTS: [Plant; 2] = [
    Plant {
        name: "backend",
        contention: Contention {
            knee: 32.0,
            slope: 1.0 / 32.0,
        },
    },
    Plant {
        name: "contention",
        contention: Contention {
            knee: 16.0,
            slope: 0.15,
        },
    },
];

/// A controller by name, built from seda-control's sizer registry, steering to `plan` where
/// it takes a target. `p`, `pi` and `pd` are the self-tuning pool's laws; `seda_heuristic` is
/// the registry's `seda` (SEDA's heuristic, a queue threshold of 100).
pub fn sizer(name: &str, plan: TargetPlan) -> Result<PoolControl> {
    let mut settings = SizerSettings::new(1, MAX_THREADS as usize);
    settings.initial_threads = INITIAL as usize;
    settings.period = Duration::from_secs_f64(PERIOD_S);
    let kind = match name {
        "p" | "pi" | "pd" => {
            settings.law = match name {
                "p" => Law::P,
                "pi" => Law::Pi,
                _ => Law::Pd,
            };
            settings.max_step = Some(MAX_STEP);
            SELF_TUNING
        }
        "seda_heuristic" => {
            settings.queue_threshold = 100;
            SEDA
        }
        HILL_CLIMBING => HILL_CLIMBING,
        other => bail!(
            "unknown pool controller `{other}`; valid: {}",
            CONTROLLERS.join(", ")
        ),
    };
    let entry = sizers::find(kind)?;
    Ok(PoolControl {
        sizer: entry.build(&settings),
        plan: entry.targeted.then_some(plan),
        max_servers: MAX_THREADS,
    })
}

/// A pool of `n` servers, never changed (the registry's `fixed`, by its type: a baseline
/// needs no name): the sweep's points.
pub fn fixed(n: u32) -> PoolControl {
    let mut settings = SizerSettings::new(1, n.max(1) as usize);
    settings.initial_threads = n as usize;
    PoolControl {
        sizer: Box::new(FixedSizer::new(&settings)),
        plan: None,
        max_servers: MAX_THREADS,
    }
}

/// Runs `plant` saturated for `duration_s` with `pool` from `initial` threads.
pub fn run_plant(
    plant: &Plant,
    pool: PoolControl,
    initial: u32,
    duration_s: f64,
    seed: u64,
) -> Result<SimResult> {
    let users = Population::Closed {
        users: USERS,
        think: Dist::Deterministic { mean_s: 0.0 },
        reject_wait: None,
        start_s: 0.0,
        end_s: f64::INFINITY,
    };
    let mut cfg = SimConfig::new(
        duration_s,
        stage(initial, Dist::exp(MEAN_S)),
        vec![SourceConfig::new(users)],
    );
    cfg.seed = seed;
    cfg.bucket_s = 1.0;
    cfg.levers = Levers {
        contention: Some(plant.contention),
        pool: Some(pool),
        period_s: PERIOD_S,
        ..Levers::new()
    };
    sim(cfg)
}

/// Mean throughput over the periods ending after `from_s`.
pub fn mean_throughput(periods: &[Period], from_s: f64) -> f64 {
    let tail: Vec<f64> = periods
        .iter()
        .filter(|p| p.end_s > from_s + 1e-9)
        .map(|p| p.throughput_per_s)
        .collect();
    tail.iter().sum::<f64>() / tail.len().max(1) as f64
}

/// The fixed-pool sweep and its best point.
#[derive(Debug, Clone, PartialEq)]
pub struct BestFixed {
    /// (threads, throughput) per pool size.
    pub sweep: Vec<(u32, f64)>,
    /// The best pool's size.
    pub threads: u32,
    /// Its throughput.
    pub per_s: f64,
}

/// The fixed-pool sweep: (threads, throughput) per size, and the best.
pub fn best_fixed(plant: &Plant, seed: u64) -> Result<BestFixed> {
    let mut sweep = Vec::new();
    for n in SWEEP {
        let r = run_plant(plant, fixed(n), n, SWEEP_S, seed)?;
        sweep.push((n, mean_throughput(&r.periods, SWEEP_S / 4.0)));
    }
    let (threads, per_s) = sweep
        .iter()
        .copied()
        .fold((0, 0.0), |b, x| if x.1 > b.1 { x } else { b });
    Ok(BestFixed {
        sweep,
        threads,
        per_s,
    })
}

/// How a controller followed the target steps.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Tracking {
    /// Largest |mean throughput - target| / target over the second half of any step.
    pub steady_error: f64,
    /// Periods until the throughput first came within 5% of the target, the worst of the
    /// steps after the first (the first starts with no model).
    pub settle_periods: f64,
    /// The same for the first step.
    pub first_settle_periods: f64,
    /// Largest (most threads in a step - the step's steady threads) / steady threads.
    pub thread_overshoot: f64,
}

/// Reads [`Tracking`] from a run's periods against `targets` (one per step of `STEP_S`).
pub fn tracking(periods: &[Period], targets: &[f64]) -> Tracking {
    let mut t = Tracking::default();
    for (j, &target) in targets.iter().enumerate() {
        let (from, to) = (j as f64 * STEP_S, (j + 1) as f64 * STEP_S);
        let step: Vec<&Period> = periods
            .iter()
            .filter(|p| p.end_s > from + 1e-9 && p.end_s <= to + 1e-9)
            .collect();
        if step.is_empty() {
            continue;
        }
        let settle = step
            .iter()
            .position(|p| (p.throughput_per_s - target).abs() <= BAND * target)
            .map_or(step.len() as f64, |k| (k + 1) as f64);
        if j == 0 {
            t.first_settle_periods = settle;
        } else {
            t.settle_periods = t.settle_periods.max(settle);
        }
        let half = &step[step.len() / 2..];
        let n = half.len().max(1) as f64;
        let y = half.iter().map(|p| p.throughput_per_s).sum::<f64>() / n;
        t.steady_error = t.steady_error.max((y - target).abs() / target);
        let steady_threads = half.iter().map(|p| f64::from(p.servers)).sum::<f64>() / n;
        let most = step.iter().map(|p| p.servers).max().unwrap_or(0);
        if steady_threads > 0.0 {
            let over = (f64::from(most) - steady_threads) / steady_threads;
            t.thread_overshoot = t.thread_overshoot.max(over.max(0.0));
        }
    }
    t
}

/// One controller on one plant: the stepped-target run (its tracking) and the run asked for
/// 2 x the best fixed pool's throughput (the fraction of it reached); its table row goes to
/// `text`, its summary and series are returned.
fn run_controller(
    plant: &Plant,
    name: &str,
    steps: &[(f64, f64)],
    targets: &[f64],
    best: f64,
    seed: u64,
    text: &mut String,
) -> Result<Value> {
    let r = run_plant(
        plant,
        sizer(name, TargetPlan::Steps(steps.to_vec()))?,
        INITIAL,
        STEP_S * STEPS.len() as f64,
        seed,
    )?;
    let track = tracking(&r.periods, targets);
    let max_run = run_plant(
        plant,
        sizer(name, TargetPlan::Steps(vec![(0.0, 2.0 * best)]))?,
        INITIAL,
        BEST_RUN_S,
        seed,
    )?;
    let reached = mean_throughput(&max_run.periods, BEST_RUN_S / 2.0);
    let threads_max = max_run.periods.last().map_or(0, |p| p.servers);
    let fraction = reached / best;
    let arx = r.arx_error;
    *text += &format!(
        "{:>15} {:>12.3} {:>8.0} {:>11.0} {:>11.2} {:>13.3} {:>12} {:>9}\n",
        name,
        track.steady_error,
        track.settle_periods,
        track.first_settle_periods,
        track.thread_overshoot,
        fraction,
        threads_max,
        arx.map_or("-".into(), |e| format!("{e:.3}"))
    );
    let mut s = RunSummary::new(0.0);
    s.controller = Some(name.to_string());
    s.throughput_per_s = Some(reached);
    s.extend(&track);
    s.insert("plant", plant.name);
    s.insert("fraction_of_best_fixed", fraction);
    s.insert("threads_at_end_of_max_run", threads_max);
    if let Some(e) = arx {
        s.insert("arx_error", e);
    }
    let series: Vec<_> = r
        .periods
        .iter()
        .map(|p| json!([p.end_s, p.servers, p.throughput_per_s, p.target_per_s]))
        .collect();
    let max_series: Vec<_> = max_run
        .periods
        .iter()
        .map(|p| json!([p.end_s, p.servers, p.throughput_per_s]))
        .collect();
    Ok(json!({
        "summary": s.to_json(),
        "periods": series,
        "max_run_periods": max_series,
    }))
}

fn run(args: &Options) -> Result<Output> {
    let names: Vec<&str> = match &args.controller {
        None => CONTROLLERS.to_vec(),
        Some(c) => {
            if !CONTROLLERS.contains(&c.as_str()) {
                bail!("pool-control compares: {}", CONTROLLERS.join(", "));
            }
            vec![c.as_str()]
        }
    };
    let mut text = format!(
        "pool-control: 10 ms exp service kept saturated, control period {PERIOD_S} s, targets \
         {:?} x best fixed for {STEP_S} s each from {INITIAL} threads; seed {}\n",
        STEPS, args.seed
    );
    let mut plants_json = Vec::new();
    for plant in &PLANTS {
        let BestFixed {
            sweep,
            threads: best_n,
            per_s: best,
        } = best_fixed(plant, args.seed)?;
        text += &format!(
            "\nplant {} (knee {}, slope {:.3}): best fixed pool {best_n} threads, {best:.0}/s; sweep {}\n",
            plant.name,
            plant.contention.knee,
            plant.contention.slope,
            sweep
                .iter()
                .map(|(n, y)| format!("{n}:{y:.0}"))
                .collect::<Vec<_>>()
                .join(" ")
        );
        text += &format!(
            "{:>15} {:>12} {:>8} {:>11} {:>11} {:>13} {:>12} {:>9}\n",
            "controller",
            "steady_error",
            "settle",
            "first_settle",
            "overshoot",
            "x_best_fixed",
            "threads_max",
            "arx_error"
        );
        let targets: Vec<f64> = STEPS.iter().map(|f| f * best).collect();
        let steps: Vec<(f64, f64)> = targets
            .iter()
            .enumerate()
            .map(|(j, &t)| (j as f64 * STEP_S, t))
            .collect();
        let mut runs = Vec::new();
        for &name in &names {
            runs.push(run_controller(
                plant, name, &steps, &targets, best, args.seed, &mut text,
            )?);
        }
        plants_json.push(json!({
            "plant": plant.name,
            "knee": plant.contention.knee,
            "slope": plant.contention.slope,
            "best_fixed_threads": best_n,
            "best_fixed_per_s": best,
            "sweep": sweep,
            "runs": runs,
        }));
    }
    text += "\nsettle: periods until the throughput first comes within 5% of a new target \
             (worst step after the first); overshoot: most threads in a step over its steady \
             threads; x_best_fixed: throughput over the last 60 s of a 120 s run asked for 2 x \
             the best fixed pool's, over that pool's; arx_error: mean one-step prediction error \
             of the model fitted online\n";
    let json = json!({
        "scenario": "pool-control",
        "seed": args.seed,
        "period_s": PERIOD_S,
        "step_s": STEP_S,
        "steps_x_best": STEPS,
        "plants": plants_json,
    });
    Ok(Output { json, text })
}
