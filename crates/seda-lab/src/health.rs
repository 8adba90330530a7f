//! Whether a run measured the system or the machine: the CPU the server processes got on
//! their pinned core, what other processes took from that core and from the load generator's,
//! how late the load generator's core woke a sleeper, and the completions of every second.
//!
//! Every load a scenario drives ([`Lab::load`](crate::Lab::load)) is watched. A run is
//! *loaded* only on evidence that cannot come from the system under test itself: other
//! processes (not the servers, not this process, not the services the servers rely on, such
//! as the lab's PostgreSQL: [`Watched::service_pids`]) busy on the server's core for a fifth of the
//! run or most of some second, or on the load generator's core for a third of the run. On a quiet
//! machine none of these happen whatever the server does, so a real failure there stays a
//! failure; on a loaded one the verdict is "loaded: inconclusive" rather than a wrong pass or
//! fail.
//!
//! On a virtual machine the host can take a core away with nothing else running in the guest:
//! `/proc/stat` counts that as the core's *steal*. It counts with the others' share (the core
//! did not run what this lab asked of it) and is named apart in the reasons and the report, so
//! that a run the host slowed says so: on 2026-12-03, 9 of 34 quick runs here were marked
//! loaded by others on the generator's core, and a per-second reading of `/proc/stat` beside a
//! later run found its worst seconds' others (34-38% of the core) to be the hypervisor's steal
//! (31-33%), not a process.
//!
//! Nothing the system under test does can mark a run loaded: not its own speed, not its
//! calibrations (the experiments state their capacity before the run instead of measuring
//! it), not the kernel's interrupt work its traffic causes (`irq` and `softirq` in
//! `/proc/stat` are left out of the others' share), not a late wake-up on the generator's core
//! (reported, never a reason). A change that doubles a handler's cost fails the run; it cannot
//! excuse it.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use seda_load::Report;
use serde::Serialize;

/// Others' share of the server's core over a whole load that marks it loaded.
pub const SERVER_CORE_OTHERS_RUN: f64 = 0.2;
/// Others' share of the server's core in any one second that marks it loaded.
pub const SERVER_CORE_OTHERS_SECOND: f64 = 0.6;
/// Others' share of the load generator's core over a whole load that marks it loaded.
pub const LOAD_CORE_OTHERS_RUN: f64 = 0.33;
const TICK: Duration = Duration::from_millis(100);

/// One second of a watched load.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq)]
pub struct Second {
    /// Seconds from the start of the load.
    pub t_s: f64,
    /// CPU seconds the server processes used in it, per second.
    pub server_cpu_share: f64,
    /// CPU seconds other processes used on the server's core, per second, the hypervisor's
    /// steal included.
    pub server_core_others_share: f64,
    /// The part of `server_core_others_share` the hypervisor took (steal).
    pub server_core_steal_share: f64,
    /// CPU seconds other processes used on the generator's core, per second, the hypervisor's
    /// steal included.
    pub load_core_others_share: f64,
    /// The part of `load_core_others_share` the hypervisor took (steal).
    pub load_core_steal_share: f64,
    /// CPU seconds the services of [`Watched::service_pids`] ran on the two cores, per
    /// second: left out of both others' shares.
    pub services_cpu_share: f64,
    /// The latest a 100 ms sleeper on the generator's core woke, in ms past its time.
    pub worst_lag_ms: f64,
}

/// What one load's watch saw, and its verdict.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct LoadHealth {
    /// Which load (`lab.load` calls, numbered in order, with the load's model).
    pub label: String,
    /// Wall seconds watched.
    pub duration_s: f64,
    /// The servers' CPU over the run's wall time (1: a whole core).
    pub server_cpu_share: f64,
    /// Other processes' CPU on the server's core over the run's wall time, the hypervisor's
    /// steal included.
    pub server_core_others_share: f64,
    /// The part of it the hypervisor took (steal).
    pub server_core_steal_share: f64,
    /// The same in the worst second.
    pub worst_second_server_core_others_share: f64,
    /// The hypervisor's part of that second.
    pub worst_second_server_core_steal_share: f64,
    /// Other processes' CPU on the generator's core over the run's wall time, the hypervisor's
    /// steal included.
    pub load_core_others_share: f64,
    /// The part of it the hypervisor took (steal).
    pub load_core_steal_share: f64,
    /// The load generator's core's worst wake-up lag, ms.
    pub worst_lag_ms: f64,
    /// Requests completed in each of the load generator's 1 s intervals.
    pub completions_per_s: Vec<u64>,
    /// Intervals in which nothing completed.
    pub seconds_without_completions: usize,
    /// Why it counts as loaded (empty: it does not).
    pub loaded_because: Vec<String>,
    /// The per-second samples.
    pub seconds: Vec<Second>,
}

