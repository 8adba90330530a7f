//! The synthetic sized-request service of the early-termination scenarios (SERT06): `seda
//! serve bottleneck`'s `GET /hold?ms=N` (a request that holds one of the stage's workers for
//! N ms, checking its cancel token every 5 ms), and a workload of two request types
//! whose mix shifts during the run.
//!
//! Its capacity is `workers / mean hold` by construction (a hold costs a worker's time, not the
//! CPU), so the scenarios size their loads without calibrating and keep their meaning on a
//! loaded machine; what the machine's load changes is only the millisecond timer's slack.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;
use seda_load::workload::{Reply, Request, Session, Workload};
use seda_load::{ClientConfig, LoadConfig, Report};
use seda_sim::summary::{RunSummary, fraction, per_s};
use seda_testbed::bottleneck::{BottleneckConfig, BottleneckServeConfig, STAGE};

use crate::child::Child;
use crate::lab::Lab;
use crate::poll::Sample;

/// The runtime's control tick in the hold service, ms (the default is 100).
pub const TICK_MS: u64 = 20;

/// How the hold service runs: its workers, its queue bound (admission at the door), and an
/// optional terminator.
#[derive(Debug, Clone)]
pub struct HoldSetup {
    /// Worker threads of the stage.
    pub workers: usize,
    /// The stage's queue threshold.
    pub queue: usize,
    /// The stage's terminator.
    pub terminate: Option<seda::TerminateConfig>,
    /// The runtime's stats period, ms, the period a terminator is fed at (`None`: the
    /// runtime's 1 s). A scenario that scales its times scales this with them.
    pub stats_period_ms: Option<u64>,
}

impl HoldSetup {
    /// The service's configuration for `setup`.
    pub(crate) fn serve_config(&self) -> BottleneckServeConfig {
        // Batch 1: each worker takes one request at a time, and a request's running time
        // starts when its worker takes it.
        // A 20 ms control tick: a request is cut within 20 ms of passing the threshold.
        let mut config = BottleneckServeConfig {
            bottleneck: BottleneckConfig {
                threads: self.workers,
                work_kb: 4.0,
                base_kb: 4.0,
                ..BottleneckConfig::default()
            },
            ..BottleneckServeConfig::default()
        };
        config.runtime.runtime.tick_ms = TICK_MS;
        if let Some(ms) = self.stats_period_ms {
            config.runtime.runtime.stats_period_ms = ms;
        }
        config.runtime.stages.insert(
            STAGE.to_string(),
            seda::StageConfig {
                batch: Some(1),
                threshold: Some(self.queue),
                terminate: self.terminate.clone(),
                ..seda::StageConfig::default()
            },
        );
        config
    }
}

/// A running hold service.
#[derive(Debug)]
pub struct HoldServer {
    /// Where it listens.
    pub addr: SocketAddr,
    /// Its admin address.
    pub admin: SocketAddr,
    child: Child,
}

impl HoldServer {
    /// Starts `seda serve bottleneck` as `name` with `setup`.
    pub fn start(lab: &Lab, name: &str, setup: &HoldSetup) -> Result<HoldServer> {
        let config = setup.serve_config();
        let (addr, admin, child) = crate::bottleneck::spawn_configured(lab, name, &config)?;
        Ok(HoldServer { addr, admin, child })
    }

    /// Stops the server.
    pub fn stop(self) {
        self.child.stop();
    }
}

/// Open Poisson arrivals at `rate_per_s` for `run_s` to `server`, requests from `workload`
/// (a [`ShiftMix`]...); 1 s intervals with their histograms, goodput within 1 s (the slides'
/// limit), a 30 s deadline.
pub fn open_load(
    server: &HoldServer,
    rate_per_s: f64,
    run_s: f64,
    workload: impl Workload + 'static,
) -> Result<LoadConfig> {
    let mut cfg = crate::loads::poisson(&format!("http://{}/hold", server.addr), rate_per_s)?;
    cfg.duration = Duration::from_secs_f64(run_s);
    cfg.workload = Arc::new(workload);
    cfg.goodput_target = Duration::from_secs(1);
    cfg.keep_interval_histograms = true;
    cfg.precise_pacing = true;
    cfg.client = ClientConfig {
        deadline: Duration::from_secs(30),
        ..ClientConfig::default()
    };
    Ok(cfg)
}

/// What `pick` reads from the hold stage in each sample.
pub fn stage_series(
    samples: &[Sample],
    pick: impl Fn(&seda::stats::StageSnapshot) -> Option<f64>,
) -> Vec<(f64, f64)> {
    crate::poll::stage_series(samples, STAGE, pick)
}

/// The requests the stage's terminator cut, cumulative, in each sample.
pub fn terminated(stage: &seda::stats::StageSnapshot) -> Option<f64> {
    Some(stage.totals.counters.terminated as f64)
}

