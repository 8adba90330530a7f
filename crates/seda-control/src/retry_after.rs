//! How long a refused client should wait before it tries again: the `Retry-After` of a 503,
//! stretched while the service refuses many more requests than it admits.
//!
//! Why: a refusal is cheap, not free. On the e-mail service at 1024 users (`seda lab run
//! mail-users`), the users who held no session retried their login after WC03's fixed wait
//! (5 s, scaled), 2,200-5,000 refusals a second against about 250 admissions; the front end's
//! share of them was 16% of the server's core (per-thread CPU from `/proc`), which is what
//! kept goodput under 0.9 x capacity. A fixed wait cannot fit every load: the many waiting
//! users are the ones who will not be served soon anyway.
//!
//! The rule: every `period`, the wait is multiplied by `sqrt(refused / (budget x admitted))`,
//! kept within `[base, max_factor x base]`, and shrinks by at most a fifth per period. With
//! clients that honour it, `N` waiting clients refused at `r = N / wait` make the next wait `N
//! / (budget x admitted)`, a fixed point whatever the wait was: refusals settle near `budget`
//! per admission, about 1% of a core when a refusal costs 1% of a request. The square root and
//! the slow shrink are for the loop's delay: the clients refused on the old wait come back only
//! over one wait, many periods, and meanwhile the refusals read low. (Halving per period, in a
//! simulation of 900 such clients, swung the wait between 2.6 and 24 x and averaged 549
//! refusals a second against 300 admissions; a fifth, 358.) The server never learns how long a
//! client really waits (the lab scales every wait down), which is why the rule uses only the
//! ratio. Clients that ignore the header see a larger number and lose nothing; a service that
//! stops refusing is back at `base` within a few seconds, and each period without any request
//! halves the wait.
//!
//! Each refusal is told a wait spread over `[wait, (1 + SPREAD) x wait]`, up to the longest
//! wait (upward: a client may keep a floor of its own, as WC03's users wait at least 5 s,
//! and a spread below it would be lost): clients refused together
//! who wait the same time come back together. In `mail-spike` the 1,617 users who arrived in
//! one second were refused in one second, came back together every 2.5 s (the scaled wait),
//! 930-1,240 refusals in one second and almost none in the next, and the service completed
//! about half as much in the seconds of each wave.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::{InvalidConfig, Time};

/// The most a period shrinks the wait by (see the module docs).
const MOST_SHRINK: f64 = 0.8;

/// A refusal is told at most `1 + SPREAD` times the wait (see the module docs).
pub const SPREAD: f64 = 0.5;

/// The golden ratio's fractional part: successive multiples of it, modulo 1, fill `[0, 1)`
/// evenly (a low-discrepancy sequence), so that any run of refusals is spread, without a
/// random source.
const GOLDEN: f64 = 0.618_033_988_749_894_9;

/// Parameters of [`RetryAfter`].
#[derive(Debug, Clone, PartialEq)]
pub struct RetryAfterConfig {
    /// The wait when refusals are few, seconds (the `Retry-After` a service would send fixed).
    pub base_s: u32,
    /// The longest wait, in units of `base_s`.
    pub max_factor: f64,
    /// Refusals per admission the wait aims at.
    pub budget: f64,
    /// How often the wait is revised.
    pub period: Duration,
}

impl RetryAfterConfig {
    /// Defaults around a `base_s` wait: at most 24 x it, one refusal per admission, revised
    /// every half second.
    pub fn new(base_s: u32) -> Self {
        RetryAfterConfig {
            base_s,
            max_factor: 24.0,
            budget: 1.0,
            period: Duration::from_millis(500),
        }
    }

    /// The longest wait it asks for, seconds.
    pub fn longest_s(&self) -> u32 {
        (f64::from(self.base_s) * self.max_factor).round() as u32
    }

    /// Checks the parameters.
    pub fn validate(&self) -> Result<(), InvalidConfig> {
        if self.base_s == 0 {
            return Err(InvalidConfig::new("base_s", "base_s must be at least 1"));
        }
        if !(self.max_factor.is_finite() && self.max_factor >= 1.0) {
            return Err(InvalidConfig::new(
                "max_factor",
                format!("max_factor must be >= 1, got {}", self.max_factor),
            ));
        }
        if !(self.budget.is_finite() && self.budget > 0.0) {
            return Err(InvalidConfig::new(
                "budget",
                format!("budget must be > 0, got {}", self.budget),
            ));
        }
        if self.period.is_zero() {
            return Err(InvalidConfig::new(
                "period",
                "period must be greater than 0",
            ));
        }
        Ok(())
    }
}

/// The `Retry-After` advisor (module docs describe it).
#[derive(Debug, Clone)]
pub struct RetryAfter {
    cfg: RetryAfterConfig,
    /// The wait in units of `base_s`.
    factor: f64,
    period_start: Option<Time>,
    admitted: u64,
    refused: u64,
    /// Refusals answered, for the spread.
    answered: u64,
}

impl RetryAfter {
    /// An advisor with `cfg`.
    pub fn new(cfg: RetryAfterConfig) -> Result<Self, InvalidConfig> {
        cfg.validate()?;
        Ok(RetryAfter {
            cfg,
            ..RetryAfter::around(1)
        })
    }

