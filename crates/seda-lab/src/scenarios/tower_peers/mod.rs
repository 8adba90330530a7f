//! `tower-peers` (issue 54): an axum service of designed capacity (the `tower-peers` binary: an
//! emulated processor of 16 slots, each request holding one for a service time of mean 40 ms,
//! so 400 requests/s whatever the machine; more slots than our controller's `min_queue`, so
//! that a bound trimmed under what the service serves at once shows) served bare, behind
//! tower's `ConcurrencyLimit` + `LoadShed` swept over N, behind the registry's adaptive
//! crates (`little-loadshedder`, `tower-acc`'s and `tower-resilience-adaptive`'s AIMD, Vegas
//! and Gradient2), and behind ours (`SedaLayer::response_time`). Open Poisson arrivals at multiples of that capacity, a shift
//! to a heavier-tailed service time at the same mean, and an incident (every hold twice as
//! long, capacity halved, for a while, then back): goodput within the target per variant per
//! load, and the goals checked against it ([`report`]). Every variant meets the same
//! arrivals (the generator's seed) and the same service times in the same order (the
//! processor's seed: common random numbers), so a difference between two variants is theirs.
//!
//! Each peer is deployed as its users should: one service built once and shared by every
//! connection (the axum pitfall is in the binary's `variant.rs`). `congestion-limiter` is not
//! among them: it offers no tower layer (a limiter to call by hand), so fronting a tower
//! service with it means writing the middleware it lacks.

mod report;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use anyhow::Result;
use seda_load::{Arrivals, ClientConfig, LoadConfig, Model, Open, Report, Target};
use serde_json::{Map, Value, json};

use crate::child::{Child, free_port};
use crate::outcome::Outcome;
use crate::{Lab, Scenario, admin};

/// The scenario.
pub struct TowerPeers;

/// The processor's slots and mean service time: capacity = slots / mean.
const SLOTS: usize = 16;
const MEAN_S: f64 = 0.040;
/// The seed of the processor's service times and of the generator's arrivals: the same for
/// every variant (common random numbers).
const SEED: u64 = 1;
/// The reply-time target: about six mean service times.
const TARGET_S: f64 = 0.250;
/// Load during the shift and the incident, as a multiple of the capacity.
const SHIFTED_X: f64 = 1.5;
/// The reporting interval: fine enough to time a recovery.
const INTERVAL_S: f64 = 0.25;

fn capacity() -> f64 {
    SLOTS as f64 / MEAN_S
}

