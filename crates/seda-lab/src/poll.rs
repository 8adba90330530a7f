//! Samples a seda server's `/_seda/stats` (on its admin address) in the background, so a scenario can plot what its
//! controllers did (a token bucket's rate, a quality knob) beside what the clients saw.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::Value;

/// Largest stats document read (a runtime with a few dozen stages is well under this).
const MAX_BYTES: u64 = 4 << 20;

/// One sample: seconds since the poller started, and the stats document.
#[derive(Debug, Clone)]
pub struct Sample {
    /// Seconds since [`StatsPoller::start`].
    pub t_s: f64,
    /// The parsed `/_seda/stats` JSON.
    pub stats: Value,
}

/// A background thread that GETs `/_seda/stats` every period until stopped.
#[derive(Debug)]
pub struct StatsPoller {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<Vec<Sample>>,
}

impl StatsPoller {
    /// Starts polling the admin address `addr` every `period`. Failed polls (a busy server, say) are skipped.
    pub fn start(addr: SocketAddr, period: Duration) -> StatsPoller {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let start = Instant::now();
            let mut samples = Vec::new();
            while !flag.load(Ordering::Relaxed) {
                let due = Instant::now() + period;
                if let Some(stats) = fetch(addr) {
                    samples.push(Sample {
                        t_s: start.elapsed().as_secs_f64(),
                        stats,
                    });
                }
                while Instant::now() < due && !flag.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
            samples
        });
        StatsPoller { stop, thread }
    }

    /// Stops and returns the samples.
    pub fn stop(self) -> Vec<Sample> {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().unwrap_or_default()
    }
}

/// One `/_seda/stats` snapshot from the admin address `addr` (`None` if it did not answer).
pub fn fetch(addr: SocketAddr) -> Option<Value> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(1)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    s.set_write_timeout(Some(Duration::from_secs(1))).ok()?;
    s.write_all(b"GET /_seda/stats HTTP/1.1\r\nHost: lab\r\nConnection: close\r\n\r\n")
        .ok()?;
    let mut raw = Vec::new();
    s.take(MAX_BYTES).read_to_end(&mut raw).ok()?;
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
    serde_json::from_slice(&raw[split + 4..]).ok()
}

/// The value `key` of the controller on stage `stage` in each sample: `(t_s, value)`.
pub fn controller_series(samples: &[Sample], stage: &str, key: &str) -> Vec<(f64, f64)> {
    stage_series(samples, stage, &format!("/controller/state/{key}"))
}

/// The value at `pointer` (e.g. `/totals/counters/terminated`) of the stage named `stage` in
/// each sample: `(t_s, value)`.
pub fn stage_series(samples: &[Sample], stage: &str, pointer: &str) -> Vec<(f64, f64)> {
    samples
        .iter()
        .filter_map(|s| {
            let st = stages(&s.stats)?
                .iter()
                .find(|x| x.get("name").and_then(Value::as_str) == Some(stage))?;
            Some((s.t_s, st.pointer(pointer)?.as_f64()?))
        })
        .collect()
}

/// The value at `pointer` (e.g. `/sizing/throughput_per_s`) of the pool named `pool` in each
/// sample: `(t_s, value)`.
pub fn pool_series(samples: &[Sample], pool: &str, pointer: &str) -> Vec<(f64, f64)> {
    samples
        .iter()
        .filter_map(|s| {
            let pools = s.stats.pointer("/runtime/pools")?.as_array()?;
            let p = pools
                .iter()
                .find(|x| x.get("name").and_then(Value::as_str) == Some(pool))?;
            Some((s.t_s, p.pointer(pointer)?.as_f64()?))
        })
        .collect()
}

/// A counter of the stats' `totals` (`arrivals`, `admitted`, `completed`...) of the stage
/// named `stage`, or with `None` summed over the stages that have a queue (an inline stage,
/// such as the e-mail service's route, only passes requests on to them), as a rate per second
/// between consecutive samples: `(t_s, per_s)` at the end of each gap.
pub fn stage_rate(samples: &[Sample], stage: Option<&str>, counter: &str) -> Vec<(f64, f64)> {
    let total = |s: &Sample| -> Option<f64> {
        Some(
            stages(&s.stats)?
                .iter()
                .filter(|x| match stage {
                    Some(name) => x.get("name").and_then(Value::as_str) == Some(name),
                    None => is_queued(x),
                })
                .filter_map(|x| x.pointer(&format!("/totals/counters/{counter}"))?.as_f64())
                .sum(),
        )
    };
    let points: Vec<(f64, f64)> = samples
        .iter()
        .filter_map(|s| total(s).map(|v| (s.t_s, v)))
        .collect();
    points
        .windows(2)
        .filter(|w| w[1].0 > w[0].0)
        .map(|w| (w[1].0, (w[1].1 - w[0].1).max(0.0) / (w[1].0 - w[0].0)))
        .collect()
}

/// The stages of a stats document (a server's own, or one nested under `runtime`).
fn stages(stats: &Value) -> Option<&Vec<Value>> {
    stats
        .pointer("/runtime/stages")
        .or(stats.get("stages"))?
        .as_array()
}

/// Whether a stage queues its events: the inline route stage only passes requests on, so
/// counting it beside the others would count each request twice.
fn is_queued(stage: &Value) -> bool {
    stage.get("mode").and_then(Value::as_str) != Some("inline")
}

/// The requests a server has admitted and not yet finished (completed, terminated, failed or
/// dropped), summed over its queued stages.
pub fn outstanding(stats: &Value) -> Option<u64> {
    let mut sum = 0;
    for s in stages(stats)?.iter().filter(|x| is_queued(x)) {
        let n = |k: &str| s.pointer(&format!("/totals/counters/{k}"))?.as_u64();
        let done = n("completed")? + n("terminated")? + n("failed")? + n("dropped_total")?;
        sum += n("admitted")?.saturating_sub(done);
    }
    Some(sum)
}

/// Waits, up to `limit`, until the server at `admin` holds no admitted request unfinished;
/// returns how long that took (`None`: still busy, or not answering, at the limit).
pub fn wait_until_idle(admin: SocketAddr, limit: Duration) -> Option<Duration> {
    let start = Instant::now();
    while start.elapsed() < limit {
        if fetch(admin).as_ref().and_then(outstanding) == Some(0) {
            return Some(start.elapsed());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn outstanding_counts_what_queued_stages_admitted_and_did_not_finish() {
        let counters = |admitted: u64, completed: u64| {
            json!({"admitted": admitted, "completed": completed, "terminated": 1,
                   "failed": 1, "dropped_total": 1})
        };
        let stats = json!({"stages": [
            {"mode": "inline", "totals": {"counters": counters(100, 0)}},
            {"mode": "queued", "totals": {"counters": counters(20, 12)}},
            {"mode": "queued", "totals": {"counters": counters(5, 2)}},
        ]});
        assert_eq!(outstanding(&stats), Some(5));
        let missing = json!({"stages": [{"mode": "queued", "totals": {"counters": {}}}]});
        assert_eq!(outstanding(&missing), None);
    }
}
