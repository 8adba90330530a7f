//! Service-time and think-time distributions, parameterised by their mean where that is natural.

use crate::rng::Rng;

/// A distribution of durations in seconds.
#[derive(Debug, Clone, PartialEq)]
pub enum Dist {
    /// Always `mean_s`.
    Deterministic {
        /// The value.
        mean_s: f64,
    },
    /// Exponential with mean `mean_s`.
    Exponential {
        /// The mean.
        mean_s: f64,
    },
    /// Lognormal with mean `mean_s` and log-space standard deviation `sigma`.
    Lognormal {
        /// The mean.
        mean_s: f64,
        /// Standard deviation of the underlying normal.
        sigma: f64,
    },
    /// Pareto with shape `alpha` (> 1) and mean `mean_s`.
    Pareto {
        /// The mean.
        mean_s: f64,
        /// The shape (tail index).
        alpha: f64,
    },
    /// A mix: component `i` is drawn with probability `weights[i] / sum(weights)` (bimodal
    /// mixes are two components).
    Mix(Vec<(f64, Dist)>),
}

impl Dist {
    /// Exponential with `mean_s`.
    pub fn exp(mean_s: f64) -> Dist {
        Dist::Exponential { mean_s }
    }

    /// A bimodal mix: `short` with probability `1 - p_long`, `long` with `p_long`.
    pub fn bimodal(p_long: f64, short: Dist, long: Dist) -> Dist {
        Dist::Mix(vec![(1.0 - p_long, short), (p_long, long)])
    }

    /// The distribution's mean.
    pub fn mean_s(&self) -> f64 {
        match self {
            Dist::Deterministic { mean_s }
            | Dist::Exponential { mean_s }
            | Dist::Lognormal { mean_s, .. }
            | Dist::Pareto { mean_s, .. } => *mean_s,
            Dist::Mix(parts) => {
                let w: f64 = parts.iter().map(|(w, _)| w).sum();
                parts.iter().map(|(p, d)| p / w * d.mean_s()).sum()
            }
        }
    }

    /// Checks the parameters.
    pub fn validate(&self) -> Result<(), String> {
        let ok_mean = |m: f64| m.is_finite() && m >= 0.0;
        match self {
            Dist::Deterministic { mean_s } | Dist::Exponential { mean_s } if ok_mean(*mean_s) => {
                Ok(())
            }
            Dist::Lognormal { mean_s, sigma }
                if ok_mean(*mean_s) && sigma.is_finite() && *sigma >= 0.0 =>
            {
                Ok(())
            }
            Dist::Pareto { mean_s, alpha }
                if ok_mean(*mean_s) && alpha.is_finite() && *alpha > 1.0 =>
            {
                Ok(())
            }
            Dist::Mix(parts) if !parts.is_empty() => {
                if parts.iter().any(|(w, _)| !(w.is_finite() && *w >= 0.0))
                    || parts.iter().map(|(w, _)| w).sum::<f64>() <= 0.0
                {
                    return Err("mix weights must be >= 0 with a positive sum".into());
                }
                parts.iter().try_for_each(|(_, d)| d.validate())
            }
            other => Err(format!("invalid distribution {other:?}")),
        }
    }

    /// One draw.
    #[inline]
    pub fn sample(&self, rng: &mut Rng) -> f64 {
        match self {
            Dist::Deterministic { mean_s } => *mean_s,
            Dist::Exponential { mean_s } => rng.exp(*mean_s),
            Dist::Lognormal { mean_s, sigma } => {
                let mu = mean_s.ln() - sigma * sigma / 2.0;
                (mu + sigma * rng.normal()).exp()
            }
            Dist::Pareto { mean_s, alpha } => {
                let xm = mean_s * (alpha - 1.0) / alpha;
                xm / rng.uniform_open0().powf(1.0 / alpha)
            }
            Dist::Mix(parts) => {
                let total: f64 = parts.iter().map(|(w, _)| w).sum();
                let mut u = rng.uniform() * total;
                for (w, d) in parts {
                    if u < *w {
                        return d.sample(rng);
                    }
                    u -= w;
                }
                parts[parts.len() - 1].1.sample(rng)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mean_of(d: &Dist, n: usize) -> f64 {
        let mut rng = Rng::new(7);
        (0..n).map(|_| d.sample(&mut rng)).sum::<f64>() / n as f64
    }

    #[test]
    fn sample_means_match_the_declared_means() {
        let cases = [
            Dist::Deterministic { mean_s: 0.3 },
            Dist::exp(0.5),
            Dist::Lognormal {
                mean_s: 0.2,
                sigma: 0.8,
            },
            Dist::Pareto {
                mean_s: 1.0,
                alpha: 3.0,
            },
            Dist::bimodal(0.1, Dist::exp(0.01), Dist::Deterministic { mean_s: 1.0 }),
        ];
        for d in &cases {
            d.validate().unwrap();
            let m = mean_of(d, 400_000);
            assert!(
                (m / d.mean_s() - 1.0).abs() < 0.03,
                "{d:?}: {m} vs {}",
                d.mean_s()
            );
        }
        assert!((cases[4].mean_s() - 0.109).abs() < 1e-12);
    }

    #[test]
    fn bad_parameters_are_rejected() {
        assert!(
            Dist::Pareto {
                mean_s: 1.0,
                alpha: 1.0
            }
            .validate()
            .is_err()
        );
        assert!(Dist::exp(-1.0).validate().is_err());
        assert!(Dist::Mix(vec![]).validate().is_err());
        assert!(Dist::Mix(vec![(0.0, Dist::exp(1.0))]).validate().is_err());
    }
}
