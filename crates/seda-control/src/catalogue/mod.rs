//! The catalogue: every admission controller a configuration can name, in one list.
//!
//! Each controller's module exports its typed config (defaults, validation with
//! [`InvalidConfig`]) and one [`Entry`]: its name in configuration files,
//! a one-line description, where it comes from, how its parameters are read, and how it is
//! aimed at a response-time target. The runtime's TOML (`admission = { kind = ... }`), the
//! simulator's `seda sim --controller`, the lab's `controllers` scenario and the CLI's help all
//! iterate [`catalogue`], so adding a controller is its module plus one line in `CATALOGUE`
//! below.
//!
//! Pool sizers, the resource lever, have their own list in [`sizers`]; terminators, the
//! termination lever, in [`terminators`].
//!
//! ```
//! use std::collections::BTreeMap;
//! use std::time::Duration;
//!
//! let entry = seda_control::catalogue::entry("aimd_limit").unwrap();
//! // Aimed at a 0.5 s target, the AIMD limit times requests out at the target.
//! assert_eq!(entry.aimed(Duration::from_millis(500))["timeout_s"], 0.5);
//! let c = entry.build(&BTreeMap::new()).unwrap();
//! assert_eq!(c.name(), "aimd_limit");
//! let e = seda_control::catalogue::entry("fifo").err().unwrap();
//! assert!(e.to_string().contains("vegas"));
//! ```

mod params;
pub mod sizers;
pub mod terminators;

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

pub use params::Params;

use crate::{AdmissionController, CatalogueError, InvalidConfig};

/// What a controller acts on, which is also the folder its module lives in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Role {
    /// Sets an admission rate or queue bound from response times (`rate/`).
    Rate,
    /// Limits the requests in flight (the peers' concurrency limits, `peers/`).
    Limit,
    /// Drops queued requests that waited too long (`drop/`, `peers/codel.rs`).
    Drop,
}

/// Reads a controller's parameters and builds it.
pub(crate) type BuildFn =
    fn(&mut Params<'_>) -> Result<Box<dyn AdmissionController>, InvalidConfig>;

/// The parameters that aim a controller at a response-time target.
pub(crate) type AimFn = fn(Duration) -> Vec<(&'static str, f64)>;

/// One controller of the catalogue.
pub struct Entry {
    /// Its name in configuration files and on the command line.
    pub name: &'static str,
    /// One line on what it does.
    pub about: &'static str,
    /// The paper or peer it comes from.
    pub source: &'static str,
    /// What it acts on.
    pub role: Role,
    /// Whether side-by-side comparisons run it (the lab's `controllers` scenario); variants
    /// and controllers that need a differently shaped workload (classes, a degradable
    /// handler) have their own scenarios.
    pub compared: bool,
    pub(crate) build: BuildFn,
    pub(crate) aim: AimFn,
}

impl fmt::Debug for Entry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Entry")
            .field("name", &self.name)
            .field("role", &self.role)
            .finish_non_exhaustive()
    }
}

impl Entry {
    /// Builds the controller with `params` (names with units: `target_s`, `nreq`...); absent
    /// parameters take the controller's defaults.
    pub fn build(
        &self,
        params: &BTreeMap<String, f64>,
    ) -> Result<Box<dyn AdmissionController>, CatalogueError> {
        let mut p = Params::new(self.name, params);
        let built = (self.build)(&mut p);
        // Shape errors and unknown names first: a value replaced by its default may be what
        // the controller refused.
        p.finish()?;
        built.map_err(|source| CatalogueError::Invalid {
            controller: self.name,
            source,
        })
    }

    /// The parameters that aim the controller at a response-time `target` (empty for one
    /// that takes no target, such as Vegas, which finds its own).
    pub fn aimed(&self, target: Duration) -> BTreeMap<String, f64> {
        (self.aim)(target)
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect()
    }

    /// Builds the controller aimed at `target`, with `extra` parameters on top.
    pub fn build_aimed(
        &self,
        target: Duration,
        extra: &BTreeMap<String, f64>,
    ) -> Result<Box<dyn AdmissionController>, CatalogueError> {
        let mut p = self.aimed(target);
        p.extend(extra.iter().map(|(k, v)| (k.clone(), *v)));
        self.build(&p)
    }

    /// Whether [`Entry::aimed`] gives it any parameter.
    pub fn takes_target(&self) -> bool {
        !(self.aim)(Duration::from_secs(1)).is_empty()
    }

    /// The parameters it takes, in the order it reads them.
    pub fn parameters(&self) -> Vec<&'static str> {
        let empty = BTreeMap::new();
        let mut p = Params::new(self.name, &empty);
        let _ = (self.build)(&mut p);
        p.names().to_vec()
    }
}

/// Aims a controller at nothing: it takes no target.
pub(crate) fn no_target(_: Duration) -> Vec<(&'static str, f64)> {
    Vec::new()
}

/// Aims a controller by its `target_s`.
pub(crate) fn target_s(target: Duration) -> Vec<(&'static str, f64)> {
    vec![("target_s", target.as_secs_f64())]
}

/// Every controller, in the order listings and comparisons run them (ours and the seeds'
/// first; a quick comparison runs a prefix).
static CATALOGUE: &[Entry] = &[
    crate::response_time::TUNED_ENTRY,
    crate::response_time::ENTRY,
    crate::peers::VEGAS_ENTRY,
    crate::peers::CODEL_ENTRY,
    crate::peers::GRADIENT2_ENTRY,
    crate::peers::ENVOY_ENTRY,
    crate::peers::AIMD_ENTRY,
    crate::dropper::ENTRY,
    crate::response_time::TUNED_TRIM_ENTRY,
    crate::multiclass::ENTRY,
    crate::session::ENTRY,
    crate::degradation::ENTRY,
];

/// The controllers side-by-side comparisons run, in order.
pub fn compared() -> impl Iterator<Item = &'static Entry> {
    CATALOGUE.iter().filter(|e| e.compared)
}

/// Every controller a configuration can name.
pub fn catalogue() -> &'static [Entry] {
    CATALOGUE
}

/// Every controller's name, in catalogue order.
pub fn names() -> Vec<&'static str> {
    CATALOGUE.iter().map(|e| e.name).collect()
}

/// The controller called `name`; the error lists the valid names.
pub fn entry(name: &str) -> Result<&'static Entry, CatalogueError> {
    CATALOGUE
        .iter()
        .find(|e| e.name == name)
        .ok_or_else(|| CatalogueError::UnknownName {
            name: name.to_string(),
            valid: names(),
        })
}

/// Builds the controller `name` with `params`: [`entry`] then [`Entry::build`].
///
/// ```
/// use std::collections::BTreeMap;
/// let mut p = BTreeMap::new();
/// p.insert("target_s".to_string(), 0.5);
/// let c = seda_control::build_admission("response_time", &p).unwrap();
/// assert_eq!(c.name(), "response_time");
/// ```
pub fn build_admission(
    name: &str,
    params: &BTreeMap<String, f64>,
) -> Result<Box<dyn AdmissionController>, CatalogueError> {
    entry(name)?.build(params)
}

/// One line per controller (name, description, source), for help texts.
pub fn listing() -> String {
    let width = CATALOGUE.iter().map(|e| e.name.len()).max().unwrap_or(0);
    CATALOGUE
        .iter()
        .map(|e| format!("  {:width$}  {} [{}]\n", e.name, e.about, e.source))
        .collect()
}

#[cfg(test)]
mod tests;
