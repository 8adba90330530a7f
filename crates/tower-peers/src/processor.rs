//! An emulated processor of designed capacity: `slots` requests are served at a time, each
//! holding its slot for a service time drawn from a stated distribution; the rest wait for a
//! slot in arrival order (tokio's semaphore is fair). Its capacity is `slots / mean service
//! time` by construction, whatever the machine's speed, so the lab sizes its loads from it
//! without calibrating (the same idea as the hold service's workers over their holds).
//!
//! Two things change while it runs, through its admin route: the distribution (a shift to a
//! heavier tail at the same mean) and a slowdown factor (an incident: every hold twice as
//! long, so capacity halves, as a processor at half speed or a dependency twice as slow).
//!
//! Service times are *common random numbers*: the k-th request to take a slot holds it for the
//! k-th draw of a sequence fixed by the seed, so every variant of a run is served the same
//! holds in the same order, as the load generator's seed gives every variant the same
//! arrivals. A difference in goodput between two variants is then theirs, not the draws': with
//! a fresh draw per process, two variants that both refused nothing at 0.8 x capacity read
//! 0.74 and 0.78 x capacity over the quick form's 2 s (about 400 service times; the spread of
//! their sum alone is about 5%).

use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use tokio::sync::Semaphore;

/// Shape parameter of the heavy-tailed distribution (Pareto): infinite variance below 2.
const PARETO_ALPHA: f64 = 1.5;
/// Where the Pareto draw is cut, in multiples of its scale: a hold is bounded (a real
/// service times out somewhere), and the mean stays exact (see [`Dist::heavy_scale`]).
const PARETO_CAP: f64 = 60.0;

/// Spreads consecutive draw numbers over the seed space (2^64 / the golden ratio).
const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

/// The service-time distribution, at a given mean.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dist {
    /// Exponential: the textbook processor (M/M/c at Poisson arrivals).
    Exp,
    /// Pareto (alpha 1.5) cut at 60 x its scale, scaled to the same mean: most holds are short,
    /// a few are tens of times the mean (p99 about 7 x the mean).
    Heavy,
}

impl FromStr for Dist {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "exp" => Ok(Dist::Exp),
            "heavy" => Ok(Dist::Heavy),
            _ => Err(format!("`{s}` is not a distribution: exp or heavy")),
        }
    }
}

impl Dist {
    fn code(self) -> u8 {
        match self {
            Dist::Exp => 0,
            Dist::Heavy => 1,
        }
    }

    fn of_code(c: u8) -> Dist {
        if c == 1 { Dist::Heavy } else { Dist::Exp }
    }

    /// The Pareto scale x_m whose draw, cut at `PARETO_CAP x x_m`, has mean `mean_s`:
    /// E[min(X, c)] = x_m (a - (x_m / c)^(a-1)) / (a - 1).
    fn heavy_scale(mean_s: f64) -> f64 {
        let a = PARETO_ALPHA;
        mean_s * (a - 1.0) / (a - PARETO_CAP.powf(1.0 - a))
    }

    /// One service time, seconds, at mean `mean_s`.
    pub fn draw(self, mean_s: f64, rng: &mut impl Rng) -> f64 {
        // 1 - u is in (0, 1]: no log of zero, no division by zero.
        let u = 1.0 - rng.random::<f64>();
        match self {
            Dist::Exp => -mean_s * u.ln(),
            Dist::Heavy => {
                let xm = Dist::heavy_scale(mean_s);
                (xm * u.powf(-1.0 / PARETO_ALPHA)).min(PARETO_CAP * xm)
            }
        }
    }
}

/// The processor: shared by every connection (its state is behind an `Arc`).
#[derive(Debug, Clone)]
pub struct Processor {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    slots: Semaphore,
    mean_s: f64,
    dist: AtomicU8,
    /// Slowdown x 1000 (1000: full speed).
    slowdown_milli: AtomicU32,
    /// The draws' seed, and how many slots have been taken: the k-th hold is the k-th draw.
    seed: u64,
    taken: AtomicU64,
}

