//! `sert-threshold` (SERT06, slides on the threshold's choice): our adaptive threshold and
//! SERT's against fixed thresholds (the slides': ranking 0.5 s, 3 s, 15 s; index matching 1.5 s, 3 s,
//! 8 s) and a percentile timeout, at loads from 80% to 200% of capacity, in the real runtime
//! on the synthetic hold service; `seda sim sert-threshold` is the same experiment in virtual
//! time.
//!
//! The plant is the simulator's: 16 workers sharing 2 emulated cores (`/hold?...&cores=2`:
//! while more than two requests run, each progresses at `2 / running` of real time, so running
//! times grow with the busy workers as on SERT06's machines), a queue bound of 200, open
//! Poisson arrivals at each load x capacity (capacity `2 / mean size`). Every time (sizes,
//! thresholds, the adaptive range and its 1 s lateness limit, the goodput limit) is a quarter
//! of the slides' ([`TIME_SCALE`]), so that at 200% the queue fills in about 2 s and a point
//! settles within a few seconds: the ranking service's mean is 23 ms and its capacity 86/s.
//! So `within_1s_fraction` here is the share answered within a quarter second, the slides' 1 s
//! scaled.
//!
//! The periods the terminators are fed at are scaled too (250 ms, the runtime's
//! `stats_period_ms`), so a window of periods means the same share of a run as in the
//! simulator.
//!
//! The variants: ours (`congestion`: a feedback loop on the rejected and late replies, not its
//! own cuts; `seda_control::terminate::CongestionThreshold` says why SERT's map loses), SERT's
//! formula (`sert`, the baseline), a percentile timeout (full form only) and the slides' fixed
//! thresholds. The quick form runs both services at 80% and 200% with ours, SERT's and the
//! smallest and largest fixed thresholds (16 points of 1 s warm-up and 3.5 s measured); the
//! full form five loads and every variant (10 s and 30 s).
//!
//! Checked: at 200% both adaptive thresholds' mean response time is below the largest fixed
//! threshold's (the slides' point); ours within 5% of the best fixed threshold on throughput
//! loss and on mean response time at every load (the goal), enforced, except for
//! ranking below 150% (the best fixed threshold on each axis sits at an end of a trade-off:
//! at 80% no fixed threshold from 0.3 s to 15 s is within 0.01 of 15 s's loss and within 5%
//! of 0.5 s's mean, docs/lab-notebook.md, 2026-12-06), a known shortfall (`checks.rs` gives
//! the figures); SERT's formula against the same goal, observed.
//!
//! Before ours (SERT's formula only, a quick run on a loaded machine): at 200% the mean
//! response time was 0.58 s adaptive, 0.23 s with 0.5 s, 1.56 s with 15 s (scaled times).

mod checks;
mod workload;

use seda_control::catalogue::terminators;
use std::time::Duration;

use anyhow::Result;
use seda::TerminateConfig;
use seda_sim::summary::RunSummary;
use serde_json::{Map, Value, json};

use crate::hold::{self, HoldServer, HoldSetup, increase, window_summary};
use crate::outcome::Outcome;
use crate::poll::StatsPoller;
use crate::{Lab, Scenario};
use checks::{checks, find};
use workload::{Size, Sizes};

/// The scenario.
pub struct SertThreshold;

/// Every time is this share of the slides'.
pub const TIME_SCALE: f64 = 0.25;
const WORKERS: usize = 16;
const CORES: f64 = 2.0;
const QUEUE: usize = 200;
/// SERT's threshold's range (the slides' smallest and largest ranking thresholds, as in
/// `seda sim sert-threshold`) and the percentile timeout's bounds, unscaled.
const ADAPTIVE_RANGE_S: (f64, f64) = (0.5, 15.0);
/// Our threshold's range, unscaled (`seda_sim::scenarios::sert::OURS_RANGE_S`): its own cuts
/// do not push it down, so it may go below the slides' smallest threshold.
const OURS_RANGE_S: (f64, f64) = (0.2, 15.0);
/// The runtime's stats period (the period the terminators are fed at), unscaled.
const PERIOD_S: f64 = 1.0;
const PERCENTILE_RANGE_S: (f64, f64) = (0.1, 15.0);
/// The slides' service-level limit, unscaled: later replies are lost for SERT's loss.
const LATE_S: f64 = 1.0;
/// How much worse than the best fixed threshold the adaptive one may be, and still count as
/// matching it (the goal).
const WITHIN: f64 = 0.05;

