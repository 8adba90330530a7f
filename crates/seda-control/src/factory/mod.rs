//! Building an admission controller from a configuration: a kind name and numeric parameters
//! with units in their names (`target_s`, `nreq`, `min_rate_per_s`).

mod params;

use std::collections::BTreeMap;
use std::time::Duration;

use params::Params;

use crate::AdmissionController;
use crate::degradation::{DegradationConfig, DegradingAdmission};
use crate::dropper::{DEFAULT_DROP_THRESHOLD, SelectiveDropper};
use crate::multiclass::{MulticlassConfig, MulticlassController};
use crate::peers::{
    AimdLimit, AimdLimitConfig, Codel, CodelConfig, ConcurrencyLimiter, EnvoyGradient,
    EnvoyGradientConfig, Gradient2Config, Gradient2Limit, VegasConfig, VegasLimit,
};
use crate::response_time::{
    ResponseTimeConfig, ResponseTimeController, TunedConfig, TunedResponseTimeController,
};

/// Every kind [`build_admission`] knows, in a fixed order.
pub const ADMISSION_KINDS: [&str; 10] = [
    "response_time",
    "response_time_tuned",
    "multiclass",
    "degradation",
    "selective_dropper",
    "vegas",
    "gradient2",
    "aimd_limit",
    "envoy_gradient",
    "codel",
];

const RT_PARAMS: [&str; 14] = [
    "target_s",
    "percentile",
    "nreq",
    "timeout_s",
    "alpha",
    "err_i",
    "err_d",
    "adj_i",
    "adj_d",
    "c_i",
    "min_rate_per_s",
    "max_rate_per_s",
    "initial_rate_per_s",
    "bucket_depth",
];

/// The default target when a configuration gives no `target_s` (002's Figure 10 target).
pub const DEFAULT_TARGET: Duration = Duration::from_secs(1);