impl LoadHealth {
    /// Assesses `seconds` (and fills in the totals) for a load labelled `label`.
    pub fn assess(label: String, seconds: Vec<Second>, report: Option<&Report>) -> LoadHealth {
        let n = seconds.len().max(1) as f64;
        let mean = |f: fn(&Second) -> f64| seconds.iter().map(f).sum::<f64>() / n;
        let max = |f: fn(&Second) -> f64| seconds.iter().map(f).fold(0.0, f64::max);
        let worst = seconds
            .iter()
            .max_by(|a, b| {
                a.server_core_others_share
                    .total_cmp(&b.server_core_others_share)
            })
            .copied()
            .unwrap_or_default();
        let mut h = LoadHealth {
            label,
            duration_s: seconds.len() as f64,
            server_cpu_share: mean(|s| s.server_cpu_share),
            server_core_others_share: mean(|s| s.server_core_others_share),
            server_core_steal_share: mean(|s| s.server_core_steal_share),
            worst_second_server_core_others_share: worst.server_core_others_share,
            worst_second_server_core_steal_share: worst.server_core_steal_share,
            load_core_others_share: mean(|s| s.load_core_others_share),
            load_core_steal_share: mean(|s| s.load_core_steal_share),
            worst_lag_ms: max(|s| s.worst_lag_ms),
            ..LoadHealth::default()
        };
        if let Some(r) = report {
            h.completions_per_s = r.series.iter().map(|i| i.counts.completed).collect();
            h.seconds_without_completions = h.completions_per_s.iter().filter(|&&c| c == 0).count();
        }
        let mut why = Vec::new();
        if h.server_core_others_share >= SERVER_CORE_OTHERS_RUN {
            why.push(format!(
                "{} the server's core (loaded from {:.0}%)",
                others_used(h.server_core_others_share, h.server_core_steal_share),
                SERVER_CORE_OTHERS_RUN * 100.0
            ));
        }
        if h.worst_second_server_core_others_share >= SERVER_CORE_OTHERS_SECOND {
            why.push(format!(
                "{} the server's core in one second (loaded from {:.0}%)",
                others_used(
                    h.worst_second_server_core_others_share,
                    h.worst_second_server_core_steal_share
                ),
                SERVER_CORE_OTHERS_SECOND * 100.0
            ));
        }
        if h.load_core_others_share >= LOAD_CORE_OTHERS_RUN {
            why.push(format!(
                "{} the load generator's core (loaded from {:.0}%)",
                others_used(h.load_core_others_share, h.load_core_steal_share),
                LOAD_CORE_OTHERS_RUN * 100.0
            ));
        }
        h.loaded_because = why;
        h.seconds = seconds;
        h
    }

    /// Whether the evidence says the machine, not the system, decided this run.
    pub fn loaded(&self) -> bool {
        !self.loaded_because.is_empty()
    }
}

/// The cores and processes a watch reads.
#[derive(Debug, Clone)]
pub struct Watched {
    /// The server processes (pinned to `server_cpu`), each with its children.
    pub server_pids: Vec<u32>,
    /// The servers' core.
    pub server_cpu: Option<usize>,
    /// The load generator's core (it runs in this process).
    pub load_cpu: Option<usize>,
    /// Services the system under test relies on that run unpinned (the lab's PostgreSQL),
    /// each with its children: their work on either core is the system's, not others'.
    pub service_pids: Vec<u32>,
}

/// A running watch: a thread on the generator's core sampling once a second.
#[derive(Debug)]
pub struct Watch {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<Vec<Second>>,
}

/// Who took `share` of a core, `steal` of it the hypervisor's: "other processes used 37% of"
/// or, where the hypervisor took any, "others used 37% (the hypervisor's steal 31%) of". On a
/// virtual machine a busy host takes the core away with nothing else running in the guest.
fn others_used(share: f64, steal: f64) -> String {
    if steal >= 0.005 {
        format!(
            "others used {:.0}% (the hypervisor's steal {:.0}%) of",
            share * 100.0,
            steal * 100.0
        )
    } else {
        format!("other processes used {:.0}% of", share * 100.0)
    }
}

/// CPU counters at one instant.
#[derive(Debug, Clone, Copy)]
struct Counters {
    at: Instant,
    server: Option<f64>,
    server_core: Option<f64>,
    server_core_steal: Option<f64>,
    load_core: Option<f64>,
    load_core_steal: Option<f64>,
    me: Option<f64>,
}

