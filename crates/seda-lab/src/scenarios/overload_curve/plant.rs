//! The plant of `overload-curve`: the hold service on emulated cores, whose capacity is stated
//! before the run, the request mix it serves, and the loads that drive it.
//!
//! `GET /hold?us=N&cores=2` is N µs of work on 2 emulated cores: while more than two holds run,
//! each progresses at `2 / running` of real time ([`seda_testbed::bottleneck::hold`]). The stage
//! has [`WORKERS`] threads, twice the cores, so past two requests in service they share the
//! cores as threads share a CPU, and a request's service time grows with the busy workers. The
//! holds are sleeps: the server's real CPU is its front end's and its runtime's, a few percent of
//! a core at the highest load, and the capacity is [`CORES`] / mean hold whatever else the
//! machine runs (a loaded machine only adds its timer's slack to each hold).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use seda::{AdmissionConfig, StageConfig};
use seda_load::workload::{Reply, Request, Session, Workload};
use seda_load::{Arrivals, ClientConfig, LoadConfig, Model, Open, Target};
use seda_testbed::bottleneck::{BottleneckConfig, BottleneckServeConfig, STAGE};

use crate::child::Child;
use crate::hold::TICK_MS;
use crate::lab::Lab;

/// Emulated cores the holds share.
pub(super) const CORES: f64 = 2.0;
/// Worker threads of the stage: two per emulated core, as a thread pool oversubscribes a CPU.
pub(super) const WORKERS: usize = 4;
/// The short request's hold.
pub(super) const SHORT: Duration = Duration::from_millis(5);
/// The long request's hold.
pub(super) const LONG: Duration = Duration::from_millis(30);
/// The long requests' share of the mix. A fifth, so that the service time's p90 and p99 are
/// both the long hold: a controller steering the p90 of response time then has no tail beyond
/// it in the service time itself, only in the queueing it governs (with one long request in a
/// hundred, the p99 would be a long hold and the p90 a short one, and no p90 setpoint would
/// say anything about the p99 the claims are about).
pub(super) const LONG_SHARE: f64 = 0.2;
/// The response-time target: 25 x the mean hold (10 ms). Breakwater sets its SLO at 10 x the
/// service time for microsecond RPCs; here the long request alone takes 60 ms once four
/// workers share the two cores, and a target of 100 ms would leave a queue of two long holds'
/// worth. Without any control the service's p99 at 0.8 x capacity was 118-119 ms in the
/// first quick runs, so a controller need not turn anyone away below capacity to meet 250 ms.
pub(super) const TARGET: Duration = Duration::from_millis(250);

/// How the capacity is known, for the result.
pub(super) const CAPACITY_NOTE: &str = "stated, not measured: 2 emulated cores over the mean \
    hold of 10 ms (0.8 x 5 ms + 0.2 x 30 ms); goodput / capacity is requests answered within \
    the target per second over 200/s";

/// The mean hold, seconds.
pub(super) fn mean_hold_s() -> f64 {
    (1.0 - LONG_SHARE) * SHORT.as_secs_f64() + LONG_SHARE * LONG.as_secs_f64()
}

/// The designed capacity, requests/s: cores over the mean hold (200/s).
pub(super) fn capacity_per_s() -> f64 {
    CORES / mean_hold_s()
}

/// The hold of each class of [`Mix`], seconds, in class order.
pub(super) const HOLDS_S: [f64; 2] = [0.005, 0.030];

/// The share of the emulated cores' time over `secs` that went to the requests of each class
/// `good` counts (class order): goodput priced in the plant's own work. Counted in requests,
/// goodput moves with the mix a span happened to answer (a second and a half of the quick
/// form answers about 300 requests, whose long share varies by 2 to 3 points from run to run
/// and controller to controller, about 6% of the capacity in requests); priced in work, a
/// saturated plant reads 1 whatever mix it served.
pub(super) fn work_fraction(good: &[u64], secs: f64) -> f64 {
    let work: f64 = good.iter().zip(HOLDS_S).map(|(&n, h)| n as f64 * h).sum();
    work / (CORES * secs)
}

/// The mix of short and long holds on the emulated cores.
#[derive(Debug, Clone)]
pub(super) struct Mix;

impl Workload for Mix {
    fn classes(&self) -> Vec<String> {
        vec![
            format!("short_{}ms", SHORT.as_millis()),
            format!("long_{}ms", LONG.as_millis()),
        ]
    }

    fn session(&self, seed: u64) -> Box<dyn Session> {
        let path = |d: Duration| -> Arc<str> {
            format!("/hold?us={}&cores={CORES}", d.as_micros()).into()
        };
        Box::new(MixSession {
            paths: [path(SHORT), path(LONG)],
            // A state of its own. The open model's pacer draws its gaps from a generator seeded
            // with the run's seed, and its one session gets the same seed: a `UrlList` of
            // several URLs then picks each request's URL from the draw that timed it, and the
            // URL listed last always came after the longest gaps (at 1.5 x capacity with a
            // queue bound of 15, 81% of the long requests were admitted against 48% of the short
            // ones; from two generators, one per URL, 65% and 63%).
            state: seed ^ 0x6a09_e667_f3bc_c909,
        })
    }
}

struct MixSession {
    paths: [Arc<str>; 2],
    state: u64,
}