    /// An advisor with [`RetryAfterConfig::new`]'s defaults around `base_s` (at least 1).
    pub fn around(base_s: u32) -> Self {
        RetryAfter {
            cfg: RetryAfterConfig::new(base_s.max(1)),
            factor: 1.0,
            period_start: None,
            admitted: 0,
            refused: 0,
            answered: 0,
        }
    }

    /// A request was admitted at `now`.
    pub fn admitted(&mut self, now: Time) {
        self.admitted_n(now, 1);
    }

    /// `n` requests were admitted by `now`.
    pub fn admitted_n(&mut self, now: Time, n: u64) {
        self.roll(now);
        self.admitted += n;
    }

    /// A request was refused at `now`: the `Retry-After` to send it, seconds, spread over
    /// `[seconds, (1 + SPREAD) x seconds]` (see the module docs), at most the longest wait.
    pub fn refused(&mut self, now: Time) -> u32 {
        self.roll(now);
        self.refused += 1;
        // The first refusal is told the wait itself.
        let share = (self.answered as f64 * GOLDEN).fract();
        self.answered = self.answered.wrapping_add(1);
        let longest = f64::from(self.cfg.longest_s());
        (self.wait_s() * (1.0 + SPREAD * share))
            .round()
            .min(longest) as u32
    }

    /// The current wait, seconds: the least a refusal is told.
    pub fn seconds(&self) -> u32 {
        self.wait_s().round() as u32
    }

    /// The current wait, seconds, unrounded.
    fn wait_s(&self) -> f64 {
        f64::from(self.cfg.base_s) * self.factor
    }

    /// Ends the periods that are over by `now`.
    fn roll(&mut self, now: Time) {
        let start = *self.period_start.get_or_insert(now);
        let elapsed = now.saturating_sub(start);
        if elapsed < self.cfg.period {
            return;
        }
        let wanted = self.cfg.budget * self.admitted.max(1) as f64;
        let step = (self.refused as f64 / wanted).sqrt().max(MOST_SHRINK);
        // Periods with no request at all since the last one: each halves the wait.
        let idle = (elapsed.as_secs_f64() / self.cfg.period.as_secs_f64()).floor() - 1.0;
        self.factor = (self.factor * step).clamp(1.0, self.cfg.max_factor);
        self.factor = (self.factor * 0.5_f64.powf(idle.clamp(0.0, 64.0))).max(1.0);
        self.period_start = Some(now);
        self.admitted = 0;
        self.refused = 0;
    }
}

/// A [`RetryAfter`] that the threads of a server share, on its own clock: an admission costs
/// one atomic add, and the lock is taken only to refuse. A clone (a service per connection, or
/// per request under axum's `Router::layer`) is one reference count.
#[derive(Debug, Clone)]
pub struct SharedRetryAfter(Arc<Shared>);

#[derive(Debug)]
struct Shared {
    start: Instant,
    admitted: AtomicU64,
    advisor: Mutex<RetryAfter>,
    /// The advisor's [`RetryAfter::seconds`], stored by each refusal (the only call that
    /// changes it), so that reading it takes no lock.
    seconds: AtomicU32,
}

impl SharedRetryAfter {
    /// [`RetryAfter::around`] `base_s`, shared.
    pub fn around(base_s: u32) -> Self {
        SharedRetryAfter(Arc::new(Shared {
            start: Instant::now(),
            admitted: AtomicU64::new(0),
            advisor: Mutex::new(RetryAfter::around(base_s)),
            seconds: AtomicU32::new(RetryAfter::around(base_s).seconds()),
        }))
    }

    /// A request was admitted.
    pub fn admitted(&self) {
        self.0.admitted.fetch_add(1, Ordering::Relaxed);
    }

    /// A request was refused: the `Retry-After` to send it, seconds. The admissions since the
    /// last refusal count in the advisor's current period: while a service refuses, that is
    /// where they happened; after a quiet spell they outnumber the refusal, and the wait stays
    /// at the base.
    pub fn refused(&self) -> u32 {
        let s = &*self.0;
        // The advisor is plain arithmetic: a panic elsewhere leaves it usable.
        let mut advisor = s.advisor.lock().unwrap_or_else(PoisonError::into_inner);
        let now = s.start.elapsed();
        advisor.admitted_n(now, s.admitted.swap(0, Ordering::Relaxed));
        let told = advisor.refused(now);
        s.seconds.store(advisor.seconds(), Ordering::Relaxed);
        told
    }

