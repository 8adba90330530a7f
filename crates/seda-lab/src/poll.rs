//! Samples a seda server's `/_seda/stats` (on its admin address, through [`crate::admin`]) in
//! the background, so a scenario can plot what its controllers did (a token bucket's rate, a
//! quality knob) beside what the clients saw.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use seda::PoolSnapshot;
use seda::stats::{CounterSnapshot, StageSnapshot};

use crate::admin::{self, StatsDocument};

/// One sample: seconds since the poller started, and the stats document.
#[derive(Debug, Clone)]
pub struct Sample {
    /// Seconds since [`StatsPoller::start`].
    pub t_s: f64,
    /// The server's `/_seda/stats`.
    pub stats: StatsDocument,
}

impl Sample {
    /// The runtime's stages (none when the server shows no runtime).
    pub fn stages(&self) -> &[StageSnapshot] {
        stages(&self.stats)
    }

    /// The stage named `name`.
    pub fn stage(&self, name: &str) -> Option<&StageSnapshot> {
        self.stages().iter().find(|s| s.name == name)
    }
}

/// A background thread that GETs `/_seda/stats` every period until stopped.
#[derive(Debug)]
pub struct StatsPoller {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<Vec<Sample>>,
}

impl StatsPoller {
    /// Starts polling the admin address `addr` every `period`. Failed polls (a busy server, say)
    /// are skipped, the first one's error printed: a document that does not read as a
    /// [`StatsDocument`] fails every poll, and the line says why the series are empty.
    pub fn start(addr: SocketAddr, period: Duration) -> StatsPoller {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let start = Instant::now();
            let mut samples = Vec::new();
            let mut failed = false;
            while !flag.load(Ordering::Relaxed) {
                let due = Instant::now() + period;
                match admin::stats(addr) {
                    Ok(stats) => samples.push(Sample {
                        t_s: start.elapsed().as_secs_f64(),
                        stats,
                    }),
                    Err(e) if !failed => {
                        eprintln!("stats poller: {e:#} (later failures not shown)");
                        failed = true;
                    }
                    Err(_) => {}
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

/// The value `key` of the controller on stage `stage` in each sample where it is a number
/// (not one the server could only write as `null`): `(t_s, value)`.
pub fn controller_series(samples: &[Sample], stage: &str, key: &str) -> Vec<(f64, f64)> {
    stage_series(samples, stage, |s| {
        let v = *s.controller.as_ref()?.state.get(key)?;
        v.is_finite().then_some(v)
    })
}

/// What `pick` reads (e.g. `|s| Some(s.totals.counters.terminated as f64)`) from the stage
/// named `stage` in each sample: `(t_s, value)`.
pub fn stage_series(
    samples: &[Sample],
    stage: &str,
    pick: impl Fn(&StageSnapshot) -> Option<f64>,
) -> Vec<(f64, f64)> {
    samples
        .iter()
        .filter_map(|s| Some((s.t_s, pick(s.stage(stage)?)?)))
        .collect()
}

/// What `pick` reads (e.g. `|p| p.sizing.throughput_per_s`) from the pool named `pool` in each
/// sample: `(t_s, value)`.
pub fn pool_series(
    samples: &[Sample],
    pool: &str,
    pick: impl Fn(&PoolSnapshot) -> Option<f64>,
) -> Vec<(f64, f64)> {
    samples
        .iter()
        .filter_map(|s| {
            let runtime = s.stats.runtime.as_ref()?;
            let p = runtime.pools.iter().find(|p| p.name == pool)?;
            Some((s.t_s, pick(p)?))
        })
        .collect()
}

/// A counter of the stats' `totals` picked by `counter` (`|c| c.arrivals`...) of the stage
/// named `stage`, or with `None` summed over the stages that have a queue (an inline stage,
/// such as the e-mail service's route, only passes requests on to them), as a rate per second
/// between consecutive samples: `(t_s, per_s)` at the end of each gap.
pub fn stage_rate(
    samples: &[Sample],
    stage: Option<&str>,
    counter: impl Fn(&CounterSnapshot) -> u64,
) -> Vec<(f64, f64)> {
    let total = |s: &Sample| -> Option<f64> {
        s.stats.runtime.as_ref()?;
        Some(
            s.stages()
                .iter()
                .filter(|x| match stage {
                    Some(name) => x.name == name,
                    None => is_queued(x),
                })
                .map(|x| counter(&x.totals.counters) as f64)
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

/// The stages of a stats document (none without a runtime).
fn stages(stats: &StatsDocument) -> &[StageSnapshot] {
    stats.runtime.as_ref().map_or(&[], |r| r.stages.as_slice())
}

/// Whether a stage queues its events: the inline route stage only passes requests on, so
/// counting it beside the others would count each request twice.
fn is_queued(stage: &StageSnapshot) -> bool {
    stage.mode != "inline"
}

/// The requests a server has admitted and not yet finished (completed, terminated, failed or
/// dropped), summed over its queued stages (`None`: the server shows no runtime).
pub fn outstanding(stats: &StatsDocument) -> Option<u64> {
    let runtime = stats.runtime.as_ref()?;
    let unfinished = |c: &CounterSnapshot| {
        let done = c.completed + c.terminated + c.failed + c.dropped_total;
        c.admitted.saturating_sub(done)
    };
    Some(
        runtime
            .stages
            .iter()
            .filter(|s| is_queued(s))
            .map(|s| unfinished(&s.totals.counters))
            .sum(),
    )
}

/// Waits, up to `limit`, until the server at `admin` holds no admitted request unfinished;
/// returns how long that took (`None`: still busy, or not answering, at the limit).
pub fn wait_until_idle(admin: SocketAddr, limit: Duration) -> Option<Duration> {
    let start = Instant::now();
    while start.elapsed() < limit {
        if admin::stats(admin).ok().as_ref().and_then(outstanding) == Some(0) {
            return Some(start.elapsed());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A document of a real runtime's stages `inline`, `a` and `b`, with the counters set.
    fn document(counters: [(u64, u64); 3]) -> StatsDocument {
        let rt = seda::Runtime::start().expect("runtime");
        for name in ["inline", "a", "b"] {
            let stage = seda::Stage::builder(name);
            let stage = if name == "inline" {
                stage.inline()
            } else {
                stage
            };
            rt.stage(stage.handler(seda::handler::each(|_: u64, _| {})))
                .expect("stage");
        }
        let mut runtime = rt.stats();
        rt.shutdown();
        for (s, (admitted, completed)) in runtime.stages.iter_mut().zip(counters) {
            let c = &mut s.totals.counters;
            (c.admitted, c.completed) = (admitted, completed);
            (c.terminated, c.failed, c.dropped_total) = (1, 1, 1);
        }
        StatsDocument {
            frontend: None,
            runtime: Some(runtime),
            service: None,
            layers: None,
        }
    }

    #[test]
    fn outstanding_counts_what_queued_stages_admitted_and_did_not_finish() {
        let stats = document([(100, 0), (20, 12), (5, 2)]);
        assert_eq!(stats.runtime.as_ref().unwrap().stages[0].mode, "inline");
        assert_eq!(outstanding(&stats), Some(5));
        let none = StatsDocument {
            runtime: None,
            ..stats
        };
        assert_eq!(outstanding(&none), None);
    }

    #[test]
    fn a_rate_is_the_counters_increase_per_second_of_queued_stages() {
        let samples = [
            (0.0, document([(0, 0), (10, 0), (0, 0)])),
            (2.0, document([(50, 0), (30, 0), (10, 0)])),
        ]
        .map(|(t_s, stats)| Sample { t_s, stats });
        assert_eq!(
            stage_rate(&samples, None, |c| c.admitted),
            vec![(2.0, 15.0)]
        );
        assert_eq!(
            stage_rate(&samples, Some("b"), |c| c.admitted),
            vec![(2.0, 5.0)]
        );
        let admitted = stage_series(&samples, "a", |s| Some(s.totals.counters.admitted as f64));
        assert_eq!(admitted, vec![(0.0, 10.0), (2.0, 30.0)]);
    }
}
