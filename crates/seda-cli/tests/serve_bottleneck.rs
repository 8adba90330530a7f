//! `seda serve bottleneck` as a user runs it: a page at full quality, 400s for bad queries, and
//! with `--control degrade` a quality that falls under an overload burst; then SIGINT.

mod common;

use std::io::Read;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Kills the server if the test fails before stopping it.
struct Guard(std::process::Child);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The quality a page was made at, from its `x-seda-quality` header.
fn quality(response: &str) -> Option<f64> {
    response
        .lines()
        .find_map(|l| l.strip_prefix("x-seda-quality: "))
        .and_then(|v| v.trim().parse().ok())
}

#[test]
fn pages_state_their_quality_and_degrade_under_a_burst() {
    // Small work so the unoptimised test binary stays quick; a target far below what 16
    // clients at once can get, so the burst is an overload whatever the machine.
    let common::Server {
        child,
        mut stdout,
        addr,
        admin,
    } = common::start_with_admin(
        &[
            "serve",
            "bottleneck",
            "--addr",
            "127.0.0.1:0",
            "--control",
            "degrade",
            "--target-s",
            "0.005",
            "--work-kb",
            "64",
            "--rounds",
            "4",
            "--base-kb",
            "64",
        ]
        .map(std::ffi::OsStr::new),
    );
    let mut guard = Guard(child);

    let r = common::get(&addr, "/page?size=1.5");
    assert!(r.starts_with("HTTP/1.1 200 OK"), "{r}");
    assert_eq!(quality(&r), Some(1.0), "{r}");
    assert!(r.contains("<b id=\"quality\">1.0000</b>"), "{r}");
    assert!(r.contains("read 98304 bytes"), "1.5 x 64 KiB: {r}");
    for bad in ["/?size=9", "/?size=x", "/?nope=1"] {
        let r = common::get(&addr, bad);
        assert!(r.starts_with("HTTP/1.1 400"), "{bad}: {r}");
    }
    assert!(common::get(&addr, "/elsewhere").starts_with("HTTP/1.1 404"));

    // The burst: 16 clients until one sees a degraded page, for at most 20 s.
    let degraded = Arc::new(AtomicBool::new(false));
    let lowest = Arc::new(AtomicU64::new(1_000_000));
    let until = Instant::now() + Duration::from_secs(20);
    let clients: Vec<_> = (0..16)
        .map(|_| {
            let (addr, degraded, lowest) = (addr.clone(), degraded.clone(), lowest.clone());
            std::thread::spawn(move || {
                while !degraded.load(Ordering::Relaxed) && Instant::now() < until {
                    if let Some(q) = quality(&common::get(&addr, "/")) {
                        lowest.fetch_min((q * 1e6) as u64, Ordering::Relaxed);
                        if q < 1.0 {
                            degraded.store(true, Ordering::Relaxed);
                        }
                    }
                }
            })
        })
        .collect();
    for c in clients {
        c.join().expect("client");
    }
    let q = lowest.load(Ordering::Relaxed) as f64 / 1e6;
    assert!(q < 1.0, "the quality never fell below 1 under the burst");
    assert!(common::get(&addr, "/_seda/stats").starts_with("HTTP/1.1 404"));
    let stats = common::get(&admin.expect("admin address"), "/_seda/stats");
    assert!(stats.contains("\"name\": \"degradation\""), "{stats}");
    assert!(stats.contains("\"quality\""), "{stats}");

    let killed = Command::new("kill")
        .args(["-INT", &guard.0.id().to_string()])
        .status()
        .expect("kill");
    assert!(killed.success());
    let status = guard.0.wait().expect("wait");
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).expect("rest of stdout");
    assert!(status.success(), "exit status {status}, output {rest}");
    assert!(rest.contains("stopped: 0 connection(s) cut"), "{rest}");
}

/// With `--cores`, a page holds the emulated processor for its stated cost after its real work:
/// two pages of 11 ms on a tenth of a core take at least 220 ms together, and the stats count
/// the processor's work.
#[test]
fn pages_hold_the_emulated_processor_for_their_cost() {
    let common::Server {
        child, addr, admin, ..
    } = common::start_with_admin(
        &[
            "serve",
            "bottleneck",
            "--addr",
            "127.0.0.1:0",
            "--work-kb",
            "4",
            "--base-kb",
            "4",
            "--cores",
            "0.1",
        ]
        .map(std::ffi::OsStr::new),
    );
    let _guard = Guard(child);
    let t = Instant::now();
    for _ in 0..2 {
        let r = common::get(&addr, "/page?size=1");
        assert!(r.starts_with("HTTP/1.1 200 OK"), "{r}");
    }
    assert!(
        t.elapsed() >= Duration::from_millis(218),
        "{:?}",
        t.elapsed()
    );
    let stats = common::get(&admin.expect("admin address"), "/_seda/stats");
    let body = stats.split("\r\n\r\n").nth(1).expect("body");
    let v: serde_json::Value = serde_json::from_str(body).expect("JSON");
    let busy = v["service"]["bottleneck"]["processor"]["busy_core_s"]
        .as_f64()
        .expect("processor stats");
    assert!((0.0218..0.1).contains(&busy), "{busy}");
    let computed = v["service"]["bottleneck"]["compute_cpu_s"]
        .as_f64()
        .unwrap();
    assert!((computed - 0.022).abs() < 1e-6, "{computed}");
}