impl Counters {
    fn read(w: &Watched) -> Counters {
        let server = (!w.server_pids.is_empty()).then(|| {
            w.server_pids
                .iter()
                // With their children: a pre-forking server's workers (nginx, Apache,
                // gunicorn) are the server, not other processes.
                .filter_map(|&p| crate::procfs::process_tree_cpu_seconds(p))
                .sum::<f64>()
        });
        Counters {
            at: Instant::now(),
            server,
            server_core: w.server_cpu.and_then(crate::procfs::core_task_seconds),
            server_core_steal: w.server_cpu.and_then(crate::procfs::core_steal_seconds),
            load_core: w.load_cpu.and_then(crate::procfs::core_task_seconds),
            load_core_steal: w.load_cpu.and_then(crate::procfs::core_steal_seconds),
            me: crate::procfs::process_cpu_seconds(std::process::id()),
        }
    }

    /// The second from `self` to `later`, as shares of its wall time; `services` is what the
    /// services ran in it on the server's core and on the generator's.
    fn second(
        &self,
        later: &Counters,
        t_s: f64,
        worst_lag_ms: f64,
        services: (f64, f64),
    ) -> Second {
        let wall = later.at.duration_since(self.at).as_secs_f64().max(1e-3);
        let delta = |a: Option<f64>, b: Option<f64>| a.zip(b).map(|(a, b)| (b - a).max(0.0));
        let server = delta(self.server, later.server).unwrap_or(0.0);
        let me = delta(self.me, later.me).unwrap_or(0.0);
        // What the core did less what its own processes did: other processes' work.
        let others = |core: Option<f64>, own: f64| core.map_or(0.0, |c| (c - own).max(0.0) / wall);
        let server_core_others = others(
            delta(self.server_core, later.server_core),
            server + services.0,
        );
        let load_core_others = others(delta(self.load_core, later.load_core), me + services.1);
        // Steal is busy time no process of this guest had, so it is part of the others' share.
        let steal = |a, b, of: f64| delta(a, b).map_or(0.0, |s| (s / wall).min(of));
        Second {
            t_s,
            server_cpu_share: server / wall,
            server_core_others_share: server_core_others,
            server_core_steal_share: steal(
                self.server_core_steal,
                later.server_core_steal,
                server_core_others,
            ),
            load_core_others_share: load_core_others,
            load_core_steal_share: steal(
                self.load_core_steal,
                later.load_core_steal,
                load_core_others,
            ),
            services_cpu_share: (services.0 + services.1) / wall,
            worst_lag_ms,
        }
    }
}

/// What the services of [`Watched::service_pids`] ran on each watched core between samples,
/// each thread's run charged to the core it last ran on (a database backend the scheduler
/// keeps off the busy server core stays on the other).
#[derive(Debug, Default)]
struct Services {
    pids: Vec<u32>,
    /// Each thread's run at the last sample, seconds.
    last: HashMap<u32, f64>,
}

impl Services {
    /// CPU seconds the services ran on `server_cpu` and on `load_cpu` since the last call (a
    /// thread first seen counts from its start).
    fn since_last(&mut self, server_cpu: Option<usize>, load_cpu: Option<usize>) -> (f64, f64) {
        let mut now = HashMap::new();
        let (mut on_server, mut on_load) = (0.0, 0.0);
        for t in self
            .pids
            .iter()
            .flat_map(|&p| crate::procfs::tree_threads(p))
        {
            let ran = (t.run_s - self.last.get(&t.tid).copied().unwrap_or(0.0)).max(0.0);
            if Some(t.cpu) == server_cpu {
                on_server += ran;
            } else if Some(t.cpu) == load_cpu {
                on_load += ran;
            }
            now.insert(t.tid, t.run_s);
        }
        self.last = now;
        (on_server, on_load)
    }
}

