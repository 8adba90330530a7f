//! Every pool sizer a configuration can name, in one list: the resource lever's registry,
//! beside the admission controllers' [`catalogue`](super::catalogue).
//!
//! A sizer chooses a pool's thread count while it runs. The runtime's configuration
//! (`sizer = { kind = "self_tuning" }`), the runtime's `SizerKind`, the simulator's sizers and
//! the lab name sizers by the constants below, and the CLI's help can list [`SIZERS`]. The
//! controllers themselves are in [`pool`](crate::ThreadPoolController) (SEDA's heuristic) and
//! [`selftune`](crate::selftune) (the self-tuning pool, hill climbing).
//!
//! ```
//! use seda_control::catalogue::sizers::{self, SELF_TUNING};
//!
//! let entry = sizers::entry(SELF_TUNING).unwrap();
//! assert!(entry.targeted); // steered toward a throughput target
//! assert!(sizers::entry("vegas").is_none()); // an admission controller, not a sizer
//! ```

/// SEDA's heuristic (SEDA01 Section 4.2): a thread added while the queue stays long, idle
/// threads retired. The runtime's default.
pub const SEDA: &str = "seda";
/// The initial thread count, never changed: the baseline a sweep of sizes gives.
pub const FIXED: &str = "fixed";
/// FAIR07 Section 4.3's self-tuning pool: P, PI or PD control toward a throughput target on
/// an ARX model fitted online.
pub const SELF_TUNING: &str = "self_tuning";
/// The .NET thread pool's hill climbing: a search for the most completions per second.
pub const HILL_CLIMBING: &str = "hill_climbing";

/// One pool sizer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
}

/// Every sizer, the runtime's default first.
pub const SIZERS: [SizerEntry; 4] = [
    SizerEntry {
        name: SEDA,
        about: "adds a thread while the queue stays past a threshold; idle threads retire",
        source: "SEDA01 Section 4.2 (Sandstorm's ThreadPoolController)",
        module: Some("pool::thread_pool"),
        targeted: false,
    },
    SizerEntry {
        name: FIXED,
        about: "the initial thread count, never changed",
        source: "the baseline of a sweep of pool sizes",
        module: None,
        targeted: false,
    },
    SizerEntry {
        name: SELF_TUNING,
        about: "P, PI or PD control toward a throughput target on an online ARX model",
        source: "FAIR07 Sections 4.2.2 and 4.3.4",
        module: Some("selftune::pool"),
        targeted: true,
    },
    SizerEntry {
        name: HILL_CLIMBING,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_found() {
        for (i, e) in SIZERS.iter().enumerate() {
            assert_eq!(entry(e.name), Some(e));
            assert!(SIZERS[..i].iter().all(|o| o.name != e.name), "{}", e.name);
        }
        assert_eq!(entry("p"), None);
    }
}
