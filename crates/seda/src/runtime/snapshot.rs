//! What the runtime reports: a snapshot of every stage and pool, and the stage graph.

use serde::{Deserialize, Serialize};

use super::Runtime;
use super::shutdown::{approximate_in_flight, in_flight};
use crate::global::GlobalSnapshot;
use crate::graph::{Graph, GraphEdge, GraphNode};
use crate::sizer::SizerState;
use crate::stats::{EDGE_SOURCES, StageHistograms, StageSnapshot};

/// A snapshot of every stage and pool.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RuntimeSnapshot {
    /// Seconds since the runtime started.
    pub uptime_s: f64,
    /// Events admitted somewhere and not yet handled or dropped.
    pub in_flight: u64,
    /// Stages, in the order they were added.
    pub stages: Vec<StageSnapshot>,
    /// Pools (a queued stage's own pool has the stage's name).
    pub pools: Vec<PoolSnapshot>,
    /// Global control, if configured (`[runtime.global]`).
    pub global: Option<GlobalSnapshot>,
}

impl RuntimeSnapshot {
    /// The pool that runs `stage` (none for an inline stage).
    pub fn pool_of(&self, stage: &StageSnapshot) -> Option<&PoolSnapshot> {
        let name = stage.pool.as_ref()?;
        self.pools.iter().find(|p| &p.name == name)
    }
}

/// A pool's size and backlog.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct PoolSnapshot {
    /// Pool name.
    pub name: String,
    /// Worker threads.
    pub threads: usize,
    /// Events waiting in its stages.
    pub queue_len: usize,
    /// Its sizer: `seda`, `fixed`, `self_tuning` or `hill_climbing`.
    pub sizer: std::borrow::Cow<'static, str>,
    /// What the sizer asks for and measured.
    pub sizing: SizerState,
}

impl Runtime {
    /// A snapshot of every stage's and pool's state and measurements.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::mpsc;
    /// use seda::{Runtime, Stage, handler};
    ///
    /// let rt = Runtime::start()?;
    /// let (tx, rx) = mpsc::channel();
    /// let tx = std::sync::Mutex::new(tx);
    /// let sink = rt.stage(Stage::builder("work").handler(handler::each(move |n: u64, _cx| {
    ///     tx.lock().unwrap().send(n).unwrap();
    /// })))?;
    /// sink.enqueue(1).expect("admitted");
    /// rx.recv()?;
    /// let stats = rt.stats();
    /// let work = &stats.stages[0];
    /// assert_eq!((work.name.as_str(), work.totals.counters.admitted), ("work", 1));
    /// assert_eq!(stats.pool_of(work).map(|p| p.name.as_str()), Some("work"));
    /// rt.shutdown();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn stats(&self) -> RuntimeSnapshot {
        let stages = self.inner.registry.stages.read().clone();
        let pools = self.inner.registry.pools.read().clone();
        RuntimeSnapshot {
            uptime_s: self.inner.started.elapsed().as_secs_f64(),
            in_flight: in_flight(&stages).unwrap_or_else(|| approximate_in_flight(&stages)),
            stages: stages.iter().map(|s| s.snapshot()).collect(),
            pools: pools
                .iter()
                .map(|p| {
                    let (kind, sizing) = p.sizing();
                    PoolSnapshot {
                        name: p.name.clone(),
                        threads: p.threads(),
                        queue_len: p.queue_len(),
                        sizer: kind.into(),
                        sizing,
                    }
                })
                .collect(),
            global: self.inner.global.as_ref().map(|g| g.lock().snapshot()),
        }
    }

    /// Every stage's cumulative queueing, service and response-time histograms, by stage name,
    /// in the order the stages were added. Exporters render their own buckets from these at
    /// scrape time, so recording stays the one relaxed atomic add it is.
    pub fn histograms(&self) -> Vec<(String, StageHistograms)> {
        let stages = self.inner.registry.stages.read().clone();
        stages
            .iter()
            .map(|s| (s.name().to_string(), s.histograms()))
            .collect()
    }

    /// [`stats`](Self::stats) as pretty JSON.
    pub fn stats_json(&self) -> String {
        serde_json::to_string_pretty(&self.stats())
            .unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
    }

    /// The stage graph with per-edge event counts.
    ///
    /// # Examples
    ///
    /// ```
    /// use seda::{Runtime, Stage, handler};
    ///
    /// let rt = Runtime::start()?;
    /// let b = rt.stage(Stage::builder("b").inline().handler(handler::each(|_: u8, _cx| {})))?;
    /// let a = rt.stage(Stage::builder("a").inline().handler(handler::each(move |n: u8, _cx| {
    ///     let _ = b.enqueue(n);
    /// })))?;
    /// a.enqueue(1).expect("admitted"); // inline: handled, and passed to `b`, before it returns
    /// let graph = rt.graph();
    /// let edges: Vec<_> = graph
    ///     .edges
    ///     .iter()
    ///     .map(|e| (e.from.as_str(), e.to.as_str(), e.events))
    ///     .collect();
    /// assert!(edges.contains(&("outside", "a", 1)) && edges.contains(&("a", "b", 1)));
    /// assert!(graph.to_dot().contains("digraph"));
    /// rt.shutdown();
    /// # Ok::<(), seda::BuildError>(())
    /// ```
    pub fn graph(&self) -> Graph {
        let stages = self.inner.registry.stages.read().clone();
        let name_of = |id: usize| -> String {
            match id {
                0 => "outside".into(),
                EDGE_SOURCES => "other".into(),
                id => stages
                    .get(id - 1)
                    .map_or_else(|| "other".into(), |s| s.name().to_string()),
            }
        };
        let nodes = stages
            .iter()
            .map(|s| {
                let snap_pool = s.snapshot().pool;
                GraphNode {
                    name: s.name().to_string(),
                    mode: s.mode_name(),
                    pool: snap_pool,
                }
            })
            .collect();
        let edges = stages
            .iter()
            .flat_map(|s| {
                s.edge_counts().into_iter().map(|(from, events)| GraphEdge {
                    from: name_of(from),
                    to: s.name().to_string(),
                    events,
                })
            })
            .collect();
        Graph { nodes, edges }
    }
}