/// Builds the admission controller `kind` with `params`.
///
/// Kinds: see [`ADMISSION_KINDS`]. An unknown kind or parameter, or a value out of range, gives
/// an error that says what was wrong and lists the valid names.
///
/// ```
/// use std::collections::BTreeMap;
/// let mut p = BTreeMap::new();
/// p.insert("target_s".to_string(), 0.5);
/// let c = seda_control::build_admission("response_time", &p).unwrap();
/// assert_eq!(c.name(), "response_time");
/// let e = seda_control::build_admission("fifo", &p).err().unwrap();
/// assert!(e.contains("vegas"));
/// ```
pub fn build_admission(
    kind: &str,
    params: &BTreeMap<String, f64>,
) -> Result<Box<dyn AdmissionController>, String> {
    match kind {
        "response_time" => {
            let p = Params::new(kind, params, &RT_PARAMS)?;
            let cfg = rt_config(&p, ResponseTimeConfig::new(DEFAULT_TARGET))?;
            Ok(Box::new(ResponseTimeController::new(cfg)?))
        }
        "response_time_tuned" => {
            let known = [
                "target_s",
                "percentile",
                "nreq",
                "timeout_s",
                "alpha",
                "setpoint",
                "min_queue",
                "adapt_s",
                "trim",
                "drop_queued_s",
            ];
            let p = Params::new(kind, params, &known)?;
            let target = p.secs("target_s", DEFAULT_TARGET)?;
            let d = TunedConfig::new(target);
            let drop_queued = match p.secs("drop_queued_s", target)? {
                z if z.is_zero() => None,
                z => Some(z),
            };
            let cfg = TunedConfig {
                base: rt_config(&p, d.base)?,
                setpoint: p.f64("setpoint", d.setpoint),
                min_queue: p.f64("min_queue", d.min_queue),
                adapt: p.secs("adapt_s", d.adapt)?,
                trim: p.f64("trim", if d.trim { 1.0 } else { 0.0 }) != 0.0,
                drop_queued,
            };
            Ok(Box::new(TunedResponseTimeController::new(cfg)?))
        }
        "multiclass" => {
            let mut known = RT_PARAMS.to_vec();
            known.extend(["classes", "adj_lo", "lc_thresh"]);
            let names: Vec<String> = (0..10).map(|c| format!("class{c}_target_s")).collect();
            known.extend(names.iter().map(String::as_str));
            let p = Params::new(kind, params, &known)?;
            let classes = p.count("classes", 2)?;
            if !(1..=10).contains(&classes) {
                return Err(format!(
                    "parameter `classes` of `multiclass` must be in 1..=10, got {classes}"
                ));
            }
            let base = rt_config(&p, ResponseTimeConfig::new(DEFAULT_TARGET))?;
            let mut cfg = MulticlassConfig::new(base.target, classes);
            cfg.base = base;
            for (c, t) in cfg.targets.iter_mut().enumerate() {
                *t = p.secs(&names[c], *t)?;
            }
            if let Some(n) = names[classes..].iter().find(|n| p.has(n)) {
                return Err(format!("`{n}` names a class beyond `classes` = {classes}"));
            }
            cfg.adj_lo = p.f64("adj_lo", cfg.adj_lo);
            let lc = p.count("lc_thresh", cfg.lc_thresh as usize)?;
            cfg.lc_thresh = u32::try_from(lc).map_err(|_| format!("lc_thresh too large: {lc}"))?;
            Ok(Box::new(MulticlassController::new(cfg)?))
        }
        "degradation" => {
            let mut known = RT_PARAMS.to_vec();
            known.extend([
                "q_min",
                "quality_step",
                "quality_decrease",
                "reenable_admission",
            ]);
            let p = Params::new(kind, params, &known)?;
            let rt = rt_config(&p, ResponseTimeConfig::new(DEFAULT_TARGET))?;
            let d = DegradationConfig::new(rt.target);
            let cfg = DegradationConfig {
                q_min: p.f64("q_min", d.q_min),
                step: p.f64("quality_step", d.step),
                decrease: p.f64("quality_decrease", d.decrease),
                reenable_admission: p.f64("reenable_admission", 1.0) != 0.0,
                ..d
            };
            Ok(Box::new(DegradingAdmission::new(cfg, rt)?))
        }
        "selective_dropper" => {
            let p = Params::new(kind, params, &["threshold_s"])?;
            Ok(Box::new(SelectiveDropper::new(
                p.secs("threshold_s", DEFAULT_DROP_THRESHOLD)?,
            )))
        }
        "vegas" => {
            let p = Params::new(
                kind,
                params,
                &[
                    "initial_limit",
                    "max_limit",
                    "smoothing",
                    "probe_multiplier",
                ],
            )?;
            let d = VegasConfig::default();
            let cfg = VegasConfig {
                initial: p.f64("initial_limit", d.initial),
                max: p.f64("max_limit", d.max),
                smoothing: p.f64("smoothing", d.smoothing),
                probe_multiplier: p.f64("probe_multiplier", d.probe_multiplier),
            };
            Ok(Box::new(ConcurrencyLimiter::new(VegasLimit::new(cfg)?)))
        }
        "gradient2" => {
            let p = Params::new(
                kind,
                params,
                &[
                    "initial_limit",
                    "min_limit",
                    "max_limit",
                    "smoothing",
                    "rtt_tolerance",
                    "long_window",
                    "queue_size",
                ],
            )?;
            let d = Gradient2Config::default();
            let cfg = Gradient2Config {
                initial: p.f64("initial_limit", d.initial),
                min: p.f64("min_limit", d.min),
                max: p.f64("max_limit", d.max),
                smoothing: p.f64("smoothing", d.smoothing),
                rtt_tolerance: p.f64("rtt_tolerance", d.rtt_tolerance),
                long_window: p.f64("long_window", d.long_window),
                queue_size: p.f64("queue_size", d.queue_size),
            };
            Ok(Box::new(ConcurrencyLimiter::new(Gradient2Limit::new(cfg)?)))
        }
        "aimd_limit" => {
            let p = Params::new(
                kind,
                params,
                &[
                    "initial_limit",
                    "min_limit",
                    "max_limit",
                    "backoff_ratio",
                    "timeout_s",
                ],
            )?;
            let d = AimdLimitConfig::default();
            let cfg = AimdLimitConfig {
                initial: p.f64("initial_limit", d.initial),
                min: p.f64("min_limit", d.min),
                max: p.f64("max_limit", d.max),
                backoff_ratio: p.f64("backoff_ratio", d.backoff_ratio),
                timeout: p.secs("timeout_s", d.timeout)?,
            };
            Ok(Box::new(ConcurrencyLimiter::new(AimdLimit::new(cfg)?)))
        }
        "envoy_gradient" => {
            let p = Params::new(
                kind,
                params,
                &[
                    "update_interval_s",
                    "min_rtt_interval_s",
                    "min_rtt_request_count",
                    "jitter",
                    "min_concurrency",
                    "max_limit",
                    "buffer",
                    "percentile",
                ],
            )?;
            let d = EnvoyGradientConfig::default();
            let cfg = EnvoyGradientConfig {
                update_interval: p.secs("update_interval_s", d.update_interval)?,
                min_rtt_interval: p.secs("min_rtt_interval_s", d.min_rtt_interval)?,
                min_rtt_request_count: p.count("min_rtt_request_count", d.min_rtt_request_count)?,
                jitter: p.f64("jitter", d.jitter),
                min_concurrency: p.f64("min_concurrency", d.min_concurrency),
                max_limit: p.f64("max_limit", d.max_limit),
                buffer: p.f64("buffer", d.buffer),
                percentile: p.f64("percentile", d.percentile),
            };
            Ok(Box::new(ConcurrencyLimiter::new(EnvoyGradient::new(cfg)?)))
        }
        "codel" => {
            let p = Params::new(kind, params, &["target_delay_s", "interval_s"])?;
            let d = CodelConfig::default();
            let cfg = CodelConfig {
                target_delay: p.secs("target_delay_s", d.target_delay)?,
                interval: p.secs("interval_s", d.interval)?,
            };
            Ok(Box::new(Codel::new(cfg)?))
        }
        _ => Err(format!(
            "unknown admission kind `{kind}`; valid kinds: {}",
            ADMISSION_KINDS.join(", ")
        )),
    }
}

