//! What the `criticality` scenario's service reports (`seda serve criticality`'s
//! `GET /_criticality/stats`), one type for the service that writes it and the lab that reads
//! it back: its seda layer's counts and the criticality gate's state.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The path the service serves its layer's state on.
pub const PATH: &str = "/_criticality/stats";

/// The service's layer since it started.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CriticalityStats {
    /// Requests the layer admitted.
    pub admitted: u64,
    /// Requests it refused, for any reason.
    pub rejected: u64,
    /// The gate's state by name (`CriticalityGate`'s `state`: the `bound` in force, each
    /// level's `*_admitted`, `*_refused`, `*_in_flight`, and the inner controller's `queued`).
    pub state: BTreeMap<String, f64>,
}

impl CriticalityStats {
    /// The value named `key`, 0 if the state has none.
    pub fn get(&self, key: &str) -> f64 {
        self.state.get(key).copied().unwrap_or(0.0)
    }

    /// The requests of every level in flight together.
    pub fn levels_in_flight(&self) -> f64 {
        [
            "sheddable_in_flight",
            "sheddable_plus_in_flight",
            "critical_in_flight",
            "critical_plus_in_flight",
        ]
        .iter()
        .map(|k| self.get(k))
        .sum()
    }
}
