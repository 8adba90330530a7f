//! Every terminator a configuration can name, in one list: the termination lever's registry,
//! beside the admission controllers' [`catalogue`](super::catalogue) and the pool
//! [`sizers`](super::sizers).
//!
//! A terminator chooses the running time past which a stage's (or the tower layer's) requests
//! are cut. The runtime's configuration (`terminate = { kind = "sert" }`), the tower layer, the
//! simulator and the lab name terminators by the constants below and build them with
//! [`terminate::build`](crate::terminate::build); the controllers themselves are in
//! [`terminate`](crate::terminate).
//!
//! ```
//! use seda_control::catalogue::terminators::{self, SERT};
//!
//! let entry = terminators::entry(SERT).unwrap();
//! assert!(entry.parameters.contains(&"upper_s"));
//! assert!(terminators::entry("vegas").is_none()); // an admission controller
//! ```

/// SERT06's adaptive threshold: `LB + F(p) (UB - LB)`, `p` the recent share of lost requests.
pub const SERT: &str = "sert";
/// Ours: the threshold halves while rejected, dropped and late replies pass a target share.
pub const CONGESTION: &str = "congestion";
/// A statement timeout: one threshold, never changed.
pub const FIXED: &str = "fixed";
/// A percentile of recent running times times a safety factor.
pub const PERCENTILE: &str = "percentile";

/// One terminator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct TerminatorEntry {
    /// Its name in configuration files (`terminate = { kind = NAME }`) and reports.
    pub name: &'static str,
    /// One line on what it does.
    pub about: &'static str,
    /// The parameters a configuration may give it (units in the names).
    pub parameters: &'static [&'static str],
    /// The paper or peer it comes from (`docs/papers.md` keys).
    pub source: &'static str,
    /// Where it lives in this crate.
    pub module: &'static str,
}

/// Every terminator, SERT's first.
pub const TERMINATORS: [TerminatorEntry; 4] = [
    TerminatorEntry {
        name: SERT,
        about: "LB + F(p)(UB - LB), F rising with the recent share of lost requests",
        parameters: &[
            "lower_s",
            "upper_s",
            "low_water",
            "high_water",
            "alpha",
            "window",
            "late_s",
        ],
        source: "SERT06, slide \"Threshold Controller\"",
        module: "terminate::sert",
    },
    TerminatorEntry {
        name: CONGESTION,
        about: "cuts the threshold to 30% while rejected, dropped and late replies pass target \
                (at least two of them), raises it slowly below half of it",
        parameters: &[
            "lower_s",
            "upper_s",
            "target",
            "decrease",
            "increase",
            "late_s",
            "min_congested",
        ],
        source: "ours (AIMD on the threshold, after SERT06's loss signal)",
        module: "terminate::congestion",
    },
    TerminatorEntry {
        name: FIXED,
        about: "a statement timeout: one threshold, never changed",
        parameters: &["threshold_s"],
        source: "the baseline SERT06 compares with",
        module: "terminate",
    },
    TerminatorEntry {
        name: PERCENTILE,
        about: "a percentile of recent running times x a safety factor, within bounds",
        parameters: &["quantile", "safety", "min_s", "max_s", "samples"],
        source: "the percentile timeouts of RPC stacks (a peer of SERT06's threshold)",
        module: "terminate::percentile",
    },
];

/// The terminator called `name`, if there is one.
pub fn entry(name: &str) -> Option<&'static TerminatorEntry> {
    TERMINATORS.iter().find(|e| e.name == name)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    /// Each listed parameter is one `terminate::build` reads: given alone, with a value in its
    /// range, it builds (a parameter the builder ignores would be an unknown-parameter error).
    #[test]
    fn every_listed_parameter_is_read() {
        let sample = |p: &str| match p {
            "low_water" => 0.1,
            "target" | "decrease" => 0.5,
            "high_water" | "quantile" => 0.9,
            "increase" | "safety" => 1.5,
            "window" | "samples" => 50.0,
            _ => 1.0,
        };
        for e in TERMINATORS {
            for &p in e.parameters {
                let params = BTreeMap::from([(p.to_string(), sample(p))]);
                let built = crate::terminate::build(e.name, &params);
                assert!(built.is_ok(), "{} {p}: {:?}", e.name, built.err());
            }
            let wrong = BTreeMap::from([("threshold".to_string(), 1.0)]);
            assert!(
                crate::terminate::build(e.name, &wrong).is_err(),
                "{}",
                e.name
            );
        }
    }
}