/// A service of the slides: its name, size distribution and fixed thresholds (unscaled).
struct Service {
    name: &'static str,
    size: Size,
    fixed_s: [f64; 3],
}

fn services() -> [Service; 2] {
    [
        Service {
            name: "ranking",
            size: Size::Exponential { mean_s: 0.093 },
            fixed_s: [0.5, 3.0, 15.0],
        },
        Service {
            name: "index_matching",
            size: Size::Lognormal {
                mean_s: 0.0236,
                sigma: 1.837,
                max_s: 2.732,
            },
            fixed_s: [1.5, 3.0, 8.0],
        },
    ]
}

/// A variant: its name and its terminator.
fn variants(s: &Service, window: usize, quick: bool) -> Vec<(String, TerminateConfig)> {
    let k = TIME_SCALE;
    let mut v = vec![
        (
            "ours".to_string(),
            TerminateConfig::new(
                terminators::CONGESTION,
                [
                    ("lower_s", OURS_RANGE_S.0 * k),
                    ("upper_s", OURS_RANGE_S.1 * k),
                    ("late_s", LATE_S * k),
                ],
            ),
        ),
        (
            "sert".to_string(),
            TerminateConfig::new(
                terminators::SERT,
                [
                    ("lower_s", ADAPTIVE_RANGE_S.0 * k),
                    ("upper_s", ADAPTIVE_RANGE_S.1 * k),
                    ("late_s", LATE_S * k),
                    ("window", window as f64),
                ],
            ),
        ),
    ];
    if !quick {
        v.push((
            "percentile".to_string(),
            TerminateConfig::new(
                terminators::PERCENTILE,
                [
                    ("min_s", PERCENTILE_RANGE_S.0 * k),
                    ("max_s", PERCENTILE_RANGE_S.1 * k),
                ],
            ),
        ));
    }
    let fixed: Vec<f64> = if quick {
        vec![s.fixed_s[0], s.fixed_s[2]]
    } else {
        s.fixed_s.to_vec()
    };
    for f in fixed {
        v.push((
            format!("fixed_{f}s"),
            TerminateConfig::new(terminators::FIXED, [("threshold_s", f * k)]),
        ));
    }
    v
}

/// One measured point.
struct Point {
    service: &'static str,
    variant: String,
    load: f64,
    summary: RunSummary,
}

impl Point {
    fn get(&self, key: &str) -> f64 {
        self.summary.extra_f64(key).unwrap_or(f64::NAN)
    }
}

impl Scenario for SertThreshold {
    fn capacity_by_design(&self) -> bool {
        true
    }

    fn name(&self) -> &'static str {
        "sert-threshold"
    }

    fn about(&self) -> &'static str {
        "our adaptive threshold and SERT's vs fixed thresholds and a percentile timeout, loads \
         80%-200%, ranking and index matching on the hold service with 2 emulated cores (SERT06)"
    }

    fn headline(&self) -> &'static [&'static str] {
        &[
            "ranking/ours/200%/mean_response_s",
            "ranking/sert/200%/mean_response_s",
            "ranking/fixed_0.5s/200%/mean_response_s",
            "index_matching/ours/200%/mean_response_s",
            "index_matching/fixed_1.5s/200%/mean_response_s",
        ]
    }

    fn run(&self, lab: &Lab) -> Result<Outcome> {
        let loads: Vec<f64> = lab.pick(vec![0.8, 2.0], vec![0.8, 1.0, 1.25, 1.5, 2.0]);
        let (warmup_s, measure_s) = lab.pick((1.0, 3.5), (10.0, 30.0));
        let window = lab.pick(3, 10);
        let all = services();
        let chosen: Vec<&Service> = all.iter().collect();
        let mut points = Vec::new();
        for s in &chosen {
            let size = s.size.scaled(TIME_SCALE);
            let capacity = CORES / size.mean_s();
            for (variant, terminate) in variants(s, window, lab.quick) {
                for &load in &loads {
                    let name = format!("{}_{variant}_{:.0}", s.name, load * 100.0);
                    let mut summary = run_point(
                        lab,
                        &name,
                        &terminate,
                        Sizes { size, cores: CORES },
                        load * capacity,
                        warmup_s,
                        measure_s,
                    )?;
                    summary.capacity_per_s = Some(capacity);
                    summary.load_x_capacity = Some(load);
                    // Goodput and `within_1s_fraction` count replies within the scaled 1 s.
                    summary.target_s = LATE_S * TIME_SCALE;
                    points.push(Point {
                        service: s.name,
                        variant: variant.clone(),
                        load,
                        summary,
                    });
                }
            }
        }
        let checks = checks(&points, &chosen, &loads, lab.quick);
        let mut summary = Map::new();
        for p in &points {
            summary.insert(
                format!("{}/{}/{:.0}%", p.service, p.variant, p.load * 100.0),
                p.summary.to_json(),
            );
        }
        Ok(Outcome {
            paper:
                "SERT06 (slides on the threshold: ranking and index matching, fixed vs adaptive)"
                    .into(),
            config: json!({
                "service": "synthetic hold service (seda serve bottleneck, GET /hold?us=N&cores=2): 16 workers sharing 2 emulated cores",
                "workers": WORKERS, "cores": CORES, "queue_threshold": QUEUE,
                "time_scale": TIME_SCALE,
                "loads_x_capacity": loads,
                "warmup_s": warmup_s, "measured_s": measure_s,
                "services": chosen.iter().map(|s| json!({
                    "name": s.name,
                    "size": format!("{:?}", s.size.scaled(TIME_SCALE)),
                    "capacity_per_s": CORES / s.size.scaled(TIME_SCALE).mean_s(),
                    "variants": variants(s, window, lab.quick).into_iter().map(|(n, t)| json!({"name": n, "terminate": t})).collect::<Vec<_>>(),
                })).collect::<Vec<_>>(),
            }),
            summary,
            data: Value::Null,
            report: markdown(&points, &chosen, &loads),
            checks,
        })
    }
}

