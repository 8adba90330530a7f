//! Pieces shared by the scenarios.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{Result, anyhow};
use seda_control::{AdmissionController, catalogue};
use seda_sim::{
    Dist, Metrics, Population, SimConfig, SimResult, SourceConfig, StageConfig, simulate,
};
use serde_json::{Value, json};

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

fn opt(x: Option<f64>) -> Value {
    x.map_or(Value::Null, |v| json!(v))
}

/// A per-`step_s` series as JSON.
pub fn series_json(m: &Metrics, step_s: f64) -> Value {
    let rows: Vec<Value> = m
        .series(step_s)
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let state: serde_json::Map<String, Value> =
                b.state.iter().map(|(k, v)| ((*k).to_string(), json!(v))).collect();
            json!({
                "t_s": i as f64 * step_s,
                "offered_per_s": b.offered as f64 / step_s,
                "admitted_per_s": b.admitted as f64 / step_s,
                "completed_per_s": b.completed as f64 / step_s,
                "goodput_per_s": b.good as f64 / step_s,
                "rejected_per_s": b.rejected as f64 / step_s,
                "expired_per_s": b.expired as f64 / step_s,
                "timed_out_per_s": b.timed_out as f64 / step_s,
                "p50_s": opt(b.quantile(0.5)),
                "p90_s": opt(b.quantile(0.9)),
                "p99_s": opt(b.quantile(0.99)),
                "class_refused_fraction": [b.class_refused_fraction(0), b.class_refused_fraction(1)],
                "controller": state,
            })
        })
        .collect();
    Value::Array(rows)
}

/// A per-second table of a run.
pub fn series_text(name: &str, m: &Metrics, step_s: f64) -> String {
    let mut s = format!("\n-- {name}: per {step_s} s\n");
    s += &format!(
        "{:>6} {:>9} {:>9} {:>9} {:>9} {:>9} {:>8} {:>8}  controller\n",
        "t_s", "offered", "complete", "good", "rejected", "expired", "p90_s", "p99_s"
    );
    for (i, b) in m.series(step_s).iter().enumerate() {
        let q = |p| b.quantile(p).map_or("-".to_string(), |v| format!("{v:.3}"));
        let state: Vec<String> = b.state.iter().map(|(k, v)| format!("{k}={v:.1}")).collect();
        s += &format!(
            "{:>6.1} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>8} {:>8}  {}\n",
            i as f64 * step_s,
            b.offered as f64 / step_s,
            b.completed as f64 / step_s,
            b.good as f64 / step_s,
            b.rejected as f64 / step_s,
            b.expired as f64 / step_s,
            q(0.9),
            q(0.99),
            state.join(" ")
        );
    }
    s
}