/// One load: open arrivals at `x` x capacity for `run_s`, operator calls at set times, and the
/// window its goodput is measured over.
#[derive(Debug, Clone)]
pub(crate) struct Load {
    pub name: String,
    pub x: f64,
    pub run_s: f64,
    /// `(at_s, admin path)`: posted to the service at `at_s` from the load's start.
    pub calls: Vec<(f64, &'static str)>,
    pub measure_from_s: f64,
    /// Where an incident ends: the recovery is timed from here.
    pub incident_end_s: Option<f64>,
}

fn loads(lab: &Lab) -> Vec<Load> {
    let settle = lab.pick(1.0, 3.0);
    let open = |x: f64| Load {
        name: format!("open_{x}x"),
        x,
        // The quick form measures 4 s: at 0.8 x capacity about 1,280 requests, so that the
        // refusal goal (0.5%) is not decided by one burst of a few.
        run_s: lab.pick(5.0, 10.0),
        calls: Vec::new(),
        measure_from_s: settle,
        incident_end_s: None,
    };
    let (shift_at, shift_run) = (lab.pick(2.0, 8.0), lab.pick(6.0, 20.0));
    let shift = Load {
        name: "shift".into(),
        x: SHIFTED_X,
        run_s: shift_at + shift_run,
        calls: vec![(shift_at, "/admin/dist/heavy")],
        measure_from_s: shift_at,
        incident_end_s: None,
    };
    let (before, during, after) = (lab.pick(2.0, 8.0), lab.pick(3.0, 30.0), lab.pick(3.0, 12.0));
    let incident = Load {
        name: "incident".into(),
        x: SHIFTED_X,
        run_s: before + during + after,
        calls: vec![
            (before, "/admin/slowdown/2"),
            (before + during, "/admin/slowdown/1"),
        ],
        measure_from_s: settle,
        incident_end_s: Some(before + during),
    };
    let mut all: Vec<Load> = lab
        .pick(&[0.8, 3.0][..], &[0.5, 0.8, 1.5, 3.0, 10.0][..])
        .iter()
        .map(|x| open(*x))
        .collect();
    if !lab.quick {
        all.push(shift);
    }
    all.push(incident);
    all
}

/// One variant: its name in the results and the binary's `--mode`.
#[derive(Debug, Clone)]
pub(crate) struct Variant {
    pub name: String,
    pub mode: String,
    /// A latency-driven crate that sets its own limit (the "adaptive peers" of the goals).
    pub adaptive: bool,
    pub ours: bool,
}

/// tower's N as shares of capacity x target (the requests in flight that, by Little's law,
/// keep the mean reply at the target): the quick form takes the half, where the p90 of an
/// exponential queue is near the target, what an operator who knew both would pick.
fn limits(lab: &Lab) -> Vec<usize> {
    let ct = capacity() * TARGET_S;
    lab.pick(&[0.5][..], &[0.25, 0.5, 1.0, 2.0][..])
        .iter()
        .map(|f| ((f * ct).round() as usize).max(1))
        .collect()
}

fn variants(lab: &Lab) -> Vec<Variant> {
    let v = |name: &str, adaptive: bool| Variant {
        name: name.replace(['-', ':'], "_"),
        mode: name.to_string(),
        adaptive,
        ours: false,
    };
    let mut all = Vec::new();
    if !lab.quick {
        all.push(v("bare", false));
    }
    all.extend(limits(lab).iter().map(|n| v(&format!("limit:{n}"), false)));
    let adaptive: &[&str] = lab.pick(
        // Each crate's own first example: tower-acc's README uses Vegas, tower-resilience's
        // crate docs AIMD.
        &["little", "acc-vegas", "res-aimd"][..],
        &[
            "little",
            "acc-aimd",
            "acc-vegas",
            "acc-gradient2",
            "res-aimd",
            "res-vegas",
            "res-gradient2",
        ][..],
    );
    all.extend(adaptive.iter().map(|a| v(a, true)));
    all.push(Variant {
        ours: true,
        ..v("seda", false)
    });
    all
}

/// What one variant did under one load.
#[derive(Debug, Clone)]
pub(crate) struct Cell {
    pub variant: Variant,
    pub load: Load,
    /// Replies within the target per second over the measured window, over the capacity.
    pub goodput_x: Option<f64>,
    /// Refused (503) share of the requests that ended in the window.
    pub refused: Option<f64>,
    /// p90 of the replies completed in the window, s.
    pub p90_s: Option<f64>,
    /// After an incident: seconds from its end to the end of the first full second at
    /// >= 0.9 x capacity within the target (`None`: never within the run).
    pub recovery_s: Option<f64>,
    /// Goodput over capacity in each interval: `(t_s, x)`.
    pub series: Vec<(f64, f64)>,
}

fn start(lab: &Lab, v: &Variant) -> Result<(SocketAddr, Child)> {
    let addr: SocketAddr = ([127, 0, 0, 1], free_port()?).into();
    let (addr_s, slots, mean_ms, target_ms, seed) = (
        addr.to_string(),
        SLOTS.to_string(),
        (MEAN_S * 1000.0).to_string(),
        ((TARGET_S * 1000.0).round() as u64).to_string(),
        SEED.to_string(),
    );
    let cmd = lab.beside_seda(
        "tower-peers",
        &[
            "--addr",
            &addr_s,
            "--mode",
            &v.mode,
            "--slots",
            &slots,
            "--mean-ms",
            &mean_ms,
            "--target-ms",
            &target_ms,
            "--seed",
            &seed,
        ],
    )?;
    let mut child = lab.spawn(&v.name, &cmd)?;
    child.wait_port(addr, Duration::from_secs(30))?;
    Ok((addr, child))
}

fn config(addr: SocketAddr, load: &Load) -> Result<LoadConfig> {
    let target = Target::parse(&format!("http://{addr}/"))?;
    let mut cfg = LoadConfig::new(
        target,
        Model::Open(Open {
            rate_per_s: load.x * capacity(),
            arrivals: Arrivals::Poisson,
            max_connections: 2000,
            max_backlog: 20_000,
        }),
    )?;
    cfg.seed = SEED;
    cfg.duration = Duration::from_secs_f64(load.run_s);
    cfg.interval = Duration::from_secs_f64(INTERVAL_S);
    cfg.goodput_target = Duration::from_secs_f64(TARGET_S);
    cfg.keep_interval_histograms = true;
    cfg.client = ClientConfig {
        // Long enough that a late reply is measured as late, not cut off.
        deadline: Duration::from_secs_f64(20.0 * TARGET_S),
        ..ClientConfig::default()
    };
    Ok(cfg)
}

/// Runs `load` against a fresh server of variant `v`, posting its operator calls on time.
fn run_one(lab: &Lab, v: &Variant, load: &Load) -> Result<Cell> {
    let (addr, child) = start(lab, v)?;
    let cfg = config(addr, load)?;
    let began = Instant::now();
    let report = std::thread::scope(|s| {
        let caller = s.spawn(|| -> Result<()> {
            for (at_s, path) in &load.calls {
                let wait = Duration::from_secs_f64(*at_s).saturating_sub(began.elapsed());
                std::thread::sleep(wait);
                admin::post(addr, path)?;
            }
            Ok(())
        });
        let report = lab.load(cfg);
        let called = caller
            .join()
            .map_err(|_| anyhow::anyhow!("the operator's thread panicked"))?;
        called.and(report)
    });
    child.stop();
    let report = report?;
    Ok(measure(v, load, &report))
}

fn measure(v: &Variant, load: &Load, report: &Report) -> Cell {
    let (from, to) = (load.measure_from_s, load.run_s);
    let mut good = 0;
    for i in &report.series {
        if i.t_s >= from - 1e-6 && i.t_s < to - 1e-6 {
            good += i.counts.good;
        }
    }
    let goodput_x = (to > from).then(|| good as f64 / (to - from) / capacity());
    let series = crate::plot::points_over(report, |i| {
        Some(i.counts.good as f64 / i.duration_s.max(1e-9) / capacity())
    });
    Cell {
        variant: v.clone(),
        load: load.clone(),
        goodput_x,
        refused: crate::steady::rejected_between(report, from, to),
        p90_s: report.latency_between(from, to).map(|l| l.p90_ms / 1000.0),
        recovery_s: load.incident_end_s.and_then(|end| recovery(&series, end)),
        series,
    }
}

/// Seconds from `end_s` to the end of the first whole second, starting at or after it (in
/// interval steps), whose goodput is at least 0.9 x capacity.
fn recovery(series: &[(f64, f64)], end_s: f64) -> Option<f64> {
    let per_s = (1.0 / INTERVAL_S).round() as usize;
    let after: Vec<&(f64, f64)> = series.iter().filter(|(t, _)| *t >= end_s - 1e-6).collect();
    after.windows(per_s).find_map(|w| {
        let mean = w.iter().map(|(_, x)| x).sum::<f64>() / per_s as f64;
        (mean >= 0.9).then(|| w[per_s - 1].0 + INTERVAL_S - end_s)
    })
}

impl Scenario for TowerPeers {
    fn name(&self) -> &'static str {
        "tower-peers"
    }