fn run_point(
    lab: &Lab,
    name: &str,
    terminate: &TerminateConfig,
    sizes: Sizes,
    rate_per_s: f64,
    warmup_s: f64,
    measure_s: f64,
) -> Result<RunSummary> {
    let setup = HoldSetup {
        workers: WORKERS,
        queue: QUEUE,
        terminate: Some(terminate.clone()),
        stats_period_ms: Some((PERIOD_S * TIME_SCALE * 1000.0).round() as u64),
    };
    let server = HoldServer::start(lab, name, &setup)?;
    let run_s = warmup_s + measure_s;
    let mut cfg = hold::open_load(&server, rate_per_s, run_s, sizes)?;
    cfg.goodput_target = Duration::from_secs_f64(LATE_S * TIME_SCALE);
    let poller = StatsPoller::start(server.admin, Duration::from_millis(500));
    let report = lab.load(cfg);
    let samples = poller.stop();
    server.stop();
    let report = report?;
    let terminated = increase(
        &hold::stage_series(&samples, hold::terminated),
        warmup_s,
        run_s,
    );
    let s = window_summary(name, &report, warmup_s, run_s, terminated);
    lab.log(format!(
        "{name}: loss {:.3}, mean response {:.3} s, {:.1}% terminated",
        s.extra_f64("throughput_loss").unwrap_or(f64::NAN),
        s.extra_f64("mean_response_s").unwrap_or(f64::NAN),
        s.extra_f64("terminated_fraction").unwrap_or(f64::NAN) * 100.0
    ));
    Ok(s)
}

fn markdown(points: &[Point], services: &[&Service], loads: &[f64]) -> String {
    let mut md = format!(
        "Times are {TIME_SCALE} x the slides' (sizes, thresholds, the adaptive range, the 1 s \
         limit); variant names give the slides' thresholds. Cells: throughput loss / mean \
         response time (s, scaled) / terminated share, over the measured part of each point.\n"
    );
    for s in services {
        let size = s.size.scaled(TIME_SCALE);
        md += &format!(
            "\n**{}** ({:?}, capacity {:.1}/s on 2 emulated cores)\n\n| variant |",
            s.name,
            size,
            CORES / size.mean_s()
        );
        for l in loads {
            md += &format!(" {:.0}% |", l * 100.0);
        }
        md += "\n|---|";
        md += &"---|".repeat(loads.len());
        md += "\n";
        let mut names: Vec<String> = points
            .iter()
            .filter(|p| p.service == s.name)
            .map(|p| p.variant.clone())
            .collect();
        names.dedup();
        for v in names {
            md += &format!("| {v} |");
            for &l in loads {
                md += &match find(points, s.name, &v, l) {
                    Some(p) => format!(
                        " {:.3} / {:.3} / {:.1}% |",
                        p.get("throughput_loss"),
                        p.get("mean_response_s"),
                        p.get("terminated_fraction") * 100.0
                    ),
                    None => " - |".into(),
                };
            }
            md += "\n";
        }
    }
    md += "\nThe simulator's figures for the same plant are in `crates/seda-sim/README.md` \
           (`seda sim sert-threshold`, unscaled times).\n";
    md
}
