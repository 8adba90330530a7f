//! Cohorts (CINNAMON): the users of one level split into groups that are cut one at a
//! time, with the grouping re-drawn every period so the same users are not always the ones cut.

use std::time::Duration;

use crate::InvalidConfig;

/// How users are split into cohorts: `count` cohorts, re-drawn every `period`.
///
/// A user's cohort is a hash of their key (a user or session id) and of the period's index, so
/// every tier that knows the key and the wall clock computes the same cohort without
/// coordination, and a user cut in this period lands in another cohort in the next.
///
/// ```
/// use std::time::Duration;
/// use seda_control::criticality::Cohorts;
///
/// let cohorts = Cohorts::new(16, Duration::from_secs(60))?;
/// let now = Duration::from_secs(1_000_000); // time since the Unix epoch
/// let c = cohorts.of(b"user-42", now);
/// assert!(c < 16);
/// assert_eq!(c, cohorts.of(b"user-42", now + Duration::from_secs(1)));
/// # Ok::<(), seda_control::InvalidConfig>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cohorts {
    count: u8,
    period: Duration,
}

impl Cohorts {
    /// The default number of cohorts per level (CINNAMON uses 128; a class byte holds 63).
    pub const DEFAULT_COUNT: u8 = 16;
    /// The default period after which cohorts are re-drawn.
    pub const DEFAULT_PERIOD: Duration = Duration::from_secs(60);

    /// `count` cohorts re-drawn every `period`.
    ///
    /// # Errors
    /// `count` is 0 or at least [`MAX_COHORTS`](super::MAX_COHORTS), or `period` is zero.
    pub fn new(count: u8, period: Duration) -> Result<Self, InvalidConfig> {
        if count == 0 || count >= super::MAX_COHORTS {
            return Err(InvalidConfig::new(
                "cohorts",
                format!("cohorts must be in 1..{}, got {count}", super::MAX_COHORTS),
            ));
        }
        if period.is_zero() {
            return Err(InvalidConfig::new(
                "cohort_period_s",
                "the cohort period must be greater than 0",
            ));
        }
        Ok(Cohorts { count, period })
    }

    /// The number of cohorts.
    pub fn count(&self) -> u8 {
        self.count
    }

    /// The period after which cohorts are re-drawn.
    pub fn period(&self) -> Duration {
        self.period
    }

    /// The cohort of the user `key` at `now` (time since an epoch every tier shares: the Unix
    /// epoch), in `0..count`.
    pub fn of(&self, key: &[u8], now: Duration) -> u8 {
        let epoch = (now.as_nanos() / self.period.as_nanos().max(1)) as u64;
        (mix(fnv1a(key) ^ mix(epoch)) % u64::from(self.count)) as u8
    }
}

impl Default for Cohorts {
    fn default() -> Self {
        Cohorts {
            count: Self::DEFAULT_COUNT,
            period: Self::DEFAULT_PERIOD,
        }
    }
}

/// FNV-1a over the key: cheap, stable across processes and versions (unlike `std`'s
/// randomly keyed hasher, which would give each tier its own cohorts).
fn fnv1a(key: &[u8]) -> u64 {
    key.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// splitmix64's finalizer: spreads FNV's low-entropy low bits and the period index.
fn mix(mut x: u64) -> u64 {
    x ^= x >> 30;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn users_spread_over_every_cohort() {
        let c = Cohorts::default();
        let mut n = [0u32; 16];
        for u in 0..16_000 {
            n[usize::from(c.of(format!("user{u}").as_bytes(), Duration::ZERO))] += 1;
        }
        // 1,000 expected per cohort; a hash that ignored most of the key would miss this.
        assert!(n.iter().all(|&k| (800..1200).contains(&k)), "{n:?}");
    }

    #[test]
    fn a_users_cohort_changes_with_the_period() {
        let c = Cohorts::new(16, Duration::from_secs(60)).unwrap();
        let t = Duration::from_secs(600);
        let moved = (0..1000)
            .filter(|u| {
                let k = format!("user{u}");
                c.of(k.as_bytes(), t) != c.of(k.as_bytes(), t + Duration::from_secs(60))
            })
            .count();
        // A re-draw keeps a user in place with probability 1/16.
        assert!(moved > 880, "{moved}");
        // Within a period, nothing moves.
        assert_eq!(c.of(b"a", t), c.of(b"a", t + Duration::from_secs(59)));
    }

    #[test]
    fn bad_settings_are_errors() {
        assert!(Cohorts::new(0, Duration::from_secs(1)).is_err());
        assert!(Cohorts::new(63, Duration::from_secs(1)).is_err());
        assert!(Cohorts::new(4, Duration::ZERO).is_err());
    }
}
