//! `follow-target` (FAIR07 Figure 5-7, Section 5.2.1): the p90 target is changed while the
//! service runs, and the real runtime's global control moves the measured p90 after it.
//!
//! The plant is `thesis-open`'s with twice its knee ([`KNEE`]): `seda serve bottleneck` with
//! the emulated backend, as a pinned child process; at each step the scenario posts the new
//! target to the server's admin address (`POST /_seda/target?p90_ms=N`, which calls
//! `Runtime::set_response_target`), as an operator would. The thesis's experiment, as `seda
//! sim follow-target` runs it, scaled by 0.4 in time to fit a quick run: targets 0.4 s, 0.2 s
//! and 0.48 s (the simulator's 1 s, 0.5 s and 1.2 s), 240 partly-open clients (its 120, on
//! twice the knee) each sending 0.4 s after a reply or 0.6 s after its last send without one
//! (the thesis's 1 s and 1.5 s), and 0.8 s control periods (its 2 s). The settings the
//! simulator's module gives reasons for hold here too: global control's arrival floor off, no
//! selective dropper, and a pool moving a bounded step per period (two threads here, on twice
//! the knee, where the simulator moves one).

use std::net::SocketAddr;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use seda::sizer::LawName;
use seda::{GlobalControlConfig, SizerConfig, StageConfig};
use seda_control::catalogue::sizers::SELF_TUNING;
use seda_load::{ClientConfig, Eager, LoadConfig, Model, Report, Target};
use seda_testbed::bottleneck::{BottleneckServeConfig, STAGE};
use serde_json::{Map, Value, json};

use super::thesis_open::{self, BACKEND_MS};
use crate::lab::Lab;
use crate::outcome::{Check, Outcome};
use crate::plot::{LineChart, Series};
use crate::poll::{Sample, StatsPoller, pool_series};
use crate::scenario::Scenario;

/// The scenario.
pub(crate) struct FollowTarget;

/// The p90 targets, one per phase of equal length.
const TARGETS: [Duration; 3] = [
    Duration::from_millis(400),
    Duration::from_millis(200),
    Duration::from_millis(480),
];
/// The plant's knee: twice `thesis-open`'s, with twice the clients, so that a thread is a
/// sixteenth of the throughput at the tightest target, not an eighth. With `thesis-open`'s
/// knee and the thesis's 120 clients (scaled) the pool moved between 7, 8 and 9 threads at the
/// 0.2 s target, each second's p90 read about 0.145 s at 9 and 0.21-0.28 s at 7 or 8, and the
/// phase's p90, a quantile of that mixture, took one of two values (0.99 or 1.22 x the target)
/// by how many slow seconds a run happened to have.
const KNEE: usize = 2 * thesis_open::KNEE;
/// The plant's designed capacity, pages/s.
const CAPACITY: f64 = thesis_open::capacity(KNEE);
/// Partly-open clients.
const CLIENTS: usize = 240;
/// Think time after a reply, and the time after which a client sends again without one.
const THINK: Duration = Duration::from_millis(400);
const PATIENCE: Duration = Duration::from_millis(600);
/// Global control's and the pool's period.
const PERIOD_MS: u64 = 800;
/// A phase's settled p90 may be this far above its target in a quick run on a shared machine.
const TOLERANCE: f64 = 1.5;

/// The server's configuration: the plant of `thesis-open` with [`KNEE`], global control
/// without the arrival floor or the dropper, and a self-tuning pool moving at most two
/// threads per period, starting at half the knee (see `run`). Two: one thread a period, as at
/// `thesis-open`'s knee, crossed between the targets in twice the periods, and 0.683 of all
/// requests were answered within the target over the run (0.803 before the knee was doubled,
/// 0.781 with two).
fn config() -> BottleneckServeConfig {
    let stage = StageConfig {
        threads: Some(KNEE / 2),
        min_threads: Some(1),
        max_threads: Some(48),
        sizer: Some(SizerConfig {
            law: Some(LawName::P),
            period_ms: Some(PERIOD_MS),
            max_step: Some(2),
            ..SizerConfig::new(SELF_TUNING)
        }),
        ..StageConfig::default()
    };
    let mut config = thesis_open::plant(KNEE, PERIOD_MS, stage);
    let mut global = GlobalControlConfig::new(TARGETS[0], STAGE);
    global.dropper_fraction = Some(0.0);
    global.arrival_floor = Some(false);
    config.runtime.runtime.global = Some(global);
    config
}

