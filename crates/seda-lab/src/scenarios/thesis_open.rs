//! `thesis-open` (FAIR07 Section 5.3, Tables 1 and 2): open-loop arrivals that double at the
//! two-thirds point, against our self-tuning design (global control, the self-tuning pool,
//! the selective dropper at the entry) and SEDA's admission control with a well-sized and with
//! an over-allocated pool, one after the other on the same plant.
//!
//! The plant is `seda serve bottleneck` with an *emulated* backend (a sleep, not real I/O)
//! that thrashes past 12 requests at once (40 ms a call on average, each within +-25% of it:
//! at most about 300 pages/s, at 12 threads), and almost no CPU work per page. The thesis's
//! 200 then 400 clients each sending every 200-600 ms are arrivals of 500/s then 1000/s; here
//! they are 0.45 then 0.9 x the plant's designed capacity (Poisson), and its p90 target of
//! 100 ms is 200 ms (five backend calls), the dropper's threshold 0.8 x that, as in the thesis.

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::Result;
use seda::sizer::LawName;
use seda::{AdmissionConfig, GlobalControlConfig, SizerConfig, StageConfig};
use seda_control::catalogue::sizers::{FIXED, SELF_TUNING};
use seda_load::{Arrivals, ClientConfig, LoadConfig, Model, Open, Report, Schedule, Target};
use seda_testbed::bottleneck::{BottleneckConfig, BottleneckServeConfig, STAGE};
use serde_json::{Map, Value, json};

use crate::child::Child;
use crate::lab::Lab;
use crate::outcome::{Check, Outcome};
use crate::plot::{LineChart, Series};
use crate::poll::{Sample, StatsPoller, pool_series};
use crate::scenario::Scenario;

/// The scenario.
pub(crate) struct ThesisOpen;

/// The emulated backend's latency, ms.
pub(super) const BACKEND_MS: u64 = 40;
/// Requests it serves at once before it thrashes.
pub(super) const KNEE: usize = 12;
/// Each call's wait is drawn within this share of [`BACKEND_MS`] on either side: with every
/// call alike a response time is a whole number of calls, and `dynamic-groups`' p90 read 0.37
/// or 0.46 x its target from run to run (0.36-0.40 at this spread). At +-50% one run of five
/// here went past the knee at the load's doubling (the notebook).
const BACKEND_SPREAD: f64 = 0.25;
/// The plant's designed capacity, pages/s.
pub(super) const CAPACITY: f64 = capacity(KNEE);

/// The designed capacity, pages/s, of the plant with its knee at `knee`: `knee` calls of
/// [`BACKEND_MS`] at once.
pub(super) const fn capacity(knee: usize) -> f64 {
    knee as f64 * 1000.0 / BACKEND_MS as f64
}
/// Arrivals before and after the two-thirds point, as shares of the capacity.
const LOADS: [f64; 2] = [0.45, 0.9];
/// The p90 target.
const TARGET: Duration = Duration::from_millis(200);
/// How often the server's pool and global control are sampled.
pub(super) const POLL: Duration = Duration::from_millis(250);

/// The self-tuning design's `[stages.bottleneck]` settings.
pub(super) fn self_tuning_stage() -> StageConfig {
    StageConfig {
        threads: Some(4),
        min_threads: Some(1),
        max_threads: Some(48),
        sizer: Some(SizerConfig {
            law: Some(LawName::P),
            period_ms: Some(500),
            ..SizerConfig::new(SELF_TUNING)
        }),
        ..StageConfig::default()
    }
}

