//! The catalogue: every admission controller a configuration can name, in one list.
//!
//! Each controller's module exports its typed config (defaults, validation with
//! [`InvalidConfig`](crate::InvalidConfig)), its name as a constant (re-exported here:
//! [`VEGAS`], [`SELECTIVE_DROPPER`]...) and one [`Entry`]: its name in configuration files,
//! a one-line description, where it comes from, how its parameters are read, and how it is
//! aimed at a response-time target. The runtime's TOML (`admission = { kind = ... }`), the
//! simulator's `seda sim --controller`, the lab's `controllers` scenario and the CLI's help all
//! iterate [`catalogue`], and other crates name a controller by its constant, never a string
//! literal. Adding a controller is its module (config, name constant, `Entry`), one line in
//! `CATALOGUE` below and one re-export of its name; nothing outside this crate changes.
//! The entry types live in the leaf module `entry`, so the controllers' modules do not import
//! the catalogue that imports them.
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

pub mod sizers;
pub mod terminators;

use std::collections::BTreeMap;

pub use crate::criticality::gate::CRITICALITY;
pub use crate::drop::dropper::SELECTIVE_DROPPER;
pub use crate::entry::{Entry, Params, Role};
pub use crate::peers::aimd::AIMD_LIMIT;
pub use crate::peers::codel::CODEL;
pub use crate::peers::envoy::ENVOY_GRADIENT;
pub use crate::peers::gradient2::GRADIENT2;
pub use crate::peers::vegas::VEGAS;
pub use crate::rate::degradation::DEGRADATION;
pub use crate::rate::multiclass::MULTICLASS;
pub use crate::rate::response_time::RESPONSE_TIME;
pub use crate::rate::response_time::tuned::{RESPONSE_TIME_TUNED, RESPONSE_TIME_TUNED_TRIM};
pub use crate::rate::session::SESSION_AWARE;
use crate::{AdmissionController, CatalogueError};

/// Every controller, in the order listings and comparisons run them (ours and the seeds'
/// first; a quick comparison runs a prefix).
static CATALOGUE: &[Entry] = &[
    crate::rate::response_time::tuned::TUNED_ENTRY,
    crate::rate::response_time::ENTRY,
    crate::peers::vegas::VEGAS_ENTRY,
    crate::peers::codel::CODEL_ENTRY,
    crate::peers::gradient2::GRADIENT2_ENTRY,
    crate::peers::envoy::ENVOY_ENTRY,
    crate::peers::aimd::AIMD_ENTRY,
    crate::drop::dropper::ENTRY,
    crate::rate::response_time::tuned::TUNED_TRIM_ENTRY,
    crate::rate::multiclass::ENTRY,
    crate::rate::session::ENTRY,
    crate::criticality::gate::ENTRY,
    crate::rate::degradation::ENTRY,
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