impl Session for MixSession {
    fn next_request(&mut self, _last: Option<&Reply<'_>>) -> Request {
        let class = usize::from(crate::hold::uniform(&mut self.state) < LONG_SHARE);
        Request::get(self.paths[class].clone(), class)
    }
}

/// The server's configuration: the plant, unbounded queue, and `admission` (a catalogue name
/// and its parameters) if any.
pub(super) fn config(admission: Option<(&str, &BTreeMap<String, f64>)>) -> BottleneckServeConfig {
    let mut config = BottleneckServeConfig {
        bottleneck: BottleneckConfig {
            threads: WORKERS,
            work_kb: 4.0,
            base_kb: 4.0,
            ..BottleneckConfig::default()
        },
        ..BottleneckServeConfig::default()
    };
    config.runtime.runtime.tick_ms = TICK_MS;
    // Batch 1: a worker takes one request at a time. No queue bound (`threshold = 0`): what
    // turns requests away is the controller, or nothing.
    let stage = StageConfig {
        batch: Some(1),
        threshold: Some(0),
        admission: admission.map(|(kind, params)| AdmissionConfig {
            kind: kind.to_string(),
            params: params.clone(),
        }),
        ..StageConfig::default()
    };
    config.runtime.stages.insert(STAGE.to_string(), stage);
    config
}

/// A running hold service.
#[derive(Debug)]
pub(super) struct Server {
    /// Where it listens.
    pub addr: SocketAddr,
    /// Its admin address.
    pub admin: SocketAddr,
    child: Child,
}

impl Server {
    /// Starts `seda serve bottleneck` as `name` with `config`.
    pub fn start(lab: &Lab, name: &str, config: &BottleneckServeConfig) -> Result<Server> {
        let (addr, admin, child) = crate::bottleneck::spawn_configured(lab, name, config)?;
        Ok(Server { addr, admin, child })
    }

    /// Stops it.
    pub fn stop(self) {
        self.child.stop();
    }
}

/// The load generator's reporting interval: points are measured over whole intervals.
pub(super) const INTERVAL: Duration = Duration::from_millis(250);

/// Open Poisson arrivals of the mix at `rate_per_s` to `server` for `run_s`, every request
/// recorded (no warm-up: the caller measures the intervals it wants), per-interval histograms
/// kept, goodput counted within the target, a client deadline of 30 s (no client gives up
/// within a run: what is late is counted late, not lost).
pub(super) fn open_load(server: &Server, rate_per_s: f64, run_s: f64) -> Result<LoadConfig> {
    let target = Target::parse(&format!("http://{}/hold", server.addr))?;
    let model = Model::Open(Open {
        rate_per_s,
        arrivals: Arrivals::Poisson,
        // An unbounded queue at 10 x holds every request it has not answered, each on a
        // connection of its own.
        max_connections: 20_000,
        max_backlog: 100_000,
    });
    let mut cfg = LoadConfig::new(target, model)?;
    cfg.duration = Duration::from_secs_f64(run_s);
    cfg.interval = INTERVAL;
    cfg.keep_interval_histograms = true;
    cfg.workload = Arc::new(Mix);
    cfg.goodput_target = TARGET;
    cfg.precise_pacing = true;
    cfg.client = ClientConfig {
        deadline: Duration::from_secs(30),
        ..ClientConfig::default()
    };
    Ok(cfg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_capacity_is_stated_by_the_mix() {
        assert!((mean_hold_s() - 0.010).abs() < 1e-12);
        assert!((capacity_per_s() - 200.0).abs() < 1e-9);
        assert_eq!(HOLDS_S, [SHORT.as_secs_f64(), LONG.as_secs_f64()]);
        // A second of the designed mix at capacity fills both cores; as many requests, all
        // short, half of them.
        assert!((work_fraction(&[160, 40], 1.0) - 1.0).abs() < 1e-9);
        assert!((work_fraction(&[200, 0], 1.0) - 0.5).abs() < 1e-9);
    }

    #[test]
    fn a_fifth_of_the_requests_are_long_holds_on_two_cores() {
        let mut s = Mix.session(1);
        let n = 20_000;
        let long = (0..n)
            .filter(|_| {
                let r = s.next_request(None);
                assert!(r.path.ends_with("&cores=2"), "{}", r.path);
                r.class == 1
            })
            .count();
        let share = long as f64 / n as f64;
        assert!((share - LONG_SHARE).abs() < 0.01, "{share}");
    }

    #[test]
    fn the_configuration_names_the_controller_and_no_queue_bound() {
        let p = BTreeMap::from([("target_s".to_string(), 0.25)]);
        let c = config(Some(("response_time_tuned", &p)));
        let text = c.to_toml().expect("a TOML form");
        let read = BottleneckServeConfig::from_toml(&text).expect("the server reads it");
        let stage = &read.runtime.stages[STAGE];
        assert_eq!(stage.threshold, Some(0), "{text}");
        let admission = stage.admission.as_ref().expect("a controller");
        assert_eq!(admission.kind, "response_time_tuned");
        assert_eq!(admission.params, p);
        assert_eq!(read.bottleneck.threads, WORKERS);
        assert!(config(None).runtime.stages[STAGE].admission.is_none());
    }
}