    fn about(&self) -> &'static str {
        "an axum service of designed capacity behind tower's ConcurrencyLimit + LoadShed, \
         little-loadshedder, tower-acc, tower-resilience-adaptive and seda's layer: open \
         loads 0.5-10 x capacity, a heavier tail, an incident"
    }

    fn headline(&self) -> &'static [&'static str] {
        &[
            "seda/incident/goodput_fraction_of_capacity",
            "seda/open_3x/goodput_fraction_of_capacity",
            "seda/open_0.8x/rejected_fraction",
        ]
    }

    fn capacity_by_design(&self) -> bool {
        true
    }

    fn run(&self, lab: &Lab) -> Result<Outcome> {
        let loads = loads(lab);
        let variants = variants(lab);
        let mut cells = Vec::new();
        for v in &variants {
            for load in &loads {
                let cell = run_one(lab, v, load)?;
                lab.log(format!(
                    "{} at {}: goodput {} x capacity, refused {}, p90 {} s, recovery {} s",
                    v.name,
                    load.name,
                    crate::figure::fmt(cell.goodput_x),
                    crate::figure::pct(cell.refused),
                    crate::figure::fmt(cell.p90_s),
                    crate::figure::fmt(cell.recovery_s)
                ));
                cells.push(cell);
            }
        }
        let mut summary = Map::new();
        for v in &variants {
            let per_load: Map<String, Value> = cells
                .iter()
                .filter(|c| c.variant.name == v.name)
                .map(|c| {
                    let row = json!({
                        "goodput_fraction_of_capacity": c.goodput_x,
                        "rejected_fraction": c.refused,
                        "p90_s": c.p90_s,
                        "recovery_s": c.recovery_s,
                    });
                    (c.load.name.clone(), row)
                })
                .collect();
            summary.insert(v.name.clone(), Value::Object(per_load));
        }
        Ok(Outcome {
            paper: "issue 54: ours against the load-shedding tower crates a Rust user would pick"
                .into(),
            config: json!({
                "capacity_per_s": capacity(),
                "capacity_is": "by design: slots / mean service time of the emulated processor",
                "seed": SEED,
                "service_times": "common random numbers: in every variant the k-th hold is the k-th draw of the seed's sequence, and the arrivals are the seed's",
                "slots": SLOTS,
                "mean_service_s": MEAN_S,
                "target_s": TARGET_S,
                "interval_s": INTERVAL_S,
                "loads": loads.iter().map(|l| json!({
                    "name": l.name, "x_capacity": l.x, "run_s": l.run_s,
                    "calls": l.calls, "measured_from_s": l.measure_from_s,
                })).collect::<Vec<_>>(),
                "variants": variants.iter().map(|v| json!({"name": v.name, "mode": v.mode, "adaptive": v.adaptive})).collect::<Vec<_>>(),
                "peer_configuration": report::PEER_CONFIGURATION,
            }),
            summary,
            data: Value::Object(
                cells
                    .iter()
                    .map(|c| {
                        (
                            format!("{}/{}", c.variant.name, c.load.name),
                            json!(c.series),
                        )
                    })
                    .collect(),
            ),
            checks: report::checks(&cells, &loads),
            report: report::markdown(&cells, &loads, &variants),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recovery_is_the_end_of_the_first_good_second_after_the_incident() {
        // 0.25 s intervals: low until 10.5 s, then at capacity.
        let series: Vec<(f64, f64)> = (0..60)
            .map(|i| {
                let t = f64::from(i) * INTERVAL_S;
                (t, if t < 10.5 { 0.5 } else { 1.0 })
            })
            .collect();
        let r = recovery(&series, 10.0).unwrap();
        assert!((r - 1.5).abs() < 1e-9, "{r}");
        assert_eq!(recovery(&series[..44], 10.0), None);
    }
}
