use std::time::Duration;

use seda::stats::StageSnapshot;
use seda::{Config, Meta, Runtime, RuntimeSnapshot, Stage, handler};

#[derive(Debug)]
struct Req(Meta);

impl seda::Event for Req {
    fn meta(&self) -> Option<&Meta> {
        Some(&self.0)
    }
}

#[test]
fn snapshots_periods_json_and_graph() {
    let config = Config::from_toml("[runtime]\ntick_ms = 5\nstats_period_ms = 20\n").unwrap();
    let rt = Runtime::builder().config(config).start().unwrap();
    let sink_b = rt
        .stage(Stage::builder("b").handler(handler::each(|_: Req, _| {
            std::thread::sleep(Duration::from_millis(2));
        })))
        .unwrap();
    let sink_a = rt
        .stage(Stage::builder("a").handler(handler::each(move |r: Req, _| {
            sink_b.enqueue(r).unwrap();
        })))
        .unwrap();
    for _ in 0..10 {
        sink_a.enqueue(Req(Meta::new())).unwrap();
    }
    assert!(crate::eventually(Duration::from_secs(5), || {
        let s = rt.stats();
        s.in_flight == 0
            && s.stages[0]
                .period
                .as_ref()
                .is_some_and(|p| p.counters.completed > 0)
    }));
    let snap = rt.stats();
    let b = &snap.stages[0];
    assert_eq!(b.totals.counters.completed, 10);
    let response = &b.totals.response;
    assert_eq!(response.count, 10);
    assert!(
        response.p90_s.unwrap() >= 0.002,
        "b's response time includes its 2 ms of service"
    );
    assert!(b.totals.service.mean_s.unwrap() >= 0.0015);
    let json: serde_json::Value = serde_json::from_str(&rt.stats_json()).unwrap();
    assert_eq!(json["stages"][1]["name"], "a");
    assert_eq!(json["stages"][0]["totals"]["counters"]["admitted"], 10);

    let graph = rt.graph();
    let edge = |from: &str, to: &str| {
        graph
            .edges
            .iter()
            .find(|e| e.from == from && e.to == to)
            .map(|e| e.events)
    };
    assert_eq!(edge("outside", "a"), Some(10));
    assert_eq!(edge("a", "b"), Some(10));
    let dot = graph.to_dot();
    assert!(dot.contains("\"a\" -> \"b\" [label=\"10\"]"), "{dot}");
    rt.shutdown();
}

/// A runtime with every optional part of a snapshot filled: a controller, a terminator, a
/// self-tuning pool, global control and a rejection.
fn busy_runtime() -> Runtime {
    let config = Config::from_toml(
        r#"
        [runtime]
        tick_ms = 5
        stats_period_ms = 20
        [runtime.global]
        target_p90_ms = 100
        entry = "w"
        [stages.w]
        threshold = 4
        admission = { kind = "response_time", target_s = 0.5 }
        terminate = { kind = "fixed", threshold_s = 1.0 }
        sizer = { kind = "self_tuning", period_ms = 20 }
        "#,
    )
    .unwrap();
    let rt = Runtime::builder().config(config).start().unwrap();
    let sink = rt
        .stage(Stage::builder("w").handler(handler::each(|_: Req, _| {
            std::thread::sleep(Duration::from_millis(1));
        })))
        .unwrap();
    let rejected = (0..50)
        .filter(|_| sink.enqueue(Req(Meta::new())).is_err())
        .count();
    assert!(rejected > 0, "a threshold of 4 turns some of 50 away");
    assert!(crate::eventually(Duration::from_secs(5), || {
        let s = rt.stats();
        s.in_flight == 0 && s.stages[0].period.is_some()
    }));
    rt
}

#[test]
fn snapshots_deserialize_to_the_value_served() {
    let rt = busy_runtime();
    let snap = rt.stats();
    let w = &snap.stages[0];
    assert!(w.controller.is_some() && w.termination.is_some() && snap.global.is_some());
    // Through a JSON value (floats exact), the same snapshot comes back...
    let value = serde_json::to_value(&snap).unwrap();
    let back: RuntimeSnapshot = serde_json::from_value(value.clone()).unwrap();
    assert_eq!(back, snap);
    // ... and the text `/_seda/stats` serves parses too.
    let parsed: RuntimeSnapshot = serde_json::from_str(&rt.stats_json()).unwrap();
    assert_eq!(parsed.stages[0].name, "w");
    assert!(parsed.stages[0].totals.counters.rejected_total > 0);
    assert_eq!(
        parsed.stages[0].totals.counters.rejected.get("queue_full"),
        w.totals.counters.rejected.get("queue_full")
    );

    // A field renamed on one side fails to read instead of reading as nothing.
    let mut renamed = serde_json::to_value(w).unwrap();
    let counters = renamed["totals"]["counters"].as_object_mut().unwrap();
    let completed = counters.remove("completed").unwrap();
    counters.insert("handled".into(), completed);
    let err = serde_json::from_value::<StageSnapshot>(renamed).unwrap_err();
    assert!(err.to_string().contains("completed"), "{err}");
    rt.shutdown();
}

#[test]
fn a_state_number_json_writes_as_null_reads_back_as_nan() {
    let rt = busy_runtime();
    let mut snap = rt.stats();
    rt.shutdown();
    let controller = snap.stages[0].controller.as_mut().expect("a controller");
    controller.state.insert("unlimited".into(), f64::INFINITY);
    let text = serde_json::to_string(&snap).unwrap();
    let back: RuntimeSnapshot = serde_json::from_str(&text).expect("still readable");
    let state = &back.stages[0].controller.as_ref().unwrap().state;
    assert!(state["unlimited"].is_nan());
}