fn rt_config(p: &Params<'_>, d: ResponseTimeConfig) -> Result<ResponseTimeConfig, String> {
    let target = p.secs("target_s", d.target)?;
    Ok(ResponseTimeConfig {
        target,
        percentile: p.f64("percentile", d.percentile),
        nreq: p.count("nreq", d.nreq)?,
        timeout: p.secs("timeout_s", d.timeout)?,
        alpha: p.f64("alpha", d.alpha),
        err_i: p.f64("err_i", d.err_i),
        err_d: p.f64("err_d", d.err_d),
        adj_i: p.f64("adj_i", d.adj_i),
        adj_d: p.f64("adj_d", d.adj_d),
        c_i: p.f64("c_i", d.c_i),
        min_rate_per_s: p.f64("min_rate_per_s", d.min_rate_per_s),
        max_rate_per_s: p.f64("max_rate_per_s", d.max_rate_per_s),
        initial_rate_per_s: p.f64("initial_rate_per_s", d.initial_rate_per_s),
        bucket_depth: p.f64("bucket_depth", d.bucket_depth),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(kv: &[(&str, f64)]) -> BTreeMap<String, f64> {
        kv.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    #[test]
    fn every_kind_builds_with_defaults_and_names_itself() {
        for kind in ADMISSION_KINDS {
            let c = build_admission(kind, &BTreeMap::new()).unwrap();
            assert_eq!(c.name(), kind);
        }
    }

    #[test]
    fn unknown_kind_lists_the_valid_ones() {
        let e = build_admission("red", &BTreeMap::new()).err().unwrap();
        assert!(e.contains("unknown admission kind `red`"), "{e}");
        for kind in ADMISSION_KINDS {
            assert!(e.contains(kind), "{e}");
        }
    }

    #[test]
    fn unknown_parameter_lists_the_valid_ones() {
        let e = build_admission("vegas", &map(&[("target_s", 1.0)]))
            .err()
            .unwrap();
        assert!(
            e.contains("`target_s`") && e.contains("probe_multiplier"),
            "{e}"
        );
    }

    #[test]
    fn bad_values_are_errors_not_panics() {
        let cases: &[(&str, &[(&str, f64)])] = &[
            ("response_time", &[("target_s", -1.0)]),
            ("response_time", &[("target_s", 0.0)]),
            ("response_time", &[("nreq", 1.5)]),
            ("response_time", &[("adj_d", 0.5)]),
            ("response_time", &[("alpha", f64::NAN)]),
            (
                "response_time",
                &[("min_rate_per_s", 10.0), ("max_rate_per_s", 1.0)],
            ),
            ("multiclass", &[("classes", 0.0)]),
            ("multiclass", &[("classes", 2.0), ("class5_target_s", 1.0)]),
            ("gradient2", &[("min_limit", 0.0)]),
            ("aimd_limit", &[("backoff_ratio", 1.5)]),
            ("envoy_gradient", &[("min_rtt_request_count", 0.0)]),
            ("codel", &[("interval_s", 0.0)]),
            ("degradation", &[("q_min", 2.0)]),
            ("selective_dropper", &[("threshold_s", -0.1)]),
            ("response_time_tuned", &[("setpoint", 0.0)]),
            ("response_time_tuned", &[("adapt_s", 0.0)]),
            ("response_time_tuned", &[("min_queue", 0.5)]),
            ("response_time_tuned", &[("adj_d", 1.2)]), // an AIMD constant it does not use
        ];
        for (kind, kv) in cases {
            assert!(
                build_admission(kind, &map(kv)).is_err(),
                "{kind} {kv:?} should fail"
            );
        }
    }

    #[test]
    fn parameters_reach_the_controller() {
        let c = build_admission("response_time", &map(&[("initial_rate_per_s", 42.0)])).unwrap();
        assert_eq!(c.state()[0], ("rate_per_s", 42.0));
        let c = build_admission("multiclass", &map(&[("classes", 3.0)])).unwrap();
        assert_eq!(c.state().len(), 3);
        let mut c = build_admission("selective_dropper", &map(&[("threshold_s", 0.5)])).unwrap();
        assert!(!c.on_dequeue(Duration::ZERO, Duration::from_millis(500)));
        assert!(c.on_dequeue(Duration::ZERO, Duration::from_millis(501)));
    }
}
