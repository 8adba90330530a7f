//! The dashboard's memory: one sample per stage per second, an hour of them, in a fixed ring.
//!
//! A [`Point`] is 64 bytes, so a stage's hour ([`CAPACITY`] points) is 230,400 bytes and 20
//! stages hold 4.6 MB, allocated up front and never more. The sampler reads
//! [`seda::Runtime::stats`] and the graph's edge counts once a second (the same snapshot
//! `/_seda/stats` serves) and turns counter differences into rates.

use std::borrow::Cow;
use std::collections::{BTreeMap, VecDeque};

use serde::Serialize;
use serde_json::{Value, json};

/// Points kept per stage: one hour at one a second.
pub const CAPACITY: usize = 3600;

/// Up to this many values of a stage's controller state are kept per point (its first keys in
/// name order); the live view shows them all.
const CONTROLLER_VALUES: usize = 4;

/// Where a stage's queue counts as filling: half its threshold.
const PRESSED_FILL: f64 = 0.5;

/// One second of one stage. `f32` is plenty for a plot and keeps the ring small.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Point {
    /// Seconds since the admin server started.
    pub t: u32,
    /// Queue length at the sample.
    pub queue: u32,
    /// Queue threshold (0: none).
    pub threshold: u32,
    /// Worker threads.
    pub threads: u16,
    /// The pool controller's cap.
    pub threads_max: u16,
    /// Enqueue attempts per second.
    pub arrivals: f32,
    /// Admitted per second.
    pub admitted: f32,
    /// Rejected per second.
    pub rejected: f32,
    /// Dropped per second.
    pub dropped: f32,
    /// Handled per second.
    pub completed: f32,
    /// Response-time percentiles of the last control period, seconds (`NaN`: none).
    pub p50: f32,
    /// 90th percentile.
    pub p90: f32,
    /// 99th percentile.
    pub p99: f32,
    /// The controller's first values (see `controller_keys`).
    pub ctrl: [f32; CONTROLLER_VALUES],
}

#[derive(Debug)]
struct StageRing {
    name: String,
    controller_keys: Vec<Cow<'static, str>>,
    points: VecDeque<Point>,
}

#[derive(Debug, Default, Clone)]
struct Last {
    t_s: f64,
    arrivals: u64,
    admitted: u64,
    rejected: u64,
    dropped: u64,
    completed: u64,
    terminated: u64,
    rejected_by: BTreeMap<Cow<'static, str>, u64>,
}

impl Last {
    /// The counters of `c` at `t_s`.
    fn of(t_s: f64, c: &seda::stats::CounterSnapshot) -> Last {
        Last {
            t_s,
            arrivals: c.arrivals,
            admitted: c.admitted,
            rejected: c.rejected_total,
            dropped: c.dropped_total,
            completed: c.completed,
            terminated: c.terminated,
            rejected_by: c.rejected.clone(),
        }
    }
}

/// The rings, and what the newest sample found.
#[derive(Debug, Default)]
pub struct History {
    stages: Vec<StageRing>,
    last: BTreeMap<String, Last>,
    edges_last: BTreeMap<(String, String), u64>,
    /// The newest view of the whole graph (rates, reasons, backpressure), served as is.
    current: Value,
    newest_t: Option<u32>,
}

fn rate(now: u64, before: u64, dt: f64) -> f32 {
    if dt <= 0.0 {
        0.0
    } else {
        (now.saturating_sub(before) as f64 / dt) as f32
    }
}

fn secs(v: Option<f64>) -> f32 {
    v.map_or(f32::NAN, |v| v as f32)
}

impl History {
    /// Bytes the rings hold when full, for `n` stages.
    pub fn bytes_for(stages: usize) -> usize {
        stages * CAPACITY * std::mem::size_of::<Point>()
    }

