//! How the mail service protects itself: none, one admission controller per request-type
//! stage, one shared by all, or a cap on connections.

use seda_control::catalogue;
use serde_json::{Value, json};

/// How the service protects itself.
#[derive(Debug, Clone)]
pub enum Control {
    /// No admission control: unbounded queues.
    None,
    /// One admission controller per request-type stage (WC03's per-stage control).
    PerStage {
        /// A name of `seda_control::catalogue`, e.g. `response_time_tuned`.
        kind: String,
        /// Its parameters, e.g. `target_s`.
        params: Vec<(String, f64)>,
    },
    /// One admission controller shared by all request-type stages (WC03's single-stage
    /// control, Figure 11): it filters every request whatever its type (`seda serve mail
    /// --single-admission`).
    SingleStage {
        /// A name of `seda_control::catalogue`.
        kind: String,
        /// Its parameters.
        params: Vec<(String, f64)>,
    },
    /// No admission control, but at most this many open connections (new ones get 503).
    ConnectionCap(usize),
}

impl Control {
    /// Our response-time controller toward a p90 target.
    pub fn ours(target_s: f64) -> Control {
        Control::PerStage {
            kind: catalogue::RESPONSE_TIME_TUNED.into(),
            params: vec![("target_s".into(), target_s)],
        }
    }

    /// Session-aware admission (SBAC02: established sessions before new logins, higher user
    /// classes before lower ones) toward a p90 target, one controller shared by every
    /// request-type stage so that a login is refused while any stage refuses sessions. The
    /// service gives each request its class from its own session table.
    pub fn sessions(target_s: f64) -> Control {
        Control::SingleStage {
            kind: catalogue::SESSION_AWARE.into(),
            params: vec![("target_s".into(), target_s)],
        }
    }

    /// As JSON for `result.json`.
    pub fn describe(&self) -> Value {
        let map = |params: &[(String, f64)]| -> serde_json::Map<String, Value> {
            params.iter().map(|(k, v)| (k.clone(), json!(v))).collect()
        };
        match self {
            Control::None => json!({"kind": "none"}),
            Control::PerStage { kind, params } => {
                json!({"kind": kind, "per_stage": true, "params": map(params)})
            }
            Control::SingleStage { kind, params } => {
                json!({"kind": kind, "per_stage": false, "params": map(params)})
            }
            Control::ConnectionCap(n) => json!({"kind": "connection_cap", "max_connections": n}),
        }
    }
}