impl Watch {
    /// Starts watching `w`.
    pub fn start(w: Watched) -> Watch {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            if let Some(cpu) = w.load_cpu {
                // Unpinned, the lag it measures would be some other core's.
                let _ = seda_load::pin_to_cpu(cpu);
            }
            let start = Instant::now();
            let mut services = Services {
                pids: w.service_pids.clone(),
                ..Services::default()
            };
            services.since_last(w.server_cpu, w.load_cpu);
            let mut last = Counters::read(&w);
            let mut worst_lag_ms = 0.0_f64;
            let mut out = Vec::new();
            while !flag.load(Ordering::Relaxed) {
                let before = Instant::now();
                std::thread::sleep(TICK);
                let late = before.elapsed().saturating_sub(TICK).as_secs_f64() * 1000.0;
                worst_lag_ms = worst_lag_ms.max(late);
                if last.at.elapsed() >= Duration::from_secs(1) {
                    let now = Counters::read(&w);
                    let ran = services.since_last(w.server_cpu, w.load_cpu);
                    let t_s = last.at.duration_since(start).as_secs_f64();
                    out.push(last.second(&now, t_s, worst_lag_ms, ran));
                    last = now;
                    worst_lag_ms = 0.0;
                }
            }
            out
        });
        Watch { stop, thread }
    }

    /// Stops and returns the seconds sampled.
    pub fn stop(self) -> Vec<Second> {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().unwrap_or_default()
    }
}

/// How a run ended, given its claims and its machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Verdict {
    /// Every enforced claim held on a machine that did not interfere.
    #[serde(rename = "pass")]
    Pass,
    /// An enforced claim failed on a machine that did not interfere.
    #[serde(rename = "fail")]
    Fail,
    /// The machine interfered: the claims' verdicts are reported but decide nothing.
    #[serde(rename = "loaded: inconclusive")]
    Inconclusive,
}

impl Verdict {
    /// The verdict of a run whose enforced claims `passed` (or not), with `loads` watched.
    pub fn of(passed: bool, loads: &[LoadHealth]) -> Verdict {
        match (loads.iter().any(LoadHealth::loaded), passed) {
            (true, _) => Verdict::Inconclusive,
            (false, true) => Verdict::Pass,
            (false, false) => Verdict::Fail,
        }
    }

    /// As `result.json` writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
            Verdict::Inconclusive => "loaded: inconclusive",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn second(server: f64, others: f64, load_others: f64, lag: f64) -> Second {
        Second {
            t_s: 0.0,
            server_cpu_share: server,
            server_core_others_share: others,
            load_core_others_share: load_others,
            worst_lag_ms: lag,
            ..Second::default()
        }
    }

    #[test]
    fn a_quiet_run_is_not_loaded_and_its_failure_stays_a_failure() {
        // A saturated server with the few percent of kernel work and stats polling a quiet
        // machine shows.
        let quiet = vec![second(0.97, 0.03, 0.05, 4.0); 12];
        let h = LoadHealth::assess("spike".into(), quiet, None);
        assert!(!h.loaded(), "{:?}", h.loaded_because);
        assert_eq!(Verdict::of(false, std::slice::from_ref(&h)), Verdict::Fail);
        assert_eq!(Verdict::of(true, &[h]), Verdict::Pass);
    }

    #[test]
    fn a_stall_or_a_hog_makes_the_run_inconclusive_and_a_lag_does_not() {
        let mut stalled = vec![second(0.97, 0.03, 0.05, 4.0); 12];
        stalled[5] = second(0.1, 0.9, 0.0, 4.0);
        let h = LoadHealth::assess("stall".into(), stalled, None);
        assert!(h.loaded());
        assert_eq!(Verdict::of(false, &[h]), Verdict::Inconclusive);
        let shared = vec![second(0.5, 0.5, 0.0, 4.0); 12];
        assert!(LoadHealth::assess("hog".into(), shared, None).loaded());
        // A late wake-up on the generator's core is reported, never a reason: the system
        // under test could cause it.
        let lagged = vec![second(0.97, 0.0, 0.0, 400.0); 2];
        let h = LoadHealth::assess("lag".into(), lagged, None);
        assert!(!h.loaded() && h.worst_lag_ms == 400.0, "{h:?}");
        let generator = vec![second(0.97, 0.0, 0.5, 4.0); 4];
        assert!(LoadHealth::assess("gen".into(), generator, None).loaded());
    }

    #[test]
    fn the_hypervisors_steal_is_named_in_the_reason() {
        let stolen = Second {
            load_core_steal_share: 0.3,
            ..second(0.97, 0.0, 0.4, 4.0)
        };
        let h = LoadHealth::assess("steal".into(), vec![stolen; 4], None);
        assert!((h.load_core_steal_share - 0.3).abs() < 1e-9);
        assert_eq!(
            h.loaded_because,
            [
                "others used 40% (the hypervisor's steal 30%) of the load generator's core (loaded \
              from 33%)"
            ]
        );
        let hog = LoadHealth::assess("hog".into(), vec![second(0.97, 0.0, 0.4, 4.0); 4], None);
        assert_eq!(
            hog.loaded_because,
            ["other processes used 40% of the load generator's core (loaded from 33%)"]
        );
    }
}
