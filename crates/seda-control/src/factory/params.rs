//! Reading a kind's numeric parameters, with clear errors.

use std::collections::BTreeMap;
use std::time::Duration;

/// A kind's parameters, checked against the names it accepts.
pub(crate) struct Params<'a> {
    kind: &'a str,
    map: &'a BTreeMap<String, f64>,
}

impl<'a> Params<'a> {
    /// Fails if `map` holds a name not in `known`, listing the valid names.
    pub(crate) fn new(
        kind: &'a str,
        map: &'a BTreeMap<String, f64>,
        known: &[&str],
    ) -> Result<Self, String> {
        if let Some(bad) = map.keys().find(|k| !known.contains(&k.as_str())) {
            let valid = if known.is_empty() {
                "none".to_string()
            } else {
                known.join(", ")
            };
            return Err(format!(
                "unknown parameter `{bad}` for admission kind `{kind}`; valid parameters: {valid}"
            ));
        }
        if let Some((k, v)) = map.iter().find(|(_, v)| !v.is_finite()) {
            return Err(format!(
                "parameter `{k}` of `{kind}` must be a finite number, got {v}"
            ));
        }
        Ok(Params { kind, map })
    }

    pub(crate) fn f64(&self, name: &str, default: f64) -> f64 {
        self.map.get(name).copied().unwrap_or(default)
    }

    pub(crate) fn secs(&self, name: &str, default: Duration) -> Result<Duration, String> {
        match self.map.get(name) {
            None => Ok(default),
            Some(&v) if (0.0..1e12).contains(&v) => Ok(Duration::from_secs_f64(v)),
            Some(&v) => Err(format!(
                "parameter `{name}` of `{}` must be a number of seconds >= 0, got {v}",
                self.kind
            )),
        }
    }

    pub(crate) fn count(&self, name: &str, default: usize) -> Result<usize, String> {
        match self.map.get(name) {
            None => Ok(default),
            Some(&v) if v >= 0.0 && v.fract() == 0.0 && v < 1e12 => Ok(v as usize),
            Some(&v) => Err(format!(
                "parameter `{name}` of `{}` must be a whole number >= 0, got {v}",
                self.kind
            )),
        }
    }

    pub(crate) fn has(&self, name: &str) -> bool {
        self.map.contains_key(name)
    }
}
