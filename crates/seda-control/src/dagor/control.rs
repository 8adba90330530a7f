//! One service's DAGOR agent: overload detected from queueing time, an admission level moved
//! over the histogram of the window's priorities (DAGOR18 Sections 4.1 and 4.2.3).

use std::time::Duration;

use super::priority::{MAX_BUSINESS_LEVELS, Priority};
use crate::InvalidConfig;

/// DAGOR's parameters, with the paper's values as defaults.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DagorConfig {
    /// Overloaded when the window's mean queueing time is above this (DAGOR18: 20 ms).
    pub queue_time_threshold: Duration,
    /// A window closes after this long... (DAGOR18: 1 s)
    pub window: Duration,
    /// ...or after this many requests, whichever comes first (DAGOR18: 2,000).
    pub window_requests: u32,
    /// Overloaded: admit about (1 - alpha) of the last window's admitted (DAGOR18: 5%).
    pub alpha: f64,
    /// Not overloaded: admit about (1 + beta) of them (DAGOR18: 1%).
    pub beta: f64,
    /// Business priorities in use, `0..business_levels`.
    pub business_levels: u16,
}

impl Default for DagorConfig {
    fn default() -> Self {
        DagorConfig {
            queue_time_threshold: Duration::from_millis(20),
            window: Duration::from_secs(1),
            window_requests: 2000,
            alpha: 0.05,
            beta: 0.01,
            business_levels: 1,
        }
    }
}

/// A service's admission level, moved once a window.
///
/// Every arrival is counted in a histogram by its compound priority and admitted when it is
/// not after the level. Every request that leaves a queue reports how long it waited. When a
/// window closes, the service is overloaded if the mean wait was above the threshold; the new
/// level is then the last one whose requests of the window, counted from the most important,
/// stay within (1 - alpha) x the window's admitted, else the first that reaches
/// (1 + beta) x them (one level more when the window saw too few requests past the level to
/// reach it, as when the callers, told the level, send none of them). The level is what the service tells its callers (piggybacked on its
/// responses), who drop what it would refuse before they send it ([`Priority`]'s order).
#[derive(Debug, Clone)]
pub struct Dagor {
    cfg: DagorConfig,
    level: Priority,
    lowest: Priority,
    histogram: Vec<u32>,
    arrivals: u32,
    window_start: Option<Duration>,
    waited: Duration,
    waits: u32,
    overloaded: bool,
}

impl Dagor {
    /// An agent admitting every request at first.
    ///
    /// # Errors
    ///
    /// A parameter out of range: alpha in (0, 1), beta in (0, 1], a window of at least 1 ms
    /// and 1 request, 1 to 64 business levels.
    pub fn new(cfg: DagorConfig) -> Result<Dagor, InvalidConfig> {
        if !(cfg.alpha > 0.0 && cfg.alpha < 1.0) {
            return Err(InvalidConfig::new(
                "alpha",
                format!("alpha must be in (0, 1), got {}", cfg.alpha),
            ));
        }
        if !(cfg.beta > 0.0 && cfg.beta <= 1.0) {
            return Err(InvalidConfig::new(
                "beta",
                format!("beta must be in (0, 1], got {}", cfg.beta),
            ));
        }
        if cfg.window < Duration::from_millis(1) || cfg.window_requests == 0 {
            return Err(InvalidConfig::new(
                "window",
                "the window must be at least 1 ms and 1 request",
            ));
        }
        if cfg.business_levels == 0 || cfg.business_levels > MAX_BUSINESS_LEVELS {
            return Err(InvalidConfig::new(
                "business_levels",
                format!(
                    "business_levels must be in [1, {}], got {}",
                    MAX_BUSINESS_LEVELS, cfg.business_levels
                ),
            ));
        }
        let lowest = Priority::lowest(cfg.business_levels);
        Ok(Dagor {
            cfg,
            level: lowest,
            lowest,
            histogram: vec![0; lowest.rank() as usize + 1],
            arrivals: 0,
            window_start: None,
            waited: Duration::ZERO,
            waits: 0,
            overloaded: false,
        })
    }

    /// The admission level now: requests not after it are admitted.
    pub fn level(&self) -> Priority {
        self.level
    }

    /// Whether the last closed window found the service overloaded.
    pub fn overloaded(&self) -> bool {
        self.overloaded
    }

    /// A request of `priority` arrives at `now`: whether it is admitted. A priority past the
    /// configured business levels counts as the least important.
    pub fn admit(&mut self, now: Duration, priority: Priority) -> bool {
        let start = *self.window_start.get_or_insert(now);
        if now.saturating_sub(start) >= self.cfg.window || self.arrivals >= self.cfg.window_requests
        {
            self.close_window();
            self.window_start = Some(now);
        }
        let p = priority.min(self.lowest);
        self.histogram[p.rank() as usize] += 1;
        self.arrivals += 1;
        p <= self.level
    }

    /// An admitted request waited `waited` in the service's queue before its work began.
    pub fn on_dequeue(&mut self, waited: Duration) {
        self.waited = self.waited.saturating_add(waited);
        self.waits = self.waits.saturating_add(1);
    }

    fn close_window(&mut self) {
        // DAGOR18 Section 4.1: the average queueing time of the window's requests.
        self.overloaded =
            self.waits > 0 && self.waited / self.waits > self.cfg.queue_time_threshold;
        let admitted: u64 = self.histogram[..=self.level.rank() as usize]
            .iter()
            .map(|&c| u64::from(c))
            .sum();
        if self.arrivals > 0 {
            let rank = if self.overloaded {
                let goal = admitted as f64 * (1.0 - self.cfg.alpha);
                // The last level whose cumulative count stays within the goal; the most
                // important level stays admitted.
                let mut cum = 0u64;
                let mut rank = 0;
                for (r, &c) in self.histogram.iter().enumerate() {
                    cum += u64::from(c);
                    if cum as f64 > goal {
                        break;
                    }
                    rank = r;
                }
                rank.min(self.level.rank() as usize)
            } else {
                let goal = admitted as f64 * (1.0 + self.cfg.beta);
                // The first level past the current one whose cumulative count reaches the
                // goal. None reaching it means the window saw too few requests after the
                // level to tell: the callers, told the level, stopped sending them. Then one
                // level more, not all: a jump to admit everything would let every caller
                // send everything at once, and the next window cut from there.
                let current = self.level.rank() as usize;
                let mut cum = admitted;
                let mut rank = (current + 1).min(self.lowest.rank() as usize);
                for r in current + 1..self.histogram.len() {
                    cum += u64::from(self.histogram[r]);
                    if cum as f64 >= goal {
                        rank = r;
                        break;
                    }
                }
                rank.max(current)
            };
            self.level = Priority::from_rank(rank as u32).unwrap_or(self.lowest);
        }
        self.histogram.iter_mut().for_each(|c| *c = 0);
        self.arrivals = 0;
        self.waited = Duration::ZERO;
        self.waits = 0;
    }
}