impl Processor {
    /// `slots` slots, service times of mean `mean` drawn from `dist` in the sequence `seed`
    /// fixes.
    pub fn new(slots: usize, mean: Duration, dist: Dist, seed: u64) -> Processor {
        Processor {
            inner: Arc::new(Inner {
                slots: Semaphore::new(slots),
                mean_s: mean.as_secs_f64(),
                dist: AtomicU8::new(dist.code()),
                slowdown_milli: AtomicU32::new(1000),
                seed,
                taken: AtomicU64::new(0),
            }),
        }
    }

    /// Waits for a slot, holds it for one service time (times the slowdown), and returns the
    /// time held. A caller that gives up (its client went away) gives its place up too.
    pub async fn serve(&self) -> Duration {
        let Ok(_slot) = self.inner.slots.acquire().await else {
            // The semaphore is never closed; were it, nothing is served.
            return Duration::ZERO;
        };
        let hold = self.hold(self.inner.taken.fetch_add(1, Ordering::Relaxed));
        tokio::time::sleep(hold).await;
        hold
    }

    /// The `k`-th hold: the `k`-th draw of the seed's sequence, times the slowdown.
    fn hold(&self, k: u64) -> Duration {
        let slowdown = f64::from(self.inner.slowdown_milli.load(Ordering::Relaxed)) / 1000.0;
        let dist = Dist::of_code(self.inner.dist.load(Ordering::Relaxed));
        let mut draw = SmallRng::seed_from_u64(self.inner.seed ^ k.wrapping_mul(GOLDEN));
        Duration::from_secs_f64(dist.draw(self.inner.mean_s, &mut draw) * slowdown)
    }

    /// Sets the distribution from now on.
    pub fn set_dist(&self, dist: Dist) {
        self.inner.dist.store(dist.code(), Ordering::Relaxed);
    }

    /// Sets the slowdown (1: full speed, 2: every hold twice as long).
    ///
    /// # Errors
    ///
    /// A factor that is not finite or not in [1, 100].
    pub fn set_slowdown(&self, factor: f64) -> Result<(), String> {
        if !(1.0..=100.0).contains(&factor) {
            return Err(format!("slowdown {factor}: must be in [1, 100]"));
        }
        let milli = (factor * 1000.0).round() as u32;
        self.inner.slowdown_milli.store(milli, Ordering::Relaxed);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn mean_and_p99(dist: Dist) -> (f64, f64) {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
        let mut v: Vec<f64> = (0..400_000).map(|_| dist.draw(1.0, &mut rng)).collect();
        v.sort_by(f64::total_cmp);
        (
            v.iter().sum::<f64>() / v.len() as f64,
            v[v.len() * 99 / 100],
        )
    }

    #[test]
    fn both_distributions_have_the_stated_mean_and_the_heavy_one_a_longer_tail() {
        let (exp_mean, exp_p99) = mean_and_p99(Dist::Exp);
        let (heavy_mean, heavy_p99) = mean_and_p99(Dist::Heavy);
        assert!((exp_mean - 1.0).abs() < 0.02, "{exp_mean}");
        assert!((heavy_mean - 1.0).abs() < 0.03, "{heavy_mean}");
        // Exponential p99 = ln 100 = 4.6 means; the cut Pareto's about 7.
        assert!((exp_p99 - 4.6).abs() < 0.2, "{exp_p99}");
        assert!(heavy_p99 > 6.0, "{heavy_p99}");
    }

    #[test]
    fn the_same_seed_serves_the_same_holds_in_the_same_order() {
        let holds = |seed| {
            let p = Processor::new(2, Duration::from_millis(40), Dist::Exp, seed);
            (0..1000).map(|k| p.hold(k)).collect::<Vec<_>>()
        };
        let (a, b, c) = (holds(7), holds(7), holds(8));
        assert_eq!(a, b);
        assert_ne!(a, c);
        let mean = a.iter().sum::<Duration>().as_secs_f64() / 1000.0;
        assert!((0.036..0.044).contains(&mean), "{mean}");
    }

    #[test]
    fn bad_input_is_refused_with_a_reason() {
        assert!(
            "pareto"
                .parse::<Dist>()
                .unwrap_err()
                .contains("exp or heavy")
        );
        let p = Processor::new(1, Duration::from_millis(1), Dist::Exp, 1);
        assert!(p.set_slowdown(0.5).is_err());
        assert!(p.set_slowdown(f64::NAN).is_err());
        assert!(p.set_slowdown(2.0).is_ok());
    }
}
