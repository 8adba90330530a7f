//! The four criticality levels and how a request's level and cohort travel in a `u8` class.

use std::fmt;
use std::str::FromStr;

/// How much a request matters when a service must shed: GSRE's four levels, lowest first so that `Ord` puts the first cut first.
///
/// The default is [`Critical`](Self::Critical), as in GSRE: a request nobody
/// classified is assumed to be one a user waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum Level {
    /// Work whose loss nobody notices soon (batch, prefetch, speculative fills): cut first.
    Sheddable,
    /// Work that is retried or degrades gracefully when cut.
    SheddablePlus,
    /// A request a user waits for (the default).
    #[default]
    Critical,
    /// The requests whose failure is an outage (login, checkout): cut only by the inner
    /// controller's own limit, never by the criticality rules.
    CriticalPlus,
}

impl Level {
    /// Every level, lowest first.
    pub const ALL: [Level; 4] = [
        Level::Sheddable,
        Level::SheddablePlus,
        Level::Critical,
        Level::CriticalPlus,
    ];

    /// The name in headers and configuration files (`critical_plus`, `critical`,
    /// `sheddable_plus`, `sheddable`).
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Sheddable => "sheddable",
            Level::SheddablePlus => "sheddable_plus",
            Level::Critical => "critical",
            Level::CriticalPlus => "critical_plus",
        }
    }

    /// The level's position in [`Level::ALL`] (0 for sheddable).
    pub fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A criticality name that is none of the four.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseCriticalityError {
    text: String,
}

impl fmt::Display for ParseCriticalityError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown criticality {:?}: expected critical_plus, critical, sheddable_plus or \
             sheddable, optionally followed by `;cohort=N` with N below {MAX_COHORTS}",
            self.text
        )
    }
}

impl std::error::Error for ParseCriticalityError {}

impl FromStr for Level {
    type Err = ParseCriticalityError;

    /// Accepts the names of [`Level::as_str`], case-insensitively, with `-` for `_` and
    /// Google's enum spelling (`CRITICAL_PLUS`).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let norm = s.trim().to_ascii_lowercase().replace('-', "_");
        Level::ALL
            .into_iter()
            .find(|l| l.as_str() == norm)
            .ok_or_else(|| ParseCriticalityError {
                text: s.chars().take(64).collect(),
            })
    }
}

/// The most cohorts a level can be split into: a class is one byte, two bits of level and six
/// of cohort, and the cohort value `63` means "none".
pub const MAX_COHORTS: u8 = 63;

const NO_COHORT: u8 = 63;

/// A request's criticality: its [`Level`] and, optionally, its cohort within the level
/// ([`Cohorts`](super::Cohorts) derives one from a user key).
///
/// Written `critical` or `sheddable_plus;cohort=5` (the form of the
/// `x-seda-criticality` header that `seda-tower` carries downstream).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Criticality {
    /// The level.
    pub level: Level,
    /// The cohort within the level, below [`MAX_COHORTS`]; `None` when no user key was known.
    pub cohort: Option<u8>,
}

impl Criticality {
    /// `level` without a cohort.
    pub fn new(level: Level) -> Self {
        Criticality {
            level,
            cohort: None,
        }
    }

    /// The same criticality in `cohort` (values at or above [`MAX_COHORTS`] mean none).
    pub fn with_cohort(self, cohort: u8) -> Self {
        Criticality {
            cohort: (cohort < MAX_COHORTS).then_some(cohort),
            ..self
        }
    }

    /// The admission class that carries this criticality to an
    /// [`AdmissionController`](crate::AdmissionController): the level in the top two bits, the
    /// cohort (or 63 for none) in the low six. Higher classes matter more, as everywhere in
    /// `seda-control`.
    pub fn class(self) -> u8 {
        ((self.level.index() as u8) << 6) | self.cohort.unwrap_or(NO_COHORT)
    }

    /// The criticality a class made by [`class`](Self::class) carries.
    pub fn from_class(class: u8) -> Self {
        let cohort = class & 0x3f;
        Criticality {
            level: Level::ALL[usize::from(class >> 6)],
            cohort: (cohort != NO_COHORT).then_some(cohort),
        }
    }
}

impl From<Level> for Criticality {
    fn from(level: Level) -> Self {
        Criticality::new(level)
    }
}

impl fmt::Display for Criticality {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.cohort {
            Some(c) => write!(f, "{};cohort={c}", self.level),
            None => write!(f, "{}", self.level),
        }
    }
}

impl FromStr for Criticality {
    type Err = ParseCriticalityError;

    /// Parses `level` or `level;cohort=N` (N below [`MAX_COHORTS`]).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || ParseCriticalityError {
            text: s.chars().take(64).collect(),
        };
        let mut parts = s.split(';');
        let level: Level = parts.next().unwrap_or("").parse().map_err(|_| err())?;
        let mut out = Criticality::new(level);
        for part in parts {
            let (key, value) = part.split_once('=').ok_or_else(err)?;
            if key.trim() != "cohort" {
                return Err(err());
            }
            let c: u8 = value.trim().parse().map_err(|_| err())?;
            if c >= MAX_COHORTS {
                return Err(err());
            }
            out.cohort = Some(c);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_default_is_critical() {
        for l in Level::ALL {
            assert_eq!(l.as_str().parse::<Level>(), Ok(l));
        }
        assert_eq!("CRITICAL_PLUS".parse::<Level>(), Ok(Level::CriticalPlus));
        assert_eq!("sheddable-plus".parse::<Level>(), Ok(Level::SheddablePlus));
        assert_eq!(Criticality::default().level, Level::Critical);
        assert!(Level::Sheddable < Level::CriticalPlus);
    }

    #[test]
    fn cohorts_parse_and_display() {
        let c: Criticality = "sheddable;cohort=5".parse().unwrap();
        assert_eq!(c, Criticality::new(Level::Sheddable).with_cohort(5));
        assert_eq!(c.to_string(), "sheddable;cohort=5");
        assert_eq!("critical".parse::<Criticality>().unwrap().cohort, None);
    }

    #[test]
    fn bad_text_is_an_error_that_names_the_choices() {
        for bad in [
            "",
            "urgent",
            "critical;cohort=63",
            "critical;cohort=x",
            "critical;x=1",
        ] {
            let e = bad.parse::<Criticality>().unwrap_err();
            assert!(e.to_string().contains("sheddable_plus"), "{bad}: {e}");
        }
    }

    #[test]
    fn the_class_carries_level_and_cohort_and_orders_by_level() {
        for l in Level::ALL {
            for c in [None, Some(0), Some(62)] {
                let k = Criticality {
                    level: l,
                    cohort: c,
                };
                assert_eq!(Criticality::from_class(k.class()), k);
            }
        }
        let low = Criticality::new(Level::Sheddable).class();
        let high = Criticality::new(Level::CriticalPlus).with_cohort(0).class();
        assert!(low < high);
    }
}
