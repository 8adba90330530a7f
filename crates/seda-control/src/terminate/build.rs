//! Building a terminator by name from a configuration's parameters
//! (`terminate = { kind = "sert", lower_s = 0.1, upper_s = 2.0 }`), with the catalogue's typed
//! errors and its parameter reader, so a misspelt parameter is an error, not a default.

use std::collections::BTreeMap;
use std::time::Duration;

use super::Terminator;
use super::{CongestionConfig, CongestionThreshold};
use super::{FixedThreshold, PercentileConfig, PercentileTimeout, SertConfig, SertThreshold};
use crate::catalogue::terminators::{self, CONGESTION, FIXED, PERCENTILE, SERT, TERMINATORS};
use crate::entry::Params;
use crate::{CatalogueError, InvalidConfig};

/// Builds the terminator `kind` with `params`; absent parameters take the defaults
/// ([`SertConfig::new`] between 0.1 s and 10 s, [`PercentileConfig::new`] between 0.1 s and
/// 10 s, a 1 s fixed threshold).
///
/// ```
/// use std::collections::BTreeMap;
/// let p = BTreeMap::from([("upper_s".to_string(), 2.0)]);
/// let t = seda_control::terminate::build("sert", &p).unwrap();
/// assert_eq!(t.threshold(), std::time::Duration::from_secs(2));
/// assert!(seda_control::terminate::build("sert", &BTreeMap::from([("upper".into(), 2.0)])).is_err());
/// ```
pub fn build(
    kind: &str,
    params: &BTreeMap<String, f64>,
) -> Result<Box<dyn Terminator>, CatalogueError> {
    let name = terminators::entry(kind)
        .ok_or_else(|| CatalogueError::UnknownName {
            name: kind.to_string(),
            valid: TERMINATORS.iter().map(|e| e.name).collect(),
        })?
        .name;
    let mut p = Params::new(name, params);
    let built = read(name, &mut p);
    p.finish()?;
    built.map_err(|source| CatalogueError::Invalid {
        controller: name,
        source,
    })
}

fn read(kind: &str, p: &mut Params<'_>) -> Result<Box<dyn Terminator>, InvalidConfig> {
    let bounds = |p: &mut Params<'_>, lo: &'static str, hi: &'static str| {
        let lower = p.secs(lo, Duration::from_millis(100));
        let upper = p.secs(hi, Duration::from_secs(10));
        if lower > upper {
            return Err(InvalidConfig::new(
                lo,
                format!("{lo} {lower:?} is above {hi} {upper:?}"),
            ));
        }
        Ok((lower, upper))
    };
    match kind {
        FIXED => {
            let t = p.secs("threshold_s", Duration::from_secs(1));
            Ok(Box::new(FixedThreshold(t)))
        }
        CONGESTION => {
            let (lower, upper) = bounds(p, "lower_s", "upper_s")?;
            let mut c = CongestionConfig::new(lower, upper);
            c.target = p.f64("target", c.target);
            c.decrease = p.f64("decrease", c.decrease);
            c.increase = p.f64("increase", c.increase);
            c.late_after = p.secs("late_s", c.late_after);
            c.min_congested = p.count("min_congested", c.min_congested as usize) as u64;
            let bad = |name: &'static str, v: f64, want: &str| {
                Err(InvalidConfig::new(
                    name,
                    format!("{name} must be {want}, got {v}"),
                ))
            };
            if !(c.target > 0.0 && c.target < 1.0) {
                return bad("target", c.target, "in (0, 1)");
            }
            if !(c.decrease > 0.0 && c.decrease < 1.0) {
                return bad("decrease", c.decrease, "in (0, 1)");
            }
            if !(c.increase > 1.0 && c.increase.is_finite()) {
                return bad("increase", c.increase, "above 1");
            }
            Ok(Box::new(CongestionThreshold::new(c)))
        }
        PERCENTILE => {
            let d = PercentileConfig::new(Duration::ZERO, Duration::ZERO);
            let quantile = p.f64("quantile", d.quantile);
            let safety = p.f64("safety", d.safety);
            let samples = p.count("samples", d.samples);
            let (min, max) = bounds(p, "min_s", "max_s")?;
            if !(quantile > 0.0 && quantile <= 1.0) {
                return Err(InvalidConfig::new(
                    "quantile",
                    format!("quantile must be in (0, 1], got {quantile}"),
                ));
            }
            if safety <= 0.0 {
                return Err(InvalidConfig::new(
                    "safety",
                    format!("safety must be > 0, got {safety}"),
                ));
            }
            Ok(Box::new(PercentileTimeout::new(PercentileConfig {
                quantile,
                safety,
                min,
                max,
                samples: samples.max(1),
            })))
        }
        SERT => {
            let (lower, upper) = bounds(p, "lower_s", "upper_s")?;
            let mut c = SertConfig::new(lower, upper);
            c.low_water = p.f64("low_water", c.low_water);
            c.high_water = p.f64("high_water", c.high_water);
            c.alpha = p.f64("alpha", c.alpha);
            c.window = p.count("window", c.window).max(1);
            let late = p.secs("late_s", SertConfig::DEFAULT_LATE_AFTER);
            // 0: only requests not completed count as lost.
            c.late_after = (!late.is_zero()).then_some(late);
            if !(0.0 <= c.low_water && c.low_water < c.high_water && c.high_water <= 1.0) {
                return Err(InvalidConfig::new(
                    "low_water",
                    format!(
                        "need 0 <= low_water < high_water <= 1, got {} and {}",
                        c.low_water, c.high_water
                    ),
                ));
            }
            if c.alpha <= 0.0 {
                return Err(InvalidConfig::new(
                    "alpha",
                    format!("alpha must be > 0, got {}", c.alpha),
                ));
            }
            Ok(Box::new(SertThreshold::new(c)))
        }
        // `build` looked the name up in the registry: a listed name without an arm here.
        other => Err(InvalidConfig::new(
            "kind",
            format!("terminator {other} is listed but cannot be built"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_builds_with_defaults_and_names_itself() {
        for entry in TERMINATORS {
            let t = build(entry.name, &BTreeMap::new()).unwrap();
            assert_eq!(t.name(), entry.name);
        }
    }

    #[test]
    fn bad_settings_are_errors() {
        let bad = |kind: &str, k: &str, v: f64| {
            build(kind, &BTreeMap::from([(k.to_string(), v)])).is_err()
        };
        assert!(bad("sert", "lower_s", 20.0));
        assert!(bad("sert", "high_water", 0.01));
        assert!(bad("sert", "alpha", 0.0));
        assert!(bad("percentile", "quantile", 1.5));
        assert!(bad("congestion", "decrease", 1.5));
        assert!(bad("congestion", "increase", 0.9));
        assert!(bad("fixed", "threshold_s", -1.0));
        assert!(bad("fixed", "lower_s", 1.0));
        assert!(build("timeout", &BTreeMap::new()).is_err());
    }
}
