//! Every pool sizer a configuration can name, in one list: the resource lever's registry,
//! beside the admission controllers' [`catalogue`](super::catalogue).
//!
//! A sizer chooses a pool's thread count while it runs. The runtime's configuration
//! (`sizer = { kind = "self_tuning" }`), the runtime's pools, the simulator and the lab name
//! sizers by the constants below and build them with [`build`], which gives a
//! [`Sizer`] they all drive the same way; the CLI's help can list
//! [`SIZERS`]. The sizers are in [`sizer`], over the controllers of
//! [`pool`](crate::ThreadPoolController) (SEDA's heuristic) and [`selftune`](crate::selftune)
//! (the self-tuning pool, hill climbing).
//!
//! Adding a sizer is its module in `sizer/` (a type implementing `Sizer` and a `build`), its
//! name constant and one [`SizerEntry`] below; nothing outside this crate changes.
//!
//! ```
//! use seda_control::catalogue::sizers::{self, SELF_TUNING};
//!
//! let entry = sizers::entry(SELF_TUNING).unwrap();
//! assert!(entry.targeted); // steered toward a throughput target
//! assert!(sizers::entry("vegas").is_none()); // an admission controller, not a sizer
//! let e = sizers::find("vegas").unwrap_err();
//! assert!(e.to_string().contains("self_tuning"));
//! ```

use std::fmt;

pub use crate::sizer::fixed::FIXED;
pub use crate::sizer::heuristic::SEDA;
pub use crate::sizer::hill_climbing::HILL_CLIMBING;
pub use crate::sizer::self_tuning::SELF_TUNING;
use crate::sizer::{self, Sizer, SizerSettings};

/// One pool sizer.
#[derive(Clone, Copy)]
#[non_exhaustive]
pub struct SizerEntry {
    /// Its name in configuration files (`sizer = { kind = NAME }`) and reports.
    pub name: &'static str,
    /// One line on what it does.
    pub about: &'static str,
    /// The paper or peer it comes from (`docs/papers.md` keys).
    pub source: &'static str,
    /// Where its controller lives in this crate (`None`: nothing to control).
    pub module: Option<&'static str>,
    /// Whether it steers toward a throughput target (set in its settings, at run time, or by
    /// global control); the others find their own size.
    pub targeted: bool,
    build: fn(&SizerSettings) -> Box<dyn Sizer>,
}

impl fmt::Debug for SizerEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SizerEntry")
            .field("name", &self.name)
            .field("targeted", &self.targeted)
            .finish_non_exhaustive()
    }
}

impl SizerEntry {
    /// Builds this sizer with `settings`.
    pub fn build(&self, settings: &SizerSettings) -> Box<dyn Sizer> {
        (self.build)(settings)
    }
}

/// Every sizer, the runtime's default first.
pub const SIZERS: [SizerEntry; 4] = [
    SizerEntry {
        name: SEDA,
        build: sizer::heuristic::build,
        about: "adds a thread while the queue stays past a threshold; idle threads retire",
        source: "SEDA01 Section 4.2 (Sandstorm's ThreadPoolController)",
        module: Some("pool::thread_pool"),
        targeted: false,
    },
    SizerEntry {
        name: FIXED,
        build: sizer::fixed::build,
        about: "the initial thread count, never changed",
        source: "the baseline of a sweep of pool sizes",
        module: Some("sizer::fixed"),
        targeted: false,
    },
    SizerEntry {
        name: SELF_TUNING,
        build: sizer::self_tuning::build,
        about: "P, PI or PD control toward a throughput target on an online ARX model",
        source: "FAIR07 Sections 4.2.2 and 4.3.4",
        module: Some("selftune::pool"),
        targeted: true,
    },
    SizerEntry {
        name: HILL_CLIMBING,
        build: sizer::hill_climbing::build,
        about: "searches for the pool size with the most completions per second",
        source: "the .NET thread pool's hill climbing",
        module: Some("selftune::hill_climbing"),
        targeted: false,
    },
];

/// The sizer called `name`, if there is one.
pub fn entry(name: &str) -> Option<&'static SizerEntry> {
    SIZERS.iter().find(|e| e.name == name)
}

/// Every sizer's name, the default first.
pub fn names() -> Vec<&'static str> {
    SIZERS.iter().map(|e| e.name).collect()
}

/// The sizer called `name`; the error lists the known ones.
pub fn find(name: &str) -> Result<&'static SizerEntry, UnknownSizer> {
    entry(name).ok_or_else(|| UnknownSizer {
        name: name.to_string(),
    })
}

/// Builds the sizer `name` with `settings`: [`find`] then [`SizerEntry::build`].
pub fn build(name: &str, settings: &SizerSettings) -> Result<Box<dyn Sizer>, UnknownSizer> {
    Ok(find(name)?.build(settings))
}

/// No sizer has that name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownSizer {
    /// The name asked for.
    pub name: String,
}

impl fmt::Display for UnknownSizer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown sizer `{}`; known sizers: {}",
            self.name,
            names().join(", ")
        )
    }
}

impl std::error::Error for UnknownSizer {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_found() {
        for (i, e) in SIZERS.iter().enumerate() {
            assert_eq!(entry(e.name).map(|f| f.name), Some(e.name));
            // Each builds a sizer that answers to its name.
            let built = e.build(&SizerSettings::new(1, 8));
            assert_eq!(built.name(), e.name);
            assert!(SIZERS[..i].iter().all(|o| o.name != e.name), "{}", e.name);
        }
        assert!(entry("p").is_none());
        let err = build("p", &SizerSettings::new(1, 8)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown sizer `p`; known sizers: seda, fixed, self_tuning, hill_climbing"
        );
    }
}
