//! Parameters of the response-time controller (WC03 Figure 4).

use crate::InvalidConfig;
use crate::entry::Params;
use std::time::Duration;

/// Parameters of the response-time controller. [`ResponseTimeConfig::new`] gives the defaults of
/// WC03 Figure 4.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct ResponseTimeConfig {
    /// Response-time target for the chosen percentile.
    pub target: Duration,
    /// Percentile tracked, in (0, 1] (0.9 in WC03).
    pub percentile: f64,
    /// Samples per controller run (`nreq`, 100).
    pub nreq: usize,
    /// Longest time between runs when traffic is slow (`timeout`, 1 s).
    pub timeout: Duration,
    /// EWMA filter constant (`alpha`, 0.7).
    pub alpha: f64,
    /// Error below which the rate is increased (`err_i`, -0.5).
    pub err_i: f64,
    /// Error above which the rate is decreased (`err_d`, 0.0).
    pub err_d: f64,
    /// Additive increase factor (`adj_i`, 2.0).
    pub adj_i: f64,
    /// Multiplicative decrease divisor (`adj_d`, 1.2).
    pub adj_d: f64,
    /// Weight on the additive increase (`c_i`, -0.1).
    pub c_i: f64,
    /// Lowest admission rate (`rate_min`, 0.05/s).
    pub min_rate_per_s: f64,
    /// Highest admission rate (`rate_max`, 2000/s).
    pub max_rate_per_s: f64,
    /// Rate at start. WC03 gives none; Sandstorm's multiclass controller starts at 100/s.
    pub initial_rate_per_s: f64,
    /// Token-bucket depth (Sandstorm's `RateLimitingPredicate` uses 10).
    pub bucket_depth: f64,
}

impl ResponseTimeConfig {
    /// The target when a configuration gives none (WC03's Figure 10 target).
    pub const DEFAULT_TARGET: Duration = Duration::from_secs(1);

    /// WC03 Figure 4's parameters for a `target` on the 90th percentile.
    pub const fn new(target: Duration) -> Self {
        ResponseTimeConfig {
            target,
            percentile: 0.9,
            nreq: 100,
            timeout: Duration::from_secs(1),
            alpha: 0.7,
            err_i: -0.5,
            err_d: 0.0,
            adj_i: 2.0,
            adj_d: 1.2,
            c_i: -0.1,
            min_rate_per_s: 0.05,
            max_rate_per_s: 2000.0,
            initial_rate_per_s: 100.0,
            bucket_depth: 10.0,
        }
    }

    /// Reads the parameters a configuration gives over `d` (the names are the fields' with
    /// their units: `target_s`, `timeout_s`...).
    pub fn read(p: &mut Params<'_>, d: ResponseTimeConfig) -> Self {
        ResponseTimeConfig {
            target: p.secs("target_s", d.target),
            percentile: p.f64("percentile", d.percentile),
            nreq: p.count("nreq", d.nreq),
            timeout: p.secs("timeout_s", d.timeout),
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
        }
    }

    /// Checks that the parameters make sense; the message names the first bad one.
    pub fn validate(&self) -> Result<(), InvalidConfig> {
        let finite = [
            ("alpha", self.alpha),
            ("err_i", self.err_i),
            ("err_d", self.err_d),
            ("adj_i", self.adj_i),
            ("adj_d", self.adj_d),
            ("c_i", self.c_i),
            ("min_rate_per_s", self.min_rate_per_s),
            ("max_rate_per_s", self.max_rate_per_s),
            ("initial_rate_per_s", self.initial_rate_per_s),
            ("bucket_depth", self.bucket_depth),
            ("percentile", self.percentile),
        ];
        if let Some((name, v)) = finite.iter().find(|(_, v)| !v.is_finite()) {
            return Err(InvalidConfig::new(
                name,
                format!("{name} must be a finite number, got {v}"),
            ));
        }
        if self.target.is_zero() {
            return Err(InvalidConfig::new(
                "target_s",
                "target_s must be greater than 0",
            ));
        }
        if !(self.percentile > 0.0 && self.percentile <= 1.0) {
            return Err(InvalidConfig::new(
                "percentile",
                format!("percentile must be in (0, 1], got {}", self.percentile),
            ));
        }
        if self.nreq == 0 {
            return Err(InvalidConfig::new("nreq", "nreq must be at least 1"));
        }
        if self.timeout.is_zero() {
            return Err(InvalidConfig::new(
                "timeout_s",
                "timeout_s must be greater than 0",
            ));
        }
        if !(0.0..1.0).contains(&self.alpha) {
            return Err(InvalidConfig::new(
                "alpha",
                format!("alpha must be in [0, 1), got {}", self.alpha),
            ));
        }
        if self.err_i > self.err_d {
            return Err(InvalidConfig::new(
                "err_i",
                format!(
                    "err_i ({}) must not exceed err_d ({})",
                    self.err_i, self.err_d
                ),
            ));
        }
        if self.adj_d <= 1.0 {
            return Err(InvalidConfig::new(
                "adj_d",
                format!("adj_d must be greater than 1, got {}", self.adj_d),
            ));
        }
        if self.adj_i < 0.0 {
            return Err(InvalidConfig::new(
                "adj_i",
                format!("adj_i must not be negative, got {}", self.adj_i),
            ));
        }
        if !(self.min_rate_per_s > 0.0 && self.min_rate_per_s <= self.max_rate_per_s) {
            return Err(InvalidConfig::new(
                "min_rate_per_s",
                format!(
                    "need 0 < min_rate_per_s <= max_rate_per_s, got {} and {}",
                    self.min_rate_per_s, self.max_rate_per_s
                ),
            ));
        }
        if self.bucket_depth < 1.0 {
            return Err(InvalidConfig::new(
                "bucket_depth",
                format!("bucket_depth must be at least 1, got {}", self.bucket_depth),
            ));
        }
        Ok(())
    }
}
