//! A synthetic mix for services that take their service time as a request parameter.
//!
//! Each class has a probability and a service-time distribution; a request for a class draws a
//! service time and asks for it as `?{param}={microseconds}` on the target path. The spec
//! string is a comma-separated list of `probability:distribution`, where a distribution is
//! `const:D`, `exp:MEAN` or `uniform:LOW:HIGH` with durations such as `1ms`:
//!
//! ```text
//! 0.9:const:1ms,0.1:exp:20ms
//! ```

use std::time::Duration;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::{Reply, Request, Session, Workload, cumulative, sample};
use crate::LoadError;
use crate::target::parse_duration;

/// A service-time distribution.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ServiceTime {
    /// Always this long.
    Const(Duration),
    /// Exponential with this mean.
    Exp(Duration),
    /// Uniform between the two.
    Uniform(Duration, Duration),
}

impl ServiceTime {
    fn draw_us(&self, rng: &mut SmallRng) -> u64 {
        let us = |d: &Duration| d.as_secs_f64() * 1e6;
        let v = match self {
            ServiceTime::Const(d) => us(d),
            ServiceTime::Exp(m) => -us(m) * (1.0 - rng.random::<f64>()).ln(),
            ServiceTime::Uniform(a, b) => us(a) + (us(b) - us(a)) * rng.random::<f64>(),
        };
        v.round() as u64
    }
}

/// The synthetic workload.
#[derive(Debug, Clone)]
pub struct Synthetic {
    path: String,
    param: String,
    names: Vec<String>,
    times: Vec<ServiceTime>,
    cdf: Vec<f64>,
}

impl Synthetic {
    /// Parses `spec` (see the module docs); requests go to `path` with the parameter `param`.
    pub fn parse(spec: &str, path: &str, param: &str) -> Result<Synthetic, LoadError> {
        let bad = |m: String| LoadError::BadWorkload(format!("synthetic mix {spec:?}: {m}"));
        let (mut names, mut times, mut weights) = (Vec::new(), Vec::new(), Vec::new());
        for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let fields: Vec<&str> = part.split(':').collect();
            let p: f64 = fields[0]
                .parse()
                .ok()
                .filter(|p: &f64| p.is_finite() && *p > 0.0)
                .ok_or_else(|| bad(format!("{:?} is not a positive probability", fields[0])))?;
            let dur = |i: usize| -> Result<Duration, LoadError> {
                let f = fields
                    .get(i)
                    .ok_or_else(|| bad(format!("{part:?} lacks a duration")))?;
                parse_duration(f).map_err(bad)
            };
            let t = match (fields.get(1).copied(), fields.len()) {
                (Some("const"), 3) => ServiceTime::Const(dur(2)?),
                (Some("exp"), 3) => ServiceTime::Exp(dur(2)?),
                (Some("uniform"), 4) if dur(2)? <= dur(3)? => {
                    ServiceTime::Uniform(dur(2)?, dur(3)?)
                }
                _ => {
                    return Err(bad(format!(
                        "{part:?} is not P:const:D, P:exp:MEAN or P:uniform:LOW:HIGH"
                    )));
                }
            };
            names.push(part.to_string());
            times.push(t);
            weights.push(p);
        }
        if names.is_empty() {
            return Err(bad("no classes".into()));
        }
        if param.is_empty()
            || !param
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_')
        {
            return Err(bad(format!(
                "parameter name {param:?} must be alphanumeric"
            )));
        }
        Ok(Synthetic {
            path: path.into(),
            param: param.into(),
            names,
            times,
            cdf: cumulative(weights),
        })
    }
}

impl Workload for Synthetic {
    fn classes(&self) -> Vec<String> {
        self.names.clone()
    }

    fn session(&self, seed: u64) -> Box<dyn Session> {
        Box::new(SyntheticSession {
            mix: self.clone(),
            rng: SmallRng::seed_from_u64(seed),
        })
    }
}

struct SyntheticSession {
    mix: Synthetic,
    rng: SmallRng,
}

impl Session for SyntheticSession {
    fn next_request(&mut self, _last: Option<&Reply<'_>>) -> Request {
        let class = sample(&self.mix.cdf, self.rng.random());
        let us = self.mix.times[class].draw_us(&mut self.rng);
        let sep = if self.mix.path.contains('?') {
            '&'
        } else {
            '?'
        };
        Request::get(
            format!("{}{sep}{}={us}", self.mix.path, self.mix.param),
            class,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_draws() {
        let s = Synthetic::parse("0.9:const:1ms, 0.1:exp:20ms", "/svc", "service_us").unwrap();
        assert_eq!(s.classes().len(), 2);
        let mut sess = s.session(3);
        let mut const_hits = 0;
        for _ in 0..1000 {
            let r = sess.next_request(None);
            if r.class == 0 {
                assert_eq!(&*r.path, "/svc?service_us=1000");
                const_hits += 1;
            }
        }
        assert!((850..950).contains(&const_hits), "{const_hits}");
    }

    #[test]
    fn rejects_bad_specs() {
        for spec in [
            "",
            "x:const:1ms",
            "0.5:gauss:1ms",
            "0.5:const",
            "1:uniform:5ms:1ms",
            "1:exp:1parsec",
        ] {
            assert!(Synthetic::parse(spec, "/", "t").is_err(), "{spec}");
        }
        assert!(Synthetic::parse("1:const:1ms", "/", "a b").is_err());
    }
}