/// Posts a new p90 target to the admin address `admin`, as an operator would.
fn post_target(admin: SocketAddr, target: Duration) -> Result<()> {
    let path = format!("/_seda/target?p90_ms={}", target.as_millis());
    crate::admin::post(admin, &path).with_context(|| format!("setting the target to {target:?}"))
}

/// `n` of `of` as a fraction (`NaN` of none).
fn share(n: u64, of: u64) -> f64 {
    if of > 0 {
        n as f64 / of as f64
    } else {
        f64::NAN
    }
}

/// One phase's figures, against its own target.
fn phase_figures(r: &Report, from_s: f64, to_s: f64, target: Duration) -> Value {
    let (mut sent, mut completed, mut rejected) = (0, 0, 0);
    for i in r.series.iter().filter(|i| i.t_s >= from_s && i.t_s < to_s) {
        sent += i.counts.sent;
        completed += i.counts.completed;
        rejected += i.counts.rejected;
    }
    let good = r.completed_within_between(from_s, to_s, target);
    let settled = r
        .latency_between((from_s + to_s) / 2.0, to_s)
        .map_or(f64::NAN, |l| l.p90_ms / 1e3);
    json!({
        "target_s": target.as_secs_f64(),
        "from_s": from_s,
        "to_s": to_s,
        "p90_settled_s": settled,
        "p90_over_target": settled / target.as_secs_f64(),
        "incoming": sent,
        "processed": completed,
        "within_target": good,
        "within_target_of_all": share(good, sent),
        "within_target_of_processed": share(good, completed),
        "rejected": rejected,
        "rejected_fraction": share(rejected, sent),
    })
}

impl Scenario for FollowTarget {
    fn name(&self) -> &'static str {
        "follow-target"
    }

    fn about(&self) -> &'static str {
        "the p90 target changed at run time (0.4 s, 0.2 s, 0.48 s): global control and a \
         self-tuning pool on the real runtime move the p90 after it (FAIR07 Figure 5-7)"
    }

    fn headline(&self) -> &'static [&'static str] {
        &[
            "phase_1/p90_over_target",
            "phase_2/p90_over_target",
            "phase_3/p90_over_target",
            "whole_run/within_target_of_all",
        ]
    }

    fn run(&self, lab: &Lab) -> Result<Outcome> {
        let phase = lab.pick(Duration::from_secs(12), Duration::from_secs(40));
        // Unmeasured, at the first target: 120 clients arriving at once at a pool of 4 threads
        // (before the knee and the clients were doubled), growing one thread a period, queue 240
        // requests, and draining them took about 6 s, which was the first phase's settled half
        // (0.60 s against 0.40 s) rather than how the p90 follows the target. The pool then gives
        // back the threads the drain took, one a period, until about 15 s: after a 6 s start, the
        // first phase's settled half caught that descent in half of the quick runs (8 to 9 threads,
        // a p90 of 0.17 s against 0.40 s, below the next phase's), and the direction check failed
        // by chance. With twice the clients and the knee, a start at a third of the knee (8
        // threads) queued 480 requests, the pool grew to 25 threads by 14 s, and the first phase's
        // settled half caught its descent in every run (a p90 of 0.09-0.17 s against 0.40 s); it
        // now starts at half the knee, 12 threads, about what the first target needs.
        let timing = Timing {
            warmup: lab.pick(phase, phase / 2),
            phase,
        };
        let (report, polled) = drive(lab, timing)?;
        let threads = pool_series(&polled, STAGE, |p| Some(p.threads as f64));
        let server_targets: Vec<(f64, f64)> = polled
            .iter()
            .filter_map(|p| {
                let global = p.stats.runtime.as_ref()?.global.as_ref()?;
                Some((p.t_s, global.target_p90_s))
            })
            .collect();
        let (summary, settled) = summarise(&report, timing, &threads);
        draw(lab, &report, timing, &threads, &server_targets)?;
        let report_md = report_text(&summary, timing);
        Ok(Outcome {
            paper: "FAIR07 Figure 5-7".into(),
            config: json!({
                "targets_s": TARGETS.map(|t| t.as_secs_f64()),
                "phase_s": phase.as_secs_f64(),
                "warmup_s": timing.warmup.as_secs_f64(),
                "clients": CLIENTS,
                "think_s": THINK.as_secs_f64(),
                "expected_time_s": PATIENCE.as_secs_f64(),
                "period_ms": PERIOD_MS,
                "capacity_per_s": CAPACITY,
            }),
            summary,
            data: json!({ "series": report.series, "threads": threads, "server_targets": server_targets }),
            checks: checks(&settled, timing),
            report: report_md,
        })
    }
}

