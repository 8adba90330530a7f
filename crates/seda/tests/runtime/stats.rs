use std::time::Duration;

use seda::{Config, Meta, Runtime, Stage, handler};

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
