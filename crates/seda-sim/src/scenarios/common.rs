//! Pieces shared by the scenarios.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::{Dist, Population, SimConfig, SimResult, SourceConfig, StageConfig, simulate};
use anyhow::{Result, anyhow};
use seda_control::{AdmissionController, catalogue};

/// The controllers a scenario runs: the one asked for, or `all`.
pub fn selected<'a>(asked: &'a Option<String>, all: &[&'a str]) -> Vec<&'a str> {
    match asked {
        Some(c) => vec![c.as_str()],
        None => all.to_vec(),
    }
}

/// Builds the catalogue's `kind` aimed at the response-time target (as its entry says), plus
/// `extra` parameters; `none` is no controller.
pub fn controller(
    kind: &str,
    target_s: f64,
    extra: &[(String, f64)],
) -> Result<Option<Box<dyn AdmissionController>>> {
    if kind == "none" {
        return Ok(None);
    }
    let extra: BTreeMap<String, f64> = extra.iter().cloned().collect();
    let target = Duration::try_from_secs_f64(target_s).map_err(|e| anyhow!("target: {e}"))?;
    catalogue::entry(kind)
        .and_then(|e| e.build_aimed(target, &extra))
        .map(Some)
        .map_err(|e| anyhow!(e))
}

/// Runs a configuration, turning its error into a readable one.
pub fn sim(cfg: SimConfig) -> Result<SimResult> {
    simulate(cfg).map_err(|e| anyhow!("simulation failed: {e}"))
}

/// The stage's maximum throughput, measured: saturated by closed users with no think time.
pub fn measure_capacity(stage: &StageConfig, seed: u64) -> Result<f64> {
    let users = stage.servers.saturating_mul(4).max(16);
    let pop = Population::Closed {
        users,
        think: Dist::Deterministic { mean_s: 0.0 },
        reject_wait: None,
        start_s: 0.0,
        end_s: f64::INFINITY,
    };
    let duration =
        (200_000.0 * stage.service.mean_s() / f64::from(stage.servers)).clamp(10.0, 200.0);
    let mut cfg = SimConfig::new(duration, stage.clone(), vec![SourceConfig::new(pop)]);
    cfg.seed = seed;
    cfg.warmup_s = duration / 10.0;
    cfg.bucket_s = duration / 10.0;
    let r = sim(cfg)?;
    Ok(r.metrics.total.completed as f64 / (duration * 0.9))
}

/// A stage of `servers` with a FIFO queue without bound, keeping expired requests.
pub fn stage(servers: u32, service: Dist) -> StageConfig {
    StageConfig {
        servers,
        service,
        queue_cap: None,
        drop_expired: false,
    }
}

/// A flash crowd of closed users thinking `think_s` on average: `base` users throughout, and
/// `users - base` more from `onset_s` to `end_s`.
pub fn spike_sources(
    base: u32,
    users: u32,
    think_s: f64,
    onset_s: f64,
    end_s: f64,
) -> Vec<SourceConfig> {
    let closed = |n, start_s, end_s| {
        SourceConfig::new(Population::Closed {
            users: n,
            think: Dist::exp(think_s),
            reject_wait: None,
            start_s,
            end_s,
        })
    };
    vec![
        closed(base, 0.0, f64::INFINITY),
        closed(users.saturating_sub(base), onset_s, end_s),
    ]
}

/// Global control's periods as a table, header first: the end of each period, the pool's
/// threads, arrivals and completions per second, the throughput target and the period's p90.
pub fn period_table(periods: &[crate::levers::Period]) -> String {
    let mut text = format!(
        "{:>6} {:>8} {:>10} {:>10} {:>9} {:>8}\n",
        "t_s", "threads", "arrivals", "served", "target", "p90_s"
    );
    for p in periods {
        text += &format!(
            "{:>6.0} {:>8} {:>10.1} {:>10.1} {:>9.1} {:>8.3}\n",
            p.end_s,
            p.servers,
            p.arrivals_per_s,
            p.throughput_per_s,
            p.target_per_s.unwrap_or(f64::NAN),
            p.p90_s.unwrap_or(f64::NAN)
        );
    }
    text
}

/// The same periods as JSON rows `[end_s, threads, arrivals/s, served/s, p90_s]`.
pub fn period_series(periods: &[crate::levers::Period]) -> Vec<serde_json::Value> {
    periods
        .iter()
        .map(|p| {
            serde_json::json!([
                p.end_s,
                p.servers,
                p.arrivals_per_s,
                p.throughput_per_s,
                p.p90_s
            ])
        })
        .collect()
}
