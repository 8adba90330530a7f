//! Admission layers outside any stage (`seda proxy`'s routes) drawn as stages, so the live
//! dashboard shows them: each layer becomes a stage fed from "outside", with its counts, its
//! requests in flight as the queue, and its controller's state. The layers keep no latency
//! histograms, so their cards show no percentiles.

use std::borrow::Cow;
use std::collections::BTreeMap;

use seda::stats::{
    ControllerSnapshot, CounterSnapshot, HistogramSummary, PeriodSnapshot, StageSnapshot,
};
use seda::{Graph, GraphEdge, GraphNode, RuntimeSnapshot};
use seda_tower::LayerStats;

/// The mode the dashboard shows for a layer.
const MODE: &str = "layer";

/// The layers as a runtime snapshot and its graph.
pub(super) fn snapshot(layers: &[(String, LayerStats)], uptime_s: f64) -> (RuntimeSnapshot, Graph) {
    let stages = layers.iter().map(|(name, s)| stage(name, s)).collect();
    let graph = Graph {
        nodes: layers
            .iter()
            .map(|(name, _)| GraphNode {
                name: name.clone(),
                mode: MODE,
                pool: None,
            })
            .collect(),
        edges: layers
            .iter()
            .map(|(name, s)| GraphEdge {
                from: "outside".into(),
                to: name.clone(),
                events: s.admitted,
            })
            .collect(),
    };
    let snapshot = RuntimeSnapshot {
        uptime_s,
        in_flight: layers.iter().map(|(_, s)| in_flight(s)).sum(),
        stages,
        pools: Vec::new(),
        global: None,
    };
    (snapshot, graph)
}

/// Admitted requests not yet answered: the controller's count when it keeps one.
fn in_flight(s: &LayerStats) -> u64 {
    s.state.iter().find(|(k, _)| *k == "inflight").map_or_else(
        || s.admitted.saturating_sub(s.completed + s.dropped),
        |(_, v)| v.max(0.0) as u64,
    )
}

fn stage(name: &str, s: &LayerStats) -> StageSnapshot {
    let rejected: BTreeMap<Cow<'static, str>, u64> = s
        .rejected
        .iter()
        .map(|(r, n)| (Cow::Borrowed(r.as_str()), *n))
        .collect();
    let rejected_total = rejected.values().sum();
    let empty = HistogramSummary {
        count: 0,
        mean_s: None,
        p50_s: None,
        p90_s: None,
        p99_s: None,
        max_s: None,
    };
    StageSnapshot {
        name: name.to_string(),
        mode: Cow::Borrowed(MODE),
        pool: None,
        queue_len: in_flight(s) as usize,
        threshold: None,
        threads: 0,
        threads_max: 0,
        threads_target: None,
        batch_size: 0,
        controller: Some(ControllerSnapshot {
            name: Cow::Borrowed(s.controller),
            state: s
                .state
                .iter()
                .map(|&(k, v)| (Cow::Borrowed(k), v))
                .collect(),
        }),
        termination: None,
        totals: PeriodSnapshot {
            duration_s: 0.0,
            counters: CounterSnapshot {
                arrivals: s.admitted + rejected_total,
                admitted: s.admitted,
                rejected_total,
                rejected,
                dropped_total: s.dropped,
                dropped: BTreeMap::from([(Cow::Borrowed("failed_or_abandoned"), s.dropped)]),
                completed: s.completed,
                terminated: 0,
                batches: s.completed,
                failed: 0,
                panics: 0,
            },
            queueing: empty.clone(),
            service: empty.clone(),
            response: empty,
        },
        period: None,
    }
}
