//! Load schedules: the number of users (closed model) or the arrival rate (open and partly-open
//! models) as a function of time: steps, ramps and spikes.
//!
//! Command-line form: comma-separated `TIME=LEVEL` (a step to LEVEL at TIME) or `TIME~LEVEL`
//! (a linear ramp from the previous point, reaching LEVEL at TIME). A spike from 3 to 1000 users
//! at 30 s and back at 90 s, and a 10 s ramp to 200 held until 60 s then a step down:
//!
//! ```text
//! 0s=3,30s=1000,90s=3
//! 0s=0,10s~200,60s=50
//! ```
//!
//! TOML form (`--schedule-file`):
//!
//! ```toml
//! [[point]]
//! at = "0s"
//! level = 3
//!
//! [[point]]
//! at = "30s"
//! level = 1000
//!
//! [[point]]
//! at = "40s"
//! level = 10
//! ramp = true   # ramps linearly from 1000 at 30 s down to 10 at 40 s
//! ```
//!
//! Before the first point the level is 0.

use std::time::Duration;

use serde::Deserialize;

use crate::LoadError;
use crate::target::parse_duration;

/// One point of a schedule.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    /// When the level is reached, from the start of the run.
    pub at: Duration,
    /// Users, or requests (sessions) per second.
    pub level: f64,
    /// Ramp linearly from the previous point instead of stepping at `at`.
    pub ramp: bool,
}