/// The run's time line: an unmeasured warm-up at the first target, then one phase a target.
#[derive(Debug, Clone, Copy)]
struct Timing {
    warmup: Duration,
    phase: Duration,
}

impl Timing {
    /// When phase `i` (from 0) starts, seconds from the load's start.
    fn phase_start(self, i: usize) -> Duration {
        self.warmup + self.phase * i as u32
    }

    /// The target in force at `t_s` seconds from the load's start.
    fn target_at(self, t_s: f64) -> Duration {
        let since = (t_s - self.warmup.as_secs_f64()).max(0.0);
        TARGETS[((since / self.phase.as_secs_f64()) as usize).min(TARGETS.len() - 1)]
    }
}

/// Drives the clients against the server while a thread posts each phase's target on time, as
/// an operator would: the load's report and the server's stats polled each second.
fn drive(lab: &Lab, timing: Timing) -> Result<(Report, Vec<Sample>)> {
    let (addr, admin, child) =
        crate::bottleneck::spawn_configured(lab, "follow-target", &config())?;
    let model = Model::Eager(Eager {
        users: CLIENTS,
        patience_min: PATIENCE,
        patience_max: PATIENCE,
        think: THINK,
        max_outstanding: Eager::DEFAULT_MAX_OUTSTANDING,
    });
    let mut cfg = LoadConfig::new(Target::parse(&format!("http://{addr}/"))?, model)?;
    cfg.duration = timing.phase_start(TARGETS.len());
    cfg.goodput_target = TARGETS[0];
    cfg.keep_interval_histograms = true;
    cfg.client = ClientConfig {
        deadline: Duration::from_secs(10),
        ..ClientConfig::default()
    };
    // The operator's changes, on a timer from the load's start; a message (or the sender
    // dropped) stops them early.
    let (stop, stopped) = mpsc::channel::<()>();
    let poller = StatsPoller::start(admin, Duration::from_secs(1));
    let start = Instant::now();
    let stepper = std::thread::spawn(move || -> Result<()> {
        for (i, target) in TARGETS.iter().enumerate().skip(1) {
            let at = start + timing.phase_start(i);
            let wait = at.saturating_duration_since(Instant::now());
            if stopped.recv_timeout(wait) != Err(mpsc::RecvTimeoutError::Timeout) {
                return Ok(());
            }
            post_target(admin, *target)?;
        }
        Ok(())
    });
    let report = lab.load(cfg);
    drop(stop);
    let stepped = stepper.join();
    let polled = poller.stop();
    child.stop();
    let report = report?;
    match stepped {
        Ok(r) => r?,
        Err(_) => bail!("the thread changing the target panicked"),
    }
    Ok((report, polled))
}

/// Each phase's figures (`phase_1` ...) and the whole run's (`whole_run`), and each phase's
/// settled p90 in seconds.
fn summarise(
    report: &Report,
    timing: Timing,
    threads: &[(f64, f64)],
) -> (Map<String, Value>, Vec<f64>) {
    let mut summary = Map::new();
    let mut settled = Vec::new();
    for (i, target) in TARGETS.iter().enumerate() {
        let from_s = timing.phase_start(i).as_secs_f64();
        let f = phase_figures(report, from_s, from_s + timing.phase.as_secs_f64(), *target);
        settled.push(f["p90_settled_s"].as_f64().unwrap_or(f64::NAN));
        summary.insert(format!("phase_{}", i + 1), f);
    }
    let sum = |k: &str| {
        (1..=TARGETS.len())
            .map(|i| summary[&format!("phase_{i}")][k].as_u64().unwrap_or(0))
            .sum::<u64>()
    };
    let (good, incoming, processed) = (sum("within_target"), sum("incoming"), sum("processed"));
    let rejected = sum("rejected");
    summary.insert(
        "whole_run".into(),
        json!({
            "within_target_of_all": share(good, incoming),
            "within_target_of_processed": share(good, processed),
            "rejected_fraction": share(rejected, incoming),
            "p90_over_target": settled.iter().zip(TARGETS).map(|(p, t)| p / t.as_secs_f64()).collect::<Vec<_>>(),
            "threads_max": threads.iter().map(|t| t.1).fold(0.0, f64::max),
        }),
    );
    (summary, settled)
}

