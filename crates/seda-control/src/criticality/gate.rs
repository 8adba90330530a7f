//! The criticality gate: an admission controller around one that bounds the requests in
//! flight, cutting the lowest criticality first and, within a level, one cohort at a time.

use std::time::Duration;

use super::inner::InFlightBound;
use super::{Cohorts, Criticality, Level};
use crate::entry::{self, Entry, Params, Role};
use crate::{
    AdmissionController, InvalidConfig, RejectReason, Time, TunedConfig,
    TunedResponseTimeController,
};

/// The name configurations give this controller (`admission = { kind = "criticality" }`).
pub const CRITICALITY: &str = "criticality";

/// The catalogue entry of [`CriticalityGate`] over our response-time controller, untrimmed
/// (as `seda-tower`'s `SedaLayer::prioritized` runs it): a trimmed bound sits at its minimum
/// while the queue never empties, which under overload it never does, and leaves the gate no
/// room to keep for the higher levels.
pub(crate) const ENTRY: Entry = Entry {
    name: CRITICALITY,
    about: "sheddable first, cohorts in turn, critical last, over ours",
    source: "GSRE criticality, CINNAMON cohorts; on our tuned controller",
    role: Role::Rate,
    compared: false,
    build: |p| {
        let inner = TunedConfig::read(p, false);
        let cfg = CriticalityConfig::read(p)?;
        Ok(Box::new(CriticalityGate::new(
            TunedResponseTimeController::new(inner)?,
            cfg,
        )?))
    },
    aim: entry::target_s,
};

/// Parameters of [`CriticalityGate`].
///
/// Each level below critical-plus has a band, as fractions of the inner controller's bound:
/// while the requests in flight are below the band's `from`, the level is admitted whole;
/// from `from` to `to` its cohorts are cut one after another (cohort 0 at `from`, the last at
/// `to`); above `to` the whole level is cut. A request without a cohort is cut in the middle
/// of its band. Critical-plus has no band: only the inner controller refuses it.
///
/// A band applies only while a higher level is arriving (one arrived within `active`):
/// the room it keeps is for those; with no one to keep it for, the level may fill the whole
/// inner bound, and a service whose requests all have one level sees only the inner controller.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct CriticalityConfig {
    /// The cohorts per level the edge draws (their count; the period does not matter here).
    pub cohorts: u8,
    /// The bands of sheddable, sheddable-plus and critical, lowest first: `(from, to)`.
    pub bands: [(f64, f64); 3],
    /// Never cut while fewer than this many requests are in flight (0 by default). A bound
    /// the inner controller set from a few departures of a quiet service is small, and its
    /// fractions may turn lower levels away from a service with room for them; a floor keeps
    /// them. It must stay well below the bound the service runs at under load, or it leaves no
    /// room to keep: at the tuned controller's minimum queue (10) as the floor, a service whose
    /// bound sat at that minimum cut no level at all, and the critical requests were refused
    /// as often as the others (30% served of each at 3 x capacity).
    pub floor: f64,
    /// How long a level counts as arriving after its last request
    /// ([`DEFAULT_ACTIVE`](Self::DEFAULT_ACTIVE)).
    pub active: Duration,
}

impl CriticalityConfig {
    /// The default [`active`](Self::active): long enough to span the gaps between requests of
    /// a level that sends a few a second, short enough that room is not kept long for a level
    /// that stopped.
    pub const DEFAULT_ACTIVE: Duration = Duration::from_secs(1);
    /// Sheddable from 0.3 to 0.5 of the bound, sheddable-plus from 0.5 to 0.7, critical from
    /// 0.85 to 0.95.
    ///
    /// Why a gap between 0.7 and 0.85: when the lower levels ask for more than the bound,
    /// the requests in flight sit at the fraction where the marginal cohort is cut; the gap
    /// above it is the room critical requests burst into without being cut themselves.
    /// Critical traffic arriving in a burst pushes the requests in flight up, which shuts the
    /// lower levels out, which drains them, so the gap refills within one response time. The
    /// cost falls only on a mix: while critical requests arrive, the lower levels together
    /// fill at most 0.7 of the bound (a response-time controller inside, ours, answers by
    /// raising its bound, since the response times it sees are short).
    pub const DEFAULT_BANDS: [(f64, f64); 3] = [(0.3, 0.5), (0.5, 0.7), (0.85, 0.95)];
    /// The default [`floor`](Self::floor): none.
    pub const DEFAULT_FLOOR: f64 = 0.0;

