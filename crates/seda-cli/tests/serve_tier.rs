//! `seda serve tier`'s client of the tier below (issue 53, item 5), against a real server that
//! refuses every call with 503: retries at once up to `--retries`, held to `--retry-budget`,
//! and `--throttle` refusing at the tier's door what the tier below would not accept.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Kills the tier when the test ends, however it ends.
struct Tier {
    child: Child,
    addr: String,
}

impl Drop for Tier {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A server that answers every request 503 and closes, counting them.
fn refusing_server() -> (String, Arc<AtomicU64>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr").to_string();
    let seen = Arc::new(AtomicU64::new(0));
    let count = Arc::clone(&seen);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { continue };
            let mut head = Vec::new();
            let mut reader = BufReader::new(&mut s);
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                head.push(line);
            }
            if head.is_empty() {
                continue;
            }
            count.fetch_add(1, Ordering::SeqCst);
            let _ = s.write_all(
                b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
            );
        }
    });
    (addr, seen)
}

/// Starts a tier calling `downstream` with `args` besides, and reads its address.
fn tier(downstream: &str, args: &[&str]) -> Tier {
    let mut child = Command::new(env!("CARGO_BIN_EXE_seda"))
        .args(["serve", "tier", "--addr", "127.0.0.1:0", "--work-ms", "0"])
        .args(["--downstream", &format!("http://{downstream}/")])
        .args(args)
        .stdout(Stdio::piped())
        .spawn()
        .expect("run seda");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    stdout.read_line(&mut line).expect("the tier's first line");
    // `... calling http://<downstream>/, on http://<addr>/`
    let addr = line
        .rsplit("on http://")
        .next()
        .and_then(|rest| rest.split('/').next())
        .unwrap_or_default()
        .to_string();
    assert!(!addr.is_empty(), "no address in `{line}`");
    Tier { child, addr }
}

/// The tier's counters.
fn stats(addr: &str) -> serde_json::Value {
    let response = common::get(addr, "/_tier/stats");
    let body = response.split("\r\n\r\n").nth(1).unwrap_or_default();
    serde_json::from_str(body).expect("the tier's stats are JSON")
}

fn count(stats: &serde_json::Value, key: &str) -> u64 {
    stats[key]
        .as_u64()
        .unwrap_or_else(|| panic!("no {key} in {stats}"))
}

#[test]
fn a_refused_call_is_retried_at_once_up_to_n_times() {
    let (below, seen) = refusing_server();
    let t = tier(&below, &["--retries", "3"]);
    let answer = common::get(&t.addr, "/");
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    let s = stats(&t.addr);
    assert_eq!(seen.load(Ordering::SeqCst), 4);
    assert_eq!((count(&s, "calls"), count(&s, "retries")), (4, 3));
    assert_eq!(count(&s, "downstream_refused"), 1);
}

#[test]
fn the_retry_budget_holds_retries_to_its_share() {
    let (below, seen) = refusing_server();
    let t = tier(&below, &["--retries", "3", "--retry-budget", "0.1"]);
    for _ in 0..30 {
        assert!(common::get(&t.addr, "/").starts_with("HTTP/1.1 503"));
    }
    // 10% of 30 first calls, and the allowance of one a second over the budget's 10 s: 13
    // retries, the first three requests' nine and then one at a time; the 27 requests after
    // the third each ended on a retry denied.
    let s = stats(&t.addr);
    assert_eq!(count(&s, "retries"), 13, "{s}");
    assert_eq!(count(&s, "retries_denied"), 27, "{s}");
    assert_eq!(count(&s, "calls"), 43, "{s}");
    assert_eq!(seen.load(Ordering::SeqCst), 43);
}

#[test]
fn the_throttle_refuses_at_the_door_what_below_does_not_accept() {
    let (below, seen) = refusing_server();
    let t = tier(&below, &["--throttle"]);
    let mut throttled = 0;
    for _ in 0..60 {
        let answer = common::get(&t.addr, "/");
        assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
        throttled += usize::from(answer.contains("x-seda-reject: throttled"));
    }
    // Nothing accepted: each request is refused here with probability requests / (requests
    // + 1), so after the first few almost none reach the server below.
    let s = stats(&t.addr);
    let sent = seen.load(Ordering::SeqCst);
    assert!((1..=15).contains(&sent), "{sent} of 60 sent below");
    assert_eq!(count(&s, "calls"), sent);
    assert_eq!(count(&s, "throttled"), 60 - sent, "{s}");
    assert_eq!(throttled as u64, 60 - sent);
}