    /// Takes one sample at `t_s` seconds since start.
    pub fn sample(&mut self, t_s: f64, stats: &seda::RuntimeSnapshot, graph: &seda::Graph) {
        let t = t_s as u32;
        let mut rows = Vec::with_capacity(stats.stages.len());
        for s in &stats.stages {
            let c = &s.totals.counters;
            let last = self
                .last
                .get(&s.name)
                .cloned()
                .unwrap_or_else(|| Last::of(t_s, c));
            let dt = t_s - last.t_s;
            let period = s.period.as_ref();
            let (keys, values): (Vec<Cow<'static, str>>, Vec<f64>) = s
                .controller
                .as_ref()
                .map(|c| c.state.iter().map(|(k, v)| (k.clone(), *v)).unzip())
                .unwrap_or_default();
            let mut ctrl = [f32::NAN; CONTROLLER_VALUES];
            for (slot, v) in ctrl.iter_mut().zip(&values) {
                *slot = *v as f32;
            }
            let point = Point {
                t,
                queue: s.queue_len.min(u32::MAX as usize) as u32,
                threshold: s.threshold.unwrap_or(0).min(u32::MAX as usize) as u32,
                threads: s.threads.min(u16::MAX as usize) as u16,
                threads_max: s.threads_max.min(u16::MAX as usize) as u16,
                arrivals: rate(c.arrivals, last.arrivals, dt),
                admitted: rate(c.admitted, last.admitted, dt),
                rejected: rate(c.rejected_total, last.rejected, dt),
                dropped: rate(c.dropped_total, last.dropped, dt),
                completed: rate(c.completed, last.completed, dt),
                p50: secs(period.and_then(|p| p.response.p50_s)),
                p90: secs(period.and_then(|p| p.response.p90_s)),
                p99: secs(period.and_then(|p| p.response.p99_s)),
                ctrl,
            };
            let rejected_by: BTreeMap<&str, f32> = c
                .rejected
                .iter()
                .map(|(r, n)| {
                    (
                        r.as_ref(),
                        rate(*n, *last.rejected_by.get(r).unwrap_or(n), dt),
                    )
                })
                .filter(|(_, v)| *v > 0.0)
                .collect();
            self.push_point(&s.name, keys.clone(), point);
            let terminated = rate(c.terminated, last.terminated, dt);
            rows.push((s, point, rejected_by, keys, values, terminated));
            self.last.insert(s.name.clone(), Last::of(t_s, c));
        }
        let dt = t_s - self.current.get("t").and_then(Value::as_f64).unwrap_or(t_s);
        let edges = self.edge_rates(graph, dt);
        let named: Vec<(&str, Point)> = rows
            .iter()
            .map(|(s, p, ..)| (s.name.as_str(), *p))
            .collect();
        let origins = backpressure_origins(&named, &edges);
        let stages: Vec<Value> = rows
            .iter()
            .map(|(s, p, rejected_by, keys, values, terminated)| {
                json!({
                    "name": s.name,
                    "mode": s.mode,
                    "pressed": pressed(p),
                    "point": p,
                    "rejected_by": rejected_by,
                    "terminated_per_s": terminated,
                    "termination": s.termination,
                    "threads_target": s.threads_target,
                    "sizer": stats.pool_of(s)
                        .map(|p| json!({"kind": p.sizer, "state": p.sizing})),
                    "controller": s.controller.as_ref().map(|c| json!({
                        "name": c.name,
                        "state": keys.iter().zip(values).map(|(k, v)| (k.to_string(), *v))
                            .collect::<BTreeMap<String, f64>>(),
                    })),
                })
            })
            .collect();
        self.current = json!({
            "t": t_s,
            "uptime_s": stats.uptime_s,
            "stages": stages,
            "edges": edges.iter().map(|(f, to, r)| json!({"from": f, "to": to, "rate": r}))
                .collect::<Vec<_>>(),
            "backpressure_origins": origins,
            "history_bytes_max": Self::bytes_for(self.stages.len()),
        });
        self.newest_t = Some(t);
    }

    /// Appends `point` to the ring of stage `name` (a new ring for a new stage), dropping the
    /// oldest point of a full ring.
    fn push_point(&mut self, name: &str, controller_keys: Vec<Cow<'static, str>>, point: Point) {
        let ring = match self.stages.iter().position(|r| r.name == name) {
            Some(i) => &mut self.stages[i],
            None => {
                self.stages.push(StageRing {
                    name: name.to_string(),
                    controller_keys: Vec::new(),
                    points: VecDeque::with_capacity(CAPACITY),
                });
                let n = self.stages.len();
                &mut self.stages[n - 1]
            }
        };
        ring.controller_keys = controller_keys;
        if ring.points.len() == CAPACITY {
            ring.points.pop_front();
        }
        ring.points.push_back(point);
    }

    /// Each edge's events per second over the last `dt` seconds, remembering the counts for
    /// the next sample.
    fn edge_rates(&mut self, graph: &seda::Graph, dt: f64) -> Vec<(String, String, f32)> {
        let edges = graph
            .edges
            .iter()
            .map(|e| {
                let key = (e.from.clone(), e.to.clone());
                let before = *self.edges_last.get(&key).unwrap_or(&e.events);
                (e.from.clone(), e.to.clone(), rate(e.events, before, dt))
            })
            .collect();
        self.edges_last = graph
            .edges
            .iter()
            .map(|e| ((e.from.clone(), e.to.clone()), e.events))
            .collect();
        edges
    }

    /// The newest view plus every stage's points newer than `since` (all with `None`).
    pub fn live(&self, since: Option<u32>) -> Value {
        let history: Vec<Value> = self
            .stages
            .iter()
            .map(|r| {
                let points: Vec<&Point> = r
                    .points
                    .iter()
                    .filter(|p| since.is_none_or(|s| p.t > s))
                    .collect();
                json!({
                    "name": r.name,
                    "controller_keys": r.controller_keys,
                    "points": points,
                })
            })
            .collect();
        json!({
            "now": self.current,
            "newest_t": self.newest_t,
            "history": history,
        })
    }
}

/// A stage is pressed when it turns work away or its queue is at least half full.
fn pressed(p: &Point) -> bool {
    p.rejected > 0.0
        || p.dropped > 0.0
        || (p.threshold > 0 && f64::from(p.queue) >= PRESSED_FILL * f64::from(p.threshold))
}

/// Where backpressure starts: every pressed stage none of whose downstream stages (edges
/// carrying events now) is pressed. Upstream stages fill *because* of one; these are the ones to
/// look at. Independent branches can each have one (a crowd of logins and a crowd of searches),
/// so all are named, the fullest queue (then the most rejections) first.
fn backpressure_origins(rows: &[(&str, Point)], edges: &[(String, String, f32)]) -> Vec<String> {
    let is_pressed = |name: &str| rows.iter().any(|(s, p)| *s == name && pressed(p));
    let fill = |p: &Point| {
        if p.threshold == 0 {
            0.0
        } else {
            f64::from(p.queue) / f64::from(p.threshold)
        }
    };
    let mut origins: Vec<&(&str, Point)> = rows
        .iter()
        .filter(|(_, p)| pressed(p))
        .filter(|(s, _)| {
            !edges
                .iter()
                .any(|(from, to, r)| from == s && *r > 0.0 && is_pressed(to))
        })
        .collect();
    origins.sort_by(|(_, a), (_, b)| {
        fill(b)
            .total_cmp(&fill(a))
            .then(b.rejected.total_cmp(&a.rejected))
    });
    origins.iter().map(|(s, _)| s.to_string()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(queue: u32, threshold: u32, rejected: f32) -> Point {
        Point {
            t: 0,
            queue,
            threshold,
            threads: 1,
            threads_max: 1,
            arrivals: 10.0,
            admitted: 10.0,
            rejected,
            dropped: 0.0,
            completed: 10.0,
            p50: f32::NAN,
            p90: f32::NAN,
            p99: f32::NAN,
            ctrl: [f32::NAN; CONTROLLER_VALUES],
        }
    }

    #[test]
    fn backpressure_starts_at_the_pressed_stage_whose_successors_are_not() {
        let edge = |a: &str, b: &str| (a.to_string(), b.to_string(), 5.0);
        let edges = [edge("outside", "a"), edge("a", "b"), edge("b", "c")];
        // a and b full, c idle: b holds everything up, a is full because of it.
        let rows = [
            ("a", point(90, 100, 3.0)),
            ("b", point(60, 100, 0.0)),
            ("c", point(0, 100, 0.0)),
        ];
        assert_eq!(backpressure_origins(&rows, &edges), ["b"]);
        // Nothing pressed: no origin.
        let calm = [("a", point(1, 100, 0.0)), ("b", point(0, 100, 0.0))];
        assert!(backpressure_origins(&calm, &edges).is_empty());
        // Two independent branches, both pressed: both are origins, the fuller queue first.
        let edges = [edge("outside", "x"), edge("outside", "y")];
        let rows = [("x", point(50, 100, 0.0)), ("y", point(8, 8, 1.0))];
        assert_eq!(backpressure_origins(&rows, &edges), ["y", "x"]);
    }

    #[test]
    fn a_point_is_64_bytes_so_an_hour_of_20_stages_is_4_6_mb() {
        assert_eq!(std::mem::size_of::<Point>(), 64);
        assert_eq!(History::bytes_for(20), 4_608_000);
    }
}