    /// Reads `cohorts`, `sheddable_from`, `sheddable_to`, `sheddable_plus_from`,
    /// `sheddable_plus_to`, `critical_from`, `critical_to`, `floor` and `active_s`.
    pub fn read(p: &mut Params<'_>) -> Result<Self, InvalidConfig> {
        let d = CriticalityConfig::default();
        let cohorts = p.count("cohorts", usize::from(d.cohorts));
        let cfg = CriticalityConfig {
            cohorts: u8::try_from(cohorts).unwrap_or(u8::MAX),
            bands: [
                (
                    p.f64("sheddable_from", d.bands[0].0),
                    p.f64("sheddable_to", d.bands[0].1),
                ),
                (
                    p.f64("sheddable_plus_from", d.bands[1].0),
                    p.f64("sheddable_plus_to", d.bands[1].1),
                ),
                (
                    p.f64("critical_from", d.bands[2].0),
                    p.f64("critical_to", d.bands[2].1),
                ),
            ],
            floor: p.f64("floor", d.floor),
            active: p.secs("active_s", d.active),
        };
        cfg.validate()?;
        Ok(cfg)
    }

    /// Checks the parameters: cohorts as [`Cohorts::new`] takes them, every band inside
    /// `[0, 1]` with `from <= to`, and no band starting below the one under it.
    pub fn validate(&self) -> Result<(), InvalidConfig> {
        Cohorts::new(self.cohorts, Duration::from_secs(1))?;
        let mut prev = 0.0;
        for ((from, to), level) in self.bands.iter().zip(Level::ALL) {
            if !(0.0..=1.0).contains(from) || !(0.0..=1.0).contains(to) || from > to {
                return Err(InvalidConfig::new(
                    "bands",
                    format!("{level}'s band must satisfy 0 <= from <= to <= 1, got ({from}, {to})"),
                ));
            }
            if *from < prev {
                return Err(InvalidConfig::new(
                    "bands",
                    format!("{level}'s band starts at {from}, below the band under it ({prev})"),
                ));
            }
            prev = *from;
        }
        InvalidConfig::non_negative("floor", self.floor)?;
        InvalidConfig::positive("active_s", self.active)
    }

    /// The share of the bound in use at which a request of `c` is cut (above 1 for
    /// critical-plus: never by the gate).
    pub fn cut_at(&self, c: Criticality) -> f64 {
        let Some(&(from, to)) = self.bands.get(c.level.index()) else {
            return f64::INFINITY;
        };
        let rank = match c.cohort {
            None => 0.5,
            Some(_) if self.cohorts <= 1 => 1.0,
            Some(k) => f64::from(k.min(self.cohorts - 1)) / f64::from(self.cohorts - 1),
        };
        from + (to - from) * rank
    }
}

impl Default for CriticalityConfig {
    fn default() -> Self {
        CriticalityConfig {
            cohorts: Cohorts::DEFAULT_COUNT,
            bands: Self::DEFAULT_BANDS,
            floor: Self::DEFAULT_FLOOR,
            active: Self::DEFAULT_ACTIVE,
        }
    }
}

/// Per-level counts, for stats.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LevelCounts {
    /// Requests admitted.
    pub admitted: u64,
    /// Requests refused, by the gate or by the inner controller.
    pub refused: u64,
    /// Admitted requests not yet finished.
    pub in_flight: u64,
}

/// Sheds by criticality in front of a controller that bounds the requests in flight.
///
/// A request's class is a [`Criticality::class`]: its level and cohort. The gate reads the
/// inner controller's pressure as the share of its bound in use (requests in flight over
/// [`InFlightBound::bound`]) and refuses a request whose level's band says that share is
/// too high for its cohort ([`CriticalityConfig`]), with [`RejectReason::Class`]. What it
/// admits is then asked of the inner controller, with the level's index (0 for sheddable) as
/// the class; so every admission passes the inner bound and no level, and no sum of levels,
/// ever has more in flight than the bound (the bug of Netflix concurrency-limits#234, where
/// partitions with their own counters together exceeded the global limit, NETFLIX-PRIO).
///
/// Why in-flight share and not the inner controller's refusals (DAGOR18 moves an admission
/// level when the queueing time passes 20 ms): refusals by the inner controller land on
/// whoever arrives, critical or not; a level moved by them cuts the critical requests first
/// refused before it moves. Reading the share in use cuts the lower levels while there is
/// still room, so the inner controller rarely refuses at all.
#[derive(Debug, Clone)]
pub struct CriticalityGate<C> {
    inner: C,
    cfg: CriticalityConfig,
    levels: [LevelCounts; 4],
    /// When each level last arrived.
    seen: [Option<Time>; 4],
    last_bound: f64,
}