/// The variants, by the names the summary uses, and their `[stages.bottleneck]` settings.
fn variants() -> [(&'static str, StageConfig); 3] {
    let seda = |threads: usize| StageConfig {
        threads: Some(threads),
        min_threads: Some(threads),
        max_threads: Some(threads),
        sizer: Some(SizerConfig::new(FIXED)),
        admission: Some(AdmissionConfig {
            kind: seda_control::catalogue::RESPONSE_TIME.into(),
            params: [("target_s".into(), TARGET.as_secs_f64())].into(),
        }),
        ..StageConfig::default()
    };
    [
        ("self_tuning", self_tuning_stage()),
        ("seda_well_sized", seda(KNEE)),
        ("seda_over_allocated", seda(4 * KNEE)),
    ]
}

/// The plant (the module docs) with its knee at `knee` requests, shared with `follow-target`;
/// a 20 ms control tick, and `stage` as its stage's settings, one request per batch: with the
/// default batch one worker takes dozens of requests at once, the others idle, and requests
/// wait inside the batch where the dropper cannot see them.
pub(super) fn plant(
    knee: usize,
    stats_period_ms: u64,
    stage: StageConfig,
) -> BottleneckServeConfig {
    let mut config = BottleneckServeConfig {
        bottleneck: BottleneckConfig {
            work_kb: 1.0,
            rounds: 1,
            base_kb: 0.0,
            backend_ms: BACKEND_MS as f64,
            backend_knee: knee,
            backend_spread: BACKEND_SPREAD,
            ..BottleneckConfig::default()
        },
        ..BottleneckServeConfig::default()
    };
    config.runtime.runtime.tick_ms = 20;
    config.runtime.runtime.stats_period_ms = stats_period_ms;
    let stage = StageConfig {
        batch: Some(1),
        ..stage
    };
    config.runtime.stages.insert(STAGE.to_string(), stage);
    config
}

/// Starts the plant as `name` with `stage` as its stage's settings; global control toward
/// `target` when `stage` runs the self-tuning sizer. Returns its address, its admin address and
/// the process.
pub(super) fn start(
    lab: &Lab,
    name: &str,
    stage: &StageConfig,
    target: Duration,
) -> Result<(SocketAddr, SocketAddr, Child)> {
    let global = stage.sizer.as_ref().is_some_and(|s| s.kind == SELF_TUNING);
    let mut config = plant(KNEE, 500, stage.clone());
    if global {
        config.runtime.runtime.global = Some(GlobalControlConfig::new(target, STAGE));
    }
    crate::bottleneck::spawn_configured(lab, name, &config)
}

fn load(addr: SocketAddr, phases: [Duration; 2]) -> Result<LoadConfig> {
    let rates = LOADS.map(|f| f * CAPACITY);
    let schedule = Schedule::parse(&format!(
        "0s={},{}ms={}",
        rates[0],
        phases[0].as_millis(),
        rates[1]
    ))?;
    let model = Model::Open(Open {
        rate_per_s: rates[0],
        arrivals: Arrivals::Poisson,
        max_connections: 4000,
        max_backlog: 100_000,
    });
    let mut cfg = LoadConfig::new(Target::parse(&format!("http://{addr}/"))?, model)?;
    cfg.schedule = Some(schedule);
    cfg.duration = phases[0] + phases[1];
    cfg.goodput_target = TARGET;
    cfg.client = ClientConfig {
        deadline: Duration::from_secs(10),
        ..ClientConfig::default()
    };
    Ok(cfg)
}

/// Table 1's and Table 2's columns for one variant.
pub(super) fn table(r: &Report, target: Duration) -> serde_json::Value {
    let c = &r.summary.counts;
    let incoming = c.sent + r.summary.dropped;
    let share = |n: u64, of: u64| {
        if of > 0 {
            n as f64 / of as f64
        } else {
            f64::NAN
        }
    };
    json!({
        "incoming": incoming,
        "within_target": c.good,
        "processed": c.completed,
        "rejected": c.rejected,
        "timeouts": c.timeouts,
        "errors": c.errors,
        "within_target_of_processed": share(c.good, c.completed),
        "within_target_of_all": share(c.good, incoming),
        "rejected_fraction": share(c.rejected, incoming),
        "admitted_fraction": share(incoming.saturating_sub(c.rejected), incoming),
        "p90_ms": r.summary.latency.p90_ms,
        "target_s": target.as_secs_f64(),
    })
}

/// What a run did over time, to tell why its figures came out as they did: the clients' own
/// per-interval counts and latencies, and the server's threads, throughput targets and queue.
pub(super) fn over_time(r: &Report, polled: &[Sample]) -> Value {
    let pool = |pick: fn(&seda::PoolSnapshot) -> Option<f64>| pool_series(polled, STAGE, pick);
    json!({
        "series": r.series,
        "threads": pool(|p| Some(p.threads as f64)),
        "queue_len": pool(|p| Some(p.queue_len as f64)),
        "throughput_per_s": pool(|p| p.sizing.throughput_per_s),
        "throughput_target_per_s": pool(|p| p.sizing.throughput_target_per_s),
    })
}

/// Each variant's threads over time, from its [`over_time`] figures.
pub(super) fn plot_threads<'a>(
    lab: &Lab,
    variants: impl IntoIterator<Item = (&'a str, &'a Value)>,
) -> Result<()> {
    let series = variants
        .into_iter()
        .map(|(name, d)| {
            Series::new(
                name,
                serde_json::from_value(d["threads"].clone()).unwrap_or_default(),
            )
        })
        .collect();
    lab.plot(
        "threads",
        &LineChart::over_time("the bottleneck stage's threads", "threads", series),
    )?;
    Ok(())
}

