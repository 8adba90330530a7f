//! Reading a controller's numeric parameters from a configuration, with typed errors.
//!
//! A controller's entry reads each parameter once, by the name the configuration file uses,
//! with its default: `p.f64("smoothing", d.smoothing)`. The reader remembers the names asked
//! for, so the list of valid names is never written a second time: whatever the map holds that
//! the entry did not ask for is an unknown parameter. A value of the wrong shape is recorded and
//! reported after the entry has read everything (the entry reads on with the default), so the
//! first error in the map's order is the one reported whatever order the entry reads in.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::CatalogueError;

/// Longest duration or largest count a parameter may give (about 31,700 years in seconds).
const MAX_VALUE: f64 = 1e12;

/// A controller's parameters, as read by its catalogue entry.
#[derive(Debug)]
pub struct Params<'a> {
    controller: &'static str,
    map: &'a BTreeMap<String, f64>,
    read: Vec<&'static str>,
    bad: Option<CatalogueError>,
}

impl<'a> Params<'a> {
    /// The parameters `map` given to `controller`.
    pub(crate) fn new(controller: &'static str, map: &'a BTreeMap<String, f64>) -> Self {
        let bad = map
            .iter()
            .find(|(_, v)| !v.is_finite())
            .map(|(k, v)| CatalogueError::BadValue {
                controller,
                param: k.clone(),
                value: *v,
                expected: "a finite number",
            });
        Params {
            controller,
            map,
            read: Vec::new(),
            bad,
        }
    }

    fn get(&mut self, name: &'static str) -> Option<f64> {
        if !self.read.contains(&name) {
            self.read.push(name);
        }
        self.map.get(name).copied().filter(|v| v.is_finite())
    }

    fn wrong(&mut self, name: &'static str, value: f64, expected: &'static str) {
        if self.bad.is_none() {
            self.bad = Some(CatalogueError::BadValue {
                controller: self.controller,
                param: name.to_string(),
                value,
                expected,
            });
        }
    }

    /// A number, `default` if absent.
    pub fn f64(&mut self, name: &'static str, default: f64) -> f64 {
        self.get(name).unwrap_or(default)
    }

    /// A switch: absent is `default`, 0 is off, anything else on.
    pub fn flag(&mut self, name: &'static str, default: bool) -> bool {
        self.get(name).map_or(default, |v| v != 0.0)
    }

    /// A duration in seconds (`name` ends in `_s`), `default` if absent.
    pub fn secs(&mut self, name: &'static str, default: Duration) -> Duration {
        match self.get(name) {
            None => default,
            Some(v) if (0.0..MAX_VALUE).contains(&v) => Duration::from_secs_f64(v),
            Some(v) => {
                self.wrong(name, v, "a number of seconds >= 0");
                default
            }
        }
    }

    /// A whole number, `default` if absent.
    pub fn count(&mut self, name: &'static str, default: usize) -> usize {
        match self.get(name) {
            None => default,
            Some(v) if v >= 0.0 && v.fract() == 0.0 && v < MAX_VALUE => v as usize,
            Some(v) => {
                self.wrong(name, v, "a whole number >= 0");
                default
            }
        }
    }

    /// A whole number that fits in 32 bits, `default` if absent.
    pub fn count_u32(&mut self, name: &'static str, default: u32) -> u32 {
        let n = self.count(name, default as usize);
        u32::try_from(n).unwrap_or_else(|_| {
            self.wrong(name, n as f64, "a whole number below 2^32");
            default
        })
    }

    /// Whether the configuration gives `name`.
    pub fn has(&self, name: &str) -> bool {
        self.map.contains_key(name)
    }

    /// The names read so far: the parameters the controller takes.
    pub(crate) fn names(&self) -> &[&'static str] {
        &self.read
    }

    /// The first problem: a value of the wrong shape, or a name the entry never read.
    pub(crate) fn finish(self) -> Result<(), CatalogueError> {
        if let Some(bad) = self.bad {
            return Err(bad);
        }
        match self.map.keys().find(|k| !self.read.contains(&k.as_str())) {
            Some(unknown) => Err(CatalogueError::UnknownParam {
                controller: self.controller,
                param: unknown.clone(),
                valid: self.read,
            }),
            None => Ok(()),
        }
    }
}