impl<C: InFlightBound> CriticalityGate<C> {
    /// The gate around `inner`.
    ///
    /// # Errors
    /// `cfg` does not validate.
    pub fn new(inner: C, cfg: CriticalityConfig) -> Result<Self, InvalidConfig> {
        cfg.validate()?;
        Ok(CriticalityGate {
            inner,
            cfg,
            levels: [LevelCounts::default(); 4],
            seen: [None; 4],
            last_bound: 0.0,
        })
    }

    /// The wrapped controller.
    pub fn inner(&self) -> &C {
        &self.inner
    }

    /// The counts of `level`.
    pub fn counts(&self, level: Level) -> LevelCounts {
        self.levels[level.index()]
    }

    /// Whether a level above `level` arrived within `active` of `now`.
    fn higher_arriving(&self, level: Level, now: Time) -> bool {
        self.seen[level.index() + 1..]
            .iter()
            .flatten()
            .any(|&t| now.saturating_sub(t) < self.cfg.active)
    }

    fn finished(&mut self, class: u8) {
        let l = &mut self.levels[Criticality::from_class(class).level.index()];
        l.in_flight = l.in_flight.saturating_sub(1);
    }
}

impl<C: InFlightBound> AdmissionController for CriticalityGate<C> {
    fn name(&self) -> &'static str {
        "criticality"
    }

    fn admit(&mut self, now: Time, class: u8) -> Result<(), RejectReason> {
        let crit = Criticality::from_class(class);
        self.seen[crit.level.index()] = Some(now);
        let bound = self.inner.bound(now);
        self.last_bound = bound;
        let in_flight = self.inner.in_flight();
        let room = (self.cfg.cut_at(crit) * bound).max(self.cfg.floor);
        if in_flight >= room && self.higher_arriving(crit.level, now) {
            self.levels[crit.level.index()].refused += 1;
            self.inner.note_refused();
            return Err(RejectReason::Class);
        }
        let verdict = self.inner.admit(now, crit.level.index() as u8);
        let level = &mut self.levels[crit.level.index()];
        match verdict {
            Ok(()) => {
                level.admitted += 1;
                level.in_flight += 1;
                Ok(())
            }
            Err(e) => {
                level.refused += 1;
                Err(e)
            }
        }
    }

    fn undo_admit(&mut self, now: Time, class: u8) {
        let l = &mut self.levels[Criticality::from_class(class).level.index()];
        l.admitted = l.admitted.saturating_sub(1);
        self.finished(class);
        self.inner
            .undo_admit(now, Criticality::from_class(class).level.index() as u8);
    }

    fn on_dequeue(&mut self, now: Time, queued: Duration) -> bool {
        self.inner.on_dequeue(now, queued)
    }

    fn on_served(&mut self, now: Time, class: u8, beyond_wait: Duration) {
        let level = Criticality::from_class(class).level.index() as u8;
        self.inner.on_served(now, level, beyond_wait);
    }

    fn on_complete(&mut self, now: Time, class: u8, response: Duration, sojourn: Duration) {
        self.finished(class);
        let level = Criticality::from_class(class).level.index() as u8;
        self.inner.on_complete(now, level, response, sojourn);
    }

    fn on_drop(&mut self, now: Time, class: u8) {
        self.finished(class);
        let level = Criticality::from_class(class).level.index() as u8;
        self.inner.on_drop(now, level);
    }

    fn tick(&mut self, now: Time) {
        self.inner.tick(now);
    }

    fn state(&self) -> Vec<(&'static str, f64)> {
        const NAMES: [[&str; 3]; 4] = [
            [
                "sheddable_admitted",
                "sheddable_refused",
                "sheddable_in_flight",
            ],
            [
                "sheddable_plus_admitted",
                "sheddable_plus_refused",
                "sheddable_plus_in_flight",
            ],
            [
                "critical_admitted",
                "critical_refused",
                "critical_in_flight",
            ],
            [
                "critical_plus_admitted",
                "critical_plus_refused",
                "critical_plus_in_flight",
            ],
        ];
        let mut v = self.inner.state();
        v.push(("bound", self.last_bound));
        for (l, [a, r, f]) in self.levels.iter().zip(NAMES) {
            v.extend([
                (a, l.admitted as f64),
                (r, l.refused as f64),
                (f, l.in_flight as f64),
            ]);
        }
        v
    }

    fn knob(&self, name: &str) -> Option<crate::KnobCell> {
        self.inner.knob(name)
    }
}
