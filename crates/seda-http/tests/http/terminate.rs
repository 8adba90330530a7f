//! Early termination through the front end: a request of a terminable stage that runs past the
//! threshold is answered 503 with `Retry-After` and `x-seda-reject: terminated`, counted as
//! terminated in `/metrics` and `/_seda/stats`, and never as a latency sample; a short one
//! is served.

use std::time::Duration;

use seda_testbed::bottleneck::{BottleneckServeConfig, BottleneckServer};

use crate::client::get;
use crate::eventually;

#[test]
fn a_request_past_the_threshold_is_answered_terminated() {
    let mut config = BottleneckServeConfig::from_toml(
        "[bottleneck]\nthreads = 2\nwork_kb = 4.0\nbase_kb = 4.0\n\
         [stages.bottleneck]\nbatch = 1\n\
         [stages.bottleneck.terminate]\nkind = \"fixed\"\nthreshold_s = 0.05\n",
    )
    .expect("config");
    config.http.addr = "127.0.0.1:0".parse().expect("addr");
    let server = BottleneckServer::start(config, None).expect("bottleneck starts");
    let (addr, admin) = (server.local_addr(), server.admin_addr().expect("admin"));
    // Far past the threshold: only a termination ends it before the client's patience.
    let long = get(addr, "/hold?ms=60000");
    assert_eq!(long.status, 503);
    assert_eq!(long.header("x-seda-reject"), Some("terminated"));
    assert!(long.header("retry-after").is_some());
    let short = get(addr, "/hold?ms=1");
    assert_eq!(short.status, 200, "{}", short.text());
    // The worker counts a request just after it answers: wait for both to be counted.
    let stats = || -> serde_json::Value {
        serde_json::from_slice(&get(admin, "/_seda/stats").body).expect("json")
    };
    let settled = |s: &serde_json::Value| {
        let c = &s["runtime"]["stages"][0]["totals"]["counters"];
        c["completed"].as_u64().unwrap_or(0) + c["terminated"].as_u64().unwrap_or(0)
    };
    assert!(eventually(Duration::from_secs(10), || settled(&stats()) == 2));
    let stats = stats();
    let stage = &stats["runtime"]["stages"][0];
    assert_eq!(stage["totals"]["counters"]["terminated"], 1);
    assert_eq!(stage["totals"]["counters"]["completed"], 1);
    assert_eq!(
        stage["totals"]["response"]["count"], 1,
        "only the short one"
    );
    assert_eq!(stage["termination"]["kind"], "fixed");
    let metrics = get(admin, "/metrics").text();
    assert!(
        metrics.contains("seda_stage_terminated_total{stage=\"bottleneck\"} 1"),
        "{metrics}"
    );
    server.shutdown(Duration::from_secs(5));
}
