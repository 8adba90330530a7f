//! The request sizes of `sert-threshold`: SERT06's ranking and index-matching services as
//! holds on emulated cores (`GET /hold?us=N&cores=C`, [`crate::hold`]), with sizes drawn from
//! the slides' distributions scaled by the scenario's time scale.

use std::sync::Arc;

use seda_load::workload::{Reply, Request, Session, Workload};

/// Longest request drawn, seconds, where a service states none.
const MAX_S: f64 = 60.0;

/// A service time distribution.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Size {
    /// Exponential with this mean (ranking: 93 ms, p90 about 212 ms).
    Exponential {
        /// Mean, seconds.
        mean_s: f64,
    },
    /// Lognormal with this mean and shape, no draw above `max_s` (index matching: mean
    /// 23.6 ms, sigma 1.837, so a p90 of 46 ms; the slides' longest request, 2,732 ms, is the
    /// cap: uncapped, 0.023% of the draws were longer, up to about 5 s in a point of the
    /// full form).
    Lognormal {
        /// Mean, seconds (of the uncapped distribution).
        mean_s: f64,
        /// Standard deviation of the logarithm.
        sigma: f64,
        /// Longest draw, seconds.
        max_s: f64,
    },
}

impl Size {
    /// The mean, seconds.
    pub fn mean_s(self) -> f64 {
        match self {
            Size::Exponential { mean_s } | Size::Lognormal { mean_s, .. } => mean_s,
        }
    }

    /// The same shape with every time multiplied by `k`.
    pub fn scaled(self, k: f64) -> Size {
        match self {
            Size::Exponential { mean_s } => Size::Exponential { mean_s: mean_s * k },
            Size::Lognormal {
                mean_s,
                sigma,
                max_s,
            } => Size::Lognormal {
                mean_s: mean_s * k,
                sigma,
                max_s: max_s * k,
            },
        }
    }

    /// A draw from two uniforms in [0, 1).
    fn draw(self, u1: f64, u2: f64) -> f64 {
        let u1 = 1.0 - u1; // (0, 1]: the logarithm is finite
        let s = match self {
            Size::Exponential { mean_s } => -mean_s * u1.ln(),
            Size::Lognormal {
                mean_s,
                sigma,
                max_s,
            } => {
                // Box-Muller; mu so that the mean is mean_s.
                let z = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
                (mean_s.ln() - sigma * sigma / 2.0 + sigma * z)
                    .exp()
                    .min(max_s)
            }
        };
        s.clamp(1e-6, MAX_S)
    }
}

/// Requests of one size distribution, each a hold of its size on `cores` emulated cores.
#[derive(Debug, Clone)]
pub struct Sizes {
    /// The distribution.
    pub size: Size,
    /// The emulated cores the holds share.
    pub cores: f64,
}

impl Workload for Sizes {
    fn classes(&self) -> Vec<String> {
        vec!["request".into()]
    }

    fn session(&self, seed: u64) -> Box<dyn Session> {
        Box::new(SizesSession {
            sizes: self.clone(),
            state: seed ^ 0x2545_f491_4f6c_dd1d,
        })
    }
}

struct SizesSession {
    sizes: Sizes,
    state: u64,
}

impl SizesSession {
    /// A uniform draw in [0, 1).
    fn uniform(&mut self) -> f64 {
        crate::hold::uniform(&mut self.state)
    }
}

impl Session for SizesSession {
    fn next_request(&mut self, _last: Option<&Reply<'_>>) -> Request {
        let (u1, u2) = (self.uniform(), self.uniform());
        let us = (self.sizes.size.draw(u1, u2) * 1e6).round().max(1.0);
        let path: Arc<str> = format!("/hold?us={us}&cores={}", self.sizes.cores).into();
        Request::get(path, 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(size: Size) -> Vec<f64> {
        let mut s = SizesSession {
            sizes: Sizes { size, cores: 2.0 },
            state: 7,
        };
        let mut v: Vec<f64> = (0..200_000)
            .map(|_| {
                let (a, b) = (s.uniform(), s.uniform());
                size.draw(a, b)
            })
            .collect();
        v.sort_by(f64::total_cmp);
        v
    }

    #[test]
    fn the_draws_have_the_slides_shapes() {
        // Ranking: mean 93 ms, p90 about 212 ms.
        let r = sample(Size::Exponential { mean_s: 0.093 });
        let mean = r.iter().sum::<f64>() / r.len() as f64;
        assert!((mean - 0.093).abs() < 0.002, "{mean}");
        let p90 = r[r.len() * 9 / 10];
        assert!((p90 - 0.214).abs() < 0.01, "{p90}");
        // Index matching: p90 about 46 ms, heavy-tailed (the p99.9 far past the p90).
        let m = sample(Size::Lognormal {
            mean_s: 0.0236,
            sigma: 1.837,
            max_s: 2.732,
        });
        let p90 = m[m.len() * 9 / 10];
        assert!((p90 - 0.046).abs() < 0.004, "{p90}");
        assert!(m[m.len() * 999 / 1000] > 20.0 * p90);
        // The slides' longest request is the longest drawn, and some reach it.
        assert_eq!(m[m.len() - 1], 2.732);
        let mean = m.iter().sum::<f64>() / m.len() as f64;
        assert!((mean - 0.0231).abs() < 0.001, "{mean}");
    }

    #[test]
    fn requests_are_holds_on_the_emulated_cores() {
        let w = Sizes {
            size: Size::Exponential { mean_s: 0.01 },
            cores: 2.0,
        };
        let r = w.session(1).next_request(None);
        assert!(
            r.path.starts_with("/hold?us=") && r.path.ends_with("&cores=2"),
            "{}",
            r.path
        );
    }
}