/// The running time past which the stage's terminator cuts requests, seconds, in each sample.
pub fn termination_threshold_s(stage: &seda::stats::StageSnapshot) -> Option<f64> {
    Some(stage.termination.as_ref()?.threshold_s)
}

/// The increase of a cumulative `series` between `from_s` and `to_s` (the samples nearest
/// inside the span).
pub fn increase(series: &[(f64, f64)], from_s: f64, to_s: f64) -> f64 {
    let inside: Vec<f64> = series
        .iter()
        .filter(|(t, _)| *t >= from_s && *t <= to_s)
        .map(|(_, v)| *v)
        .collect();
    match (inside.first(), inside.last()) {
        (Some(a), Some(b)) => (b - a).max(0.0),
        _ => 0.0,
    }
}

/// Two request types, short and long, whose long share is `base_long` outside
/// `[shift_from_s, shift_to_s)` of the run and `shift_long` inside it.
#[derive(Debug, Clone)]
pub struct ShiftMix {
    /// The short type's hold.
    pub short: Duration,
    /// The long type's hold.
    pub long: Duration,
    /// Long share outside the shift.
    pub base_long: f64,
    /// Long share during the shift.
    pub shift_long: f64,
    /// Start of the shift, seconds into the run.
    pub shift_from_s: f64,
    /// End of the shift.
    pub shift_to_s: f64,
}

impl ShiftMix {
    /// The mean hold outside and during the shift.
    pub fn mean_s(&self, long_share: f64) -> f64 {
        (1.0 - long_share) * self.short.as_secs_f64() + long_share * self.long.as_secs_f64()
    }
}

impl Workload for ShiftMix {
    fn classes(&self) -> Vec<String> {
        vec![
            format!("short_{}ms", self.short.as_millis()),
            format!("long_{}ms", self.long.as_millis()),
        ]
    }

    fn session(&self, seed: u64) -> Box<dyn Session> {
        let path = |d: Duration| -> Arc<str> { format!("/hold?us={}", d.as_micros()).into() };
        Box::new(ShiftSession {
            mix: self.clone(),
            paths: [path(self.short), path(self.long)],
            state: seed ^ 0x9e37_79b9_7f4a_7c15,
            start: None,
        })
    }
}

/// A uniform draw in [0, 1) from a splitmix64 `state`: the sessions' own small generator, so
/// a seed gives the same request sequence everywhere.
pub(crate) fn uniform(state: &mut u64) -> f64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (z ^ (z >> 31)) as f64 / (u64::MAX as f64 + 1.0)
}

struct ShiftSession {
    mix: ShiftMix,
    paths: [Arc<str>; 2],
    state: u64,
    start: Option<Instant>,
}

impl ShiftSession {
    /// A uniform draw in [0, 1).
    fn uniform(&mut self) -> f64 {
        crate::hold::uniform(&mut self.state)
    }
}

impl Session for ShiftSession {
    fn next_request(&mut self, _last: Option<&Reply<'_>>) -> Request {
        let t = self.start.get_or_insert_with(Instant::now).elapsed();
        let t = t.as_secs_f64();
        let m = &self.mix;
        let share = if t >= m.shift_from_s && t < m.shift_to_s {
            m.shift_long
        } else {
            m.base_long
        };
        let class = usize::from(self.uniform() < share);
        Request::get(self.paths[class].clone(), class)
    }
}

/// The figures over the intervals in `[from_s, to_s)`, under the names `seda sim sert-shift`
/// uses (`terminated`: requests the server terminated in the span).
pub fn window_summary(
    name: &str,
    report: &Report,
    from_s: f64,
    to_s: f64,
    terminated: f64,
) -> RunSummary {
    let mut c = seda_load::record::Counts::default();
    for i in report
        .series
        .iter()
        .filter(|i| i.t_s >= from_s && i.t_s < to_s)
    {
        c.sent += i.counts.sent;
        c.completed += i.counts.completed;
        c.good += i.counts.good;
        c.rejected += i.counts.rejected;
        c.timeouts += i.counts.timeouts;
        c.errors += i.counts.errors;
    }
    let secs = to_s - from_s;
    let mean = report
        .latency_between(from_s, to_s)
        .map_or(f64::NAN, |l| l.mean_ms / 1000.0);
    let mut s = RunSummary::new(1.0);
    s.controller = Some(name.to_string());
    s.throughput_per_s = Some(per_s(c.completed, secs));
    s.goodput_per_s = per_s(c.good, secs);
    s.offered_per_s = Some(per_s(c.sent, secs));
    s.rejected_fraction = fraction(c.rejected, c.sent);
    s.insert("mean_response_s", mean);
    s.insert("within_1s_fraction", fraction(c.good, c.sent));
    s.insert(
        "terminated_fraction",
        if c.sent == 0 {
            0.0
        } else {
            terminated / c.sent as f64
        },
    );
    s.insert(
        "throughput_loss",
        fraction(c.sent.saturating_sub(c.completed), c.sent),
    );
    s
}
