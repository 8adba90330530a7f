//! folly's `Codel` on queueing delay (CODEL12 in `docs/papers.md`).
//!
//! Every `interval` (100 ms) the stage is judged overloaded if the minimum queueing delay seen in
//! the interval exceeded `target_delay` (5 ms). While overloaded, an event dequeued after waiting
//! longer than the slough timeout `2 x target_delay` is dropped. CoDel's sqrt schedule is not used
//! (as in folly). Admission lets everything in.

use crate::InvalidConfig;
use crate::entry::{self, Entry, Params, Role};
use std::time::Duration;

use crate::{AdmissionController, RejectReason, Time};

/// Parameters of [`Codel`] (folly defaults).
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct CodelConfig {
    /// Minimum queueing delay that marks overload (5 ms).
    pub target_delay: Duration,
    /// Judgement interval (100 ms).
    pub interval: Duration,
}

impl CodelConfig {
    /// The defaults.
    pub const DEFAULT: CodelConfig = CodelConfig {
        target_delay: Duration::from_millis(5),
        interval: Duration::from_millis(100),
    };

    /// Reads the parameters a configuration gives over the defaults.
    pub fn read(p: &mut Params<'_>) -> Self {
        let d = CodelConfig::DEFAULT;
        CodelConfig {
            target_delay: p.secs("target_delay_s", d.target_delay),
            interval: p.secs("interval_s", d.interval),
        }
    }
}

impl Default for CodelConfig {
    fn default() -> Self {
        CodelConfig::DEFAULT
    }
}

/// The name configurations give this controller (`admission = { kind = "codel" }`).
pub const CODEL: &str = "codel";

/// The catalogue entry of [`Codel`].
pub(crate) const CODEL_ENTRY: Entry = Entry {
    name: CODEL,
    about: "CoDel (5 ms target delay, 100 ms interval)",
    source: "folly's CoDel (Nichols and Jacobson)",
    role: Role::Drop,
    compared: true,
    build: |p| {
        let cfg = CodelConfig::read(p);
        Ok(Box::new(Codel::new(cfg)?))
    },
    aim: entry::no_target,
};

/// folly's CoDel.
#[derive(Debug, Clone)]
pub struct Codel {
    cfg: CodelConfig,
    interval_end: Option<Time>,
    min_delay: Duration,
    reset: bool,
    overloaded: bool,
    dropped: u64,
}

impl Codel {
    /// A CoDel with `cfg`.
    pub fn new(cfg: CodelConfig) -> Result<Self, InvalidConfig> {
        if cfg.interval.is_zero() {
            return Err(InvalidConfig::new(
                "interval_s",
                "interval_s must be greater than 0",
            ));
        }
        Ok(Codel {
            cfg,
            interval_end: None,
            min_delay: Duration::ZERO,
            reset: true,
            overloaded: false,
            dropped: 0,
        })
    }

    /// Whether the last interval judged the stage overloaded.
    pub fn overloaded(&self) -> bool {
        self.overloaded
    }

    /// folly's `Codel::overloaded(delay)`: whether to drop an event that queued for `delay`.
    pub fn should_drop(&mut self, now: Time, delay: Duration) -> bool {
        let end = *self.interval_end.get_or_insert(now + self.cfg.interval);
        if now > end {
            self.interval_end = Some(now + self.cfg.interval);
            self.overloaded = self.min_delay > self.cfg.target_delay;
            self.reset = true;
        }
        if self.reset {
            // The first event of an interval restarts the minimum and is never dropped.
            self.reset = false;
            self.min_delay = delay;
            return false;
        }
        if delay < self.min_delay {
            self.min_delay = delay;
        }
        self.overloaded && delay > self.cfg.target_delay * 2
    }
}

impl AdmissionController for Codel {
    fn name(&self) -> &'static str {
        "codel"
    }

    fn admit(&mut self, _now: Time, _class: u8) -> Result<(), RejectReason> {
        Ok(())
    }

    fn undo_admit(&mut self, _now: Time, _class: u8) {}

    fn on_dequeue(&mut self, now: Time, queued: Duration) -> bool {
        let drop = self.should_drop(now, queued);
        self.dropped += u64::from(drop);
        drop
    }

    fn on_complete(&mut self, _now: Time, _class: u8, _response: Duration, _sojourn: Duration) {}

    fn state(&self) -> Vec<(&'static str, f64)> {
        vec![
            ("overloaded", if self.overloaded { 1.0 } else { 0.0 }),
            ("min_delay_s", self.min_delay.as_secs_f64()),
            ("dropped", self.dropped as f64),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: u64) -> Duration {
        Duration::from_millis(x)
    }

    #[test]
    fn drops_only_while_the_minimum_delay_stays_above_target() {
        let mut c = Codel::new(CodelConfig::default()).unwrap();
        // First interval: every delay 20 ms, minimum 20 > 5 -> overloaded from the next one.
        for i in 0..10 {
            assert!(!c.on_dequeue(ms(i * 10), ms(20)));
        }
        assert!(
            !c.on_dequeue(ms(101), ms(20)),
            "first of an interval is never dropped"
        );
        assert!(c.overloaded());
        assert!(c.on_dequeue(ms(110), ms(20)));
        assert!(!c.on_dequeue(ms(120), ms(9)), "under the slough timeout");
        // Minimum 9 ms in this interval keeps it overloaded; then a quiet interval clears it.
        assert!(!c.on_dequeue(ms(202), ms(1)));
        assert!(c.overloaded());
        assert!(c.on_dequeue(ms(250), ms(50)));
        // The minimum of this interval was 1 ms: not overloaded any more.
        assert!(!c.on_dequeue(ms(303), ms(50)));
        assert!(!c.overloaded());
        assert!(!c.on_dequeue(ms(310), ms(50)));
    }
}