/// A piecewise-constant or piecewise-linear load level over time.
#[derive(Debug, Clone, PartialEq)]
pub struct Schedule {
    points: Vec<Point>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TomlSchedule {
    point: Vec<TomlPoint>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TomlPoint {
    at: String,
    level: f64,
    #[serde(default)]
    ramp: bool,
}

impl Schedule {
    /// A schedule from points (sorted by time, levels finite and non-negative).
    pub fn new(points: Vec<Point>) -> Result<Schedule, LoadError> {
        if points.is_empty() {
            return Err(LoadError::BadSchedule("no points".into()));
        }
        for w in points.windows(2) {
            if w[1].at < w[0].at || (w[1].at == w[0].at && w[1].ramp) {
                return Err(LoadError::BadSchedule(format!(
                    "points must be in increasing time order ({:?} after {:?})",
                    w[1].at, w[0].at
                )));
            }
        }
        if let Some(p) = points
            .iter()
            .find(|p| !(p.level.is_finite() && p.level >= 0.0))
        {
            return Err(LoadError::BadSchedule(format!(
                "level {} is not a non-negative number",
                p.level
            )));
        }
        Ok(Schedule { points })
    }

    /// The same level from the start.
    pub fn constant(level: f64) -> Result<Schedule, LoadError> {
        Schedule::new(vec![Point {
            at: Duration::ZERO,
            level,
            ramp: false,
        }])
    }

    /// A linear ramp from 0 at the start to `level` at `over`, then constant.
    pub fn ramp(level: f64, over: Duration) -> Result<Schedule, LoadError> {
        Schedule::new(vec![
            Point {
                at: Duration::ZERO,
                level: 0.0,
                ramp: false,
            },
            Point {
                at: over,
                level,
                ramp: true,
            },
        ])
    }

    /// Parses the command-line form (see the module docs).
    pub fn parse(s: &str) -> Result<Schedule, LoadError> {
        let mut points = Vec::new();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (at, level, ramp) = if let Some((a, l)) = part.split_once('=') {
                (a, l, false)
            } else if let Some((a, l)) = part.split_once('~') {
                (a, l, true)
            } else {
                return Err(LoadError::BadSchedule(format!(
                    "{part:?} is neither TIME=LEVEL (a step) nor TIME~LEVEL (a ramp)"
                )));
            };
            let at = parse_duration(at).map_err(LoadError::BadSchedule)?;
            let level = level.trim().parse::<f64>().map_err(|_| {
                LoadError::BadSchedule(format!("{level:?} in {part:?} is not a number"))
            })?;
            points.push(Point { at, level, ramp });
        }
        Schedule::new(points)
    }

    /// Parses the TOML form (see the module docs).
    pub fn from_toml(text: &str) -> Result<Schedule, LoadError> {
        let t: TomlSchedule =
            toml::from_str(text).map_err(|e| LoadError::BadSchedule(e.to_string()))?;
        let points = t
            .point
            .into_iter()
            .map(|p| {
                let at = parse_duration(&p.at).map_err(LoadError::BadSchedule)?;
                Ok(Point {
                    at,
                    level: p.level,
                    ramp: p.ramp,
                })
            })
            .collect::<Result<Vec<_>, LoadError>>()?;
        Schedule::new(points)
    }

    /// The points.
    pub fn points(&self) -> &[Point] {
        &self.points
    }

    /// The level at time `t` from the start.
    pub fn level_at(&self, t: Duration) -> f64 {
        let next = self.points.partition_point(|p| p.at <= t);
        match (
            next.checked_sub(1).map(|i| self.points[i]),
            self.points.get(next),
        ) {
            (prev, Some(n)) if n.ramp => {
                let (t0, l0) = prev.map_or((Duration::ZERO, 0.0), |p| (p.at, p.level));
                let span = (n.at - t0).as_secs_f64();
                let frac = if span > 0.0 {
                    (t - t0).as_secs_f64() / span
                } else {
                    1.0
                };
                l0 + (n.level - l0) * frac
            }
            (Some(p), _) => p.level,
            (None, _) => 0.0,
        }
    }

    /// The largest level anywhere in the schedule.
    pub fn max_level(&self) -> f64 {
        self.points.iter().map(|p| p.level).fold(0.0, f64::max)
    }

    /// The first time after `t` at which a step happens or a ramp starts or ends (the level is
    /// constant until then unless a ramp is under way).
    pub fn next_point_after(&self, t: Duration) -> Option<Duration> {
        self.points.iter().map(|p| p.at).find(|&at| at > t)
    }

    /// Whether a ramp is under way at `t`.
    pub fn ramping_at(&self, t: Duration) -> bool {
        self.points
            .get(self.points.partition_point(|p| p.at <= t))
            .is_some_and(|p| p.ramp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: fn(u64) -> Duration = Duration::from_secs;

    #[test]
    fn spike() {
        let s = Schedule::parse("0s=3, 30s=1000, 90s=3").unwrap();
        assert_eq!(s.level_at(S(0)), 3.0);
        assert_eq!(s.level_at(S(29)), 3.0);
        assert_eq!(s.level_at(S(30)), 1000.0);
        assert_eq!(s.level_at(S(89)), 1000.0);
        assert_eq!(s.level_at(S(90)), 3.0);
        assert_eq!(s.level_at(S(1000)), 3.0);
        assert_eq!(s.next_point_after(S(30)), Some(S(90)));
        assert_eq!(s.max_level(), 1000.0);
    }

    #[test]
    fn ramps_and_late_start() {
        let s = Schedule::parse("5s=0,15s~100,20s=10").unwrap();
        assert_eq!(s.level_at(S(1)), 0.0);
        assert_eq!(s.level_at(S(10)), 50.0);
        assert!(s.ramping_at(S(10)));
        assert_eq!(s.level_at(S(15)), 100.0);
        assert_eq!(s.level_at(S(20)), 10.0);
        let r = Schedule::ramp(10.0, S(10)).unwrap();
        assert_eq!(r.level_at(S(5)), 5.0);
    }

    #[test]
    fn toml_form() {
        let s = Schedule::from_toml(
            "[[point]]\nat = \"0s\"\nlevel = 3\n[[point]]\nat = \"30s\"\nlevel = 1000\nramp = true\n",
        )
        .unwrap();
        assert_eq!(s.level_at(S(15)), 501.5);
    }

    #[test]
    fn bad_schedules_are_clear_errors() {
        for bad in ["", "10s=5,5s=1", "0s:3", "0s=-1", "0s=x", "zz=3", "0s=NaN"] {
            assert!(Schedule::parse(bad).is_err(), "{bad}");
        }
        assert!(Schedule::from_toml("[[point]]\nat = 3\n").is_err());
        assert!(Schedule::from_toml("nonsense = 1").is_err());
    }
}