    /// The wait it would send now, seconds (as of the last refusal: nothing else moves it).
    pub fn seconds(&self) -> u32 {
        self.0.seconds.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: fn(u64) -> Duration = Duration::from_millis;

    /// `waiting` clients, each refused whenever it comes, that honour the wait (`unit` seconds
    /// per second it says, as the lab scales it), and a service that admits `admit_per_s`
    /// others: the refusals per second over the second half of `secs`.
    fn honoured(waiting: u64, admit_per_s: u64, unit: f64, secs: u64) -> f64 {
        use std::cmp::Reverse;
        use std::collections::BinaryHeap;
        let mut r = RetryAfter::around(5);
        // Clients by the time (ms) they come back, first spread over one base wait.
        let base_ms = (5_000.0 * unit) as u64;
        let mut due: BinaryHeap<Reverse<(u64, u64)>> = (0..waiting)
            .map(|i| Reverse((i * base_ms / waiting, i)))
            .collect();
        let (mut admitted_ms, mut refused_late) = (0, 0);
        while let Some(Reverse((at, i))) = due.pop() {
            if at >= secs * 1000 {
                break;
            }
            while admitted_ms <= at {
                for _ in 0..admit_per_s / 100 {
                    r.admitted(MS(admitted_ms));
                }
                admitted_ms += 10;
            }
            let wait_s = r.refused(MS(at));
            if at >= secs * 500 {
                refused_late += 1;
            }
            due.push(Reverse((
                at + (f64::from(wait_s) * unit * 1000.0) as u64,
                i,
            )));
        }
        refused_late as f64 / (secs as f64 / 2.0)
    }

    #[test]
    fn honouring_clients_are_refused_about_once_per_admission() {
        // 900 clients waiting and 300 admissions a second, at the lab's scale (0.046 s a
        // second): at the base wait they would come back 3,900 times a second.
        let refused = honoured(900, 300, 0.046, 30);
        assert!(refused < 600.0, "{refused:.0} refusals/s");
    }

    #[test]
    fn a_service_that_refuses_few_sends_its_base_wait() {
        let mut r = RetryAfter::around(5);
        for step in 0..1000 {
            let now = MS(step * 10);
            r.admitted(now);
            if step % 4 == 0 {
                r.refused(now);
            }
        }
        assert_eq!(r.seconds(), 5);
    }

    #[test]
    fn clients_that_ignore_it_see_the_longest_wait_and_an_idle_service_the_base() {
        let mut r = RetryAfter::around(5);
        for step in 0..1000 {
            let now = MS(step * 10);
            r.admitted(now);
            for _ in 0..20 {
                r.refused(now);
            }
        }
        assert_eq!(r.seconds(), 120);
        // At the longest wait there is no more room to spread.
        assert!((0..100).all(|_| r.refused(MS(10_000)) == 120));
        // Quiet for three seconds: back at the base (spread by at most half of it).
        assert!((5..=8).contains(&r.refused(MS(13_000))));
    }

    /// Two threads share `r` for a little over two of its periods; each round admits one
    /// request and refuses `refusals`.
    fn shared_rounds(r: &SharedRetryAfter, refusals: usize) {
        let round = move |r: SharedRetryAfter| {
            let end = Instant::now() + Duration::from_millis(1100);
            while Instant::now() < end {
                r.admitted();
                for _ in 0..refusals {
                    r.refused();
                }
                std::thread::sleep(Duration::from_millis(1));
            }
        };
        let other = std::thread::spawn({
            let r = r.clone();
            move || round(r)
        });
        round(r.clone());
        other.join().expect("no panic");
    }

    #[test]
    fn a_shared_advisor_stretches_only_while_refusals_outnumber_admissions() {
        let refusing = SharedRetryAfter::around(1);
        shared_rounds(&refusing, 20);
        assert!(refusing.seconds() > 1, "{} s", refusing.seconds());
        let admitting = SharedRetryAfter::around(1);
        shared_rounds(&admitting, 0);
        for _ in 0..10 {
            admitting.admitted();
        }
        assert_eq!(admitting.refused(), 1);
    }

    /// Clients refused together are told waits spread evenly over half a wait above it: of
    /// 1,000 refused in one period at a wait of 10 s, each of 11 to 14 s is told to at least
    /// 14% of them (the rounded ends, 10 and 15, to half as many), the first 10 s.
    #[test]
    fn refusals_at_once_are_told_spread_waits() {
        let mut r = RetryAfter::around(10);
        let mut told = [0u32; 17];
        for i in 0..1000 {
            let s = r.refused(MS(0));
            if i == 0 {
                assert_eq!(s, 10);
            }
            told[s.min(16) as usize] += 1;
        }
        assert_eq!(told[..10].iter().sum::<u32>() + told[16], 0, "{told:?}");
        for (s, &n) in told.iter().enumerate().skip(11).take(4) {
            assert!((140..=260).contains(&n), "{s} s told to {n}: {told:?}");
        }
        assert!(told[10] >= 70 && told[15] >= 70, "{told:?}");
    }

    #[test]
    fn bad_parameters_are_refused() {
        let bad = [
            RetryAfterConfig {
                base_s: 0,
                ..RetryAfterConfig::new(5)
            },
            RetryAfterConfig {
                max_factor: 0.5,
                ..RetryAfterConfig::new(5)
            },
            RetryAfterConfig {
                budget: f64::NAN,
                ..RetryAfterConfig::new(5)
            },
            RetryAfterConfig {
                period: Duration::ZERO,
                ..RetryAfterConfig::new(5)
            },
        ];
        for cfg in bad {
            assert!(RetryAfter::new(cfg).is_err());
        }
    }
}