/// The plots: the pool's threads beside the server's target, and the p90 against the target.
fn draw(
    lab: &Lab,
    report: &Report,
    timing: Timing,
    threads: &[(f64, f64)],
    server_targets: &[(f64, f64)],
) -> Result<()> {
    lab.plot(
        "threads",
        &LineChart::over_time(
            "the pool's threads, and the target the server holds (s x 10)",
            "threads",
            vec![
                Series::new("threads", threads.to_vec()),
                Series::new(
                    "server's target x 10",
                    server_targets.iter().map(|&(t, v)| (t, 10.0 * v)).collect(),
                ),
            ],
        ),
    )?;
    let points = |pick: &dyn Fn(&seda_load::record::IntervalStats) -> f64| {
        crate::plot::points_over(report, |i| Some(pick(i)))
    };
    lab.plot(
        "p90",
        &LineChart::over_time(
            "p90 response time (s) per second against the target changed at run time",
            "s",
            vec![
                Series::new("p90", points(&|i| i.latency.p90_ms / 1e3)),
                Series::new("target", points(&|i| timing.target_at(i.t_s).as_secs_f64())),
            ],
        ),
    )
}

/// The claims on each phase's settled p90 (`settled`, seconds).
fn checks(settled: &[f64], timing: Timing) -> Vec<Check> {
    let within = settled
        .iter()
        .zip(TARGETS)
        .all(|(p, t)| *p <= TOLERANCE * t.as_secs_f64());
    let (down, up) = (settled[1] < settled[0], settled[2] > settled[1]);
    let detail = settled
        .iter()
        .zip(TARGETS)
        .map(|(p, t)| format!("{p:.3} s against {:.2} s", t.as_secs_f64()))
        .collect::<Vec<_>>()
        .join(", ");
    vec![
        Check::new(
            "the p90 moves in the direction of each step of the target (down when it is \
             halved, up when it is loosened; each phase's second half)",
            down && up,
            detail.clone(),
        ),
        // Quick runs read 0.985-1.123 x (five on 2026-12-06), the simulator 0.80-1.34 x
        // on six seeds; a loaded run is marked so and does not fail.
        Check::new(
            format!(
                "each phase's settled p90 is within {TOLERANCE} x its target ({:.0} s phases)",
                timing.phase.as_secs_f64()
            ),
            within,
            detail,
        ),
    ]
}

/// The report's text: the setting, then a table of the phases.
fn report_text(summary: &Map<String, Value>, timing: Timing) -> String {
    let mut report_md = format!(
        "{CLIENTS} partly-open clients (think {} s, expected time {} s) against `seda serve \
         bottleneck` with the emulated backend of `thesis-open` ({BACKEND_MS} ms a call on \
         average) thrashing past {KNEE} (twice its knee: designed capacity {CAPACITY:.0} \
         pages/s). Global control (no arrival floor, no dropper) and a P-controlled pool \
         (at most two threads per {PERIOD_MS} ms period); after {:.0} s unmeasured at the \
         first target, the p90 target is set to each of {:?} s for {:.0} s in turn by \
         `POST /_seda/target` on the admin address (the thesis's Figure 5-7; scaled by 0.4 \
         from `seda sim follow-target`).\n\n\
         | phase | target | p90 (second half) | x target | all within target | processed \
         within target | rejected |\n|---|---|---|---|---|---|---|\n",
        THINK.as_secs_f64(),
        PATIENCE.as_secs_f64(),
        timing.warmup.as_secs_f64(),
        TARGETS.map(|t| t.as_secs_f64()),
        timing.phase.as_secs_f64(),
    );
    for i in 1..=TARGETS.len() {
        let f = &summary[&format!("phase_{i}")];
        let g = |k: &str| f[k].as_f64().unwrap_or(f64::NAN);
        report_md += &format!(
            "| {i} | {:.2} s | {:.3} s | {:.2} | {:.3} | {:.3} | {:.3} |\n",
            g("target_s"),
            g("p90_settled_s"),
            g("p90_over_target"),
            g("within_target_of_all"),
            g("within_target_of_processed"),
            g("rejected_fraction"),
        );
    }
    report_md
}