impl Scenario for ThesisOpen {
    fn name(&self) -> &'static str {
        "thesis-open"
    }

    fn about(&self) -> &'static str {
        "open-loop arrivals doubling at the two-thirds point: global control with self-tuning \
         pools against SEDA's admission control with a well-sized and an over-allocated pool \
         (FAIR07 Section 5.3, Tables 1 and 2)"
    }

    /// The share admitted, not the share rejected (which stays in the summary and the
    /// tables): the goal bounds it at 4%, and a share of a few requests in a hundred moves
    /// by multiples of itself between runs that all meet it (16, 62 and 17 of 2,153 in three
    /// runs on 2026-12-04, 0.007-0.029, a "spread" of 265%).
    fn headline(&self) -> &'static [&'static str] {
        &[
            "self_tuning/within_target_of_all",
            "self_tuning/admitted_fraction",
            "seda_well_sized/within_target_of_all",
        ]
    }

    fn run(&self, lab: &Lab) -> Result<Outcome> {
        let phases = lab.pick(
            [Duration::from_secs(8), Duration::from_secs(4)],
            [Duration::from_secs(60), Duration::from_secs(30)],
        );
        let mut summary = Map::new();
        let mut data = Map::new();
        for (name, stage) in variants() {
            let (addr, admin, child) = start(lab, name, &stage, TARGET)?;
            let poller = StatsPoller::start(admin, POLL);
            let report = lab.load(load(addr, phases)?);
            let polled = poller.stop();
            child.stop();
            let report = report?;
            let t = table(&report, TARGET);
            lab.log(format!("{name}: {t}"));
            summary.insert(name.to_string(), t);
            data.insert(name.to_string(), over_time(&report, &polled));
        }
        plot_threads(lab, data.iter().map(|(name, d)| (name.as_str(), d)))?;
        let get = |v: &str, k: &str| summary[v][k].as_f64().unwrap_or(f64::NAN);
        let ours = get("self_tuning", "within_target_of_all");
        let well = get("seda_well_sized", "within_target_of_all");
        let over = get("seda_over_allocated", "within_target_of_all");
        let rejected = get("self_tuning", "rejected_fraction");
        // Five quick release runs after the pool stopped growing while it kept up: ours 0.967
        // to 0.985 of all requests within the target with 0.7 to 1.5% rejected, both baselines
        // 0.603 (before: 0.53 to 0.92, the pool grown to 36 threads and thrashing the backend).
        // The goal, 90%, in both forms (a CI run of the debug build once read 0.888; the lab
        // now runs the release build, as users do).
        let within_goal = 0.9;
        let checks = vec![
            Check::new(
                "the self-tuning design serves more of all requests within the target than SEDA's \
                 admission control with an over-allocated pool (thesis: 81.2% against 52.8%)",
                ours > over,
                format!("ours {ours:.3}, over-allocated {over:.3}"),
            ),
            Check::new(
                "the self-tuning design serves more of all requests within the target than SEDA's \
                 admission control with a well-sized pool (thesis: 81.2% against 74.6%)",
                ours > well,
                format!("ours {ours:.3}, well-sized {well:.3}"),
            ),
            Check::new(
                format!(
                    "at least {within_goal} of all requests within the target with at most 4% \
                     rejected (the issue's goal; the thesis reached 81.2% with 4%)"
                ),
                ours >= within_goal && rejected <= 0.04,
                format!("{ours:.3} within target, {rejected:.3} rejected"),
            ),
        ];
        let mut report = format!(
            "Open-loop Poisson arrivals at {:.0}/s, then {:.0}/s from {:.0} s to {:.0} s (the \
             thesis: 200 then 400 clients each every 200-600 ms), on `seda serve bottleneck` with \
             an emulated backend of {BACKEND_MS} ms a call (each within +-{:.0}%) that thrashes \
             past {KNEE} requests (designed capacity {CAPACITY:.0} pages/s). p90 target {} ms \
             (thesis 100 ms), dropper at 0.8 x.\n\n\
             | variant | incoming | within target | processed | rejected | processed within \
             target | all within target | rejection rate |\n|---|---|---|---|---|---|---|---|\n",
            LOADS[0] * CAPACITY,
            LOADS[1] * CAPACITY,
            phases[0].as_secs_f64(),
            (phases[0] + phases[1]).as_secs_f64(),
            BACKEND_SPREAD * 100.0,
            TARGET.as_millis()
        );
        for (name, t) in &summary {
            report += &format!(
                "| {name} | {} | {} | {} | {} | {:.3} | {:.3} | {:.3} |\n",
                t["incoming"],
                t["within_target"],
                t["processed"],
                t["rejected"],
                t["within_target_of_processed"].as_f64().unwrap_or(f64::NAN),
                t["within_target_of_all"].as_f64().unwrap_or(f64::NAN),
                t["rejected_fraction"].as_f64().unwrap_or(f64::NAN),
            );
        }
        report += "| thesis: self-tuning | | | | | | 0.812 | 0.04 |\n\
                   | thesis: SEDA, well-sized | | | | | | 0.746 | 0.217 |\n\
                   | thesis: SEDA, over-allocated | | | | | | 0.528 | 0.528 |\n";
        Ok(Outcome {
            paper: "FAIR07 Section 5.3, Tables 1 and 2".into(),
            config: json!({
                "backend_ms": BACKEND_MS,
                "backend_spread": BACKEND_SPREAD,
                "knee": KNEE,
                "capacity_per_s": CAPACITY,
                "loads_of_capacity": LOADS,
                "phases_s": phases.map(|p| p.as_secs_f64()),
                "target_s": TARGET.as_secs_f64(),
                "variants": variants().map(|(n, s)| json!({"name": n, "stage": s})),
            }),
            summary,
            data: Value::Object(data),
            checks,
            report,
        })
    }
}
