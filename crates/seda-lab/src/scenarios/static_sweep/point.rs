//! One point of the sweep: N closed-loop SPECweb99 clients against one server.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use seda_load::workload::SpecWeb;
use seda_load::{ClientConfig, Closed, LoadConfig, Model, Report, Target};
use serde::Serialize;

use super::cpu::{Mark, Usage};
use crate::lab::Lab;

/// Haboob's client: a fixed 20 ms think time (`REQUESTDELAY=20`, SPECWEB99).
pub const THINK: Duration = Duration::from_millis(20);
/// Haboob's client closes a connection after 5 requests (`MAX_REQS_PER_CONN`; we take 5, not
/// the 6 its off-by-one gives).
pub const REQUESTS_PER_CONNECTION: u32 = 5;
/// Longer than any run, so no response is cut off as a timeout: a request still unanswered at
/// the end is counted as in flight. The connect time is part of the response time, so a SYN
/// retransmission (1 s, 3 s, ...) shows in it, as in the paper's combined time.
pub const DEADLINE: Duration = Duration::from_secs(120);

/// How long each point runs.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Timing {
    /// Load applied first, not recorded.
    #[serde(serialize_with = "secs")]
    pub warmup: Duration,
    /// The measured run.
    #[serde(serialize_with = "secs")]
    pub run: Duration,
}

fn secs<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

/// What one point measured.
#[derive(Debug, Clone, Serialize)]
pub struct Point {
    /// The server's name.
    pub server: String,
    /// Closed-loop clients.
    pub clients: usize,
    /// Length of the measured run.
    pub duration_s: f64,
    /// Requests sent.
    pub sent: u64,
    /// Responses below 500.
    pub completed: u64,
    /// 503s.
    pub rejected: u64,
    /// Requests past the deadline.
    pub timeouts: u64,
    /// Connection and protocol failures, 5xx other than 503.
    pub errors: u64,
    /// Requests still unanswered when the run ended.
    pub in_flight_at_end: u64,
    /// Errors by kind.
    pub error_kinds: BTreeMap<String, u64>,
    /// Completed requests per second.
    pub throughput_per_s: f64,
    /// Body megabits per second (the paper's unit).
    pub mbit_per_s: f64,
    /// Mean response time of completed requests (connect included).
    pub mean_response_s: f64,
    /// Median.
    pub p50_response_s: f64,
    /// 90th percentile.
    pub p90_response_s: f64,
    /// 99th percentile.
    pub p99_response_s: f64,
    /// Longest response.
    pub max_response_s: f64,
    /// Jain's index over the clients' completed requests.
    pub fairness: f64,
    /// Share of a core the server's processes used over the measured run (from the end of
    /// the warm-up, to within the few milliseconds the generator takes to start).
    pub server_cpu: f64,
    /// Share of a core the load generator used over the run (near 1: the figures may be its
    /// limit).
    pub load_generator_cpu: f64,
    /// Share of the run the server's threads were ready but waiting for a core (summed).
    pub server_waited: f64,
    /// Share of the server's core other programs used.
    pub others_on_server_core: f64,
    /// Share of the generator's core other programs used.
    pub others_on_load_core: f64,
    /// Share of the point every runnable task of the machine was stalled on I/O.
    pub io_stalled: f64,
    /// Share of a core the server or the generator lost to other programs
    /// ([`Usage::lost_to_others`]): a loaded machine disturbs the point.
    pub lost_to_others: f64,
    /// Whether this is a second try, after the first was disturbed by other programs.
    pub repeated: bool,
}

impl Point {
    fn of(server: &str, clients: usize, r: &Report, cpu: Usage) -> Point {
        let s = &r.summary;
        let c = &s.counts;
        let d = s.duration_s.max(1e-9);
        Point {
            server: server.to_string(),
            clients,
            duration_s: s.duration_s,
            sent: c.sent,
            completed: c.completed,
            rejected: c.rejected,
            timeouts: c.timeouts,
            errors: c.errors,
            in_flight_at_end: s.in_flight_at_end,
            error_kinds: s.error_kinds.clone(),
            throughput_per_s: s.throughput_per_s,
            mbit_per_s: c.bytes as f64 * 8.0 / 1e6 / d,
            mean_response_s: s.latency.mean_ms / 1e3,
            p50_response_s: s.latency.p50_ms / 1e3,
            p90_response_s: s.latency.p90_ms / 1e3,
            p99_response_s: s.latency.p99_ms / 1e3,
            max_response_s: s.latency.max_ms / 1e3,
            fairness: s.jain_completed.unwrap_or(f64::NAN),
            server_cpu: cpu.server,
            load_generator_cpu: cpu.generator,
            server_waited: cpu.server_waited,
            others_on_server_core: cpu.others_on_server_core,
            others_on_load_core: cpu.others_on_load_core,
            io_stalled: cpu.io_stalled,
            lost_to_others: cpu.lost_to_others(),
            repeated: false,
        }
    }

    /// Requests per CPU-second the server's processes used: its throughput with the share of
    /// the core other programs took factored out (NaN when it used under 1% of a core).
    pub fn throughput_per_cpu_s(&self) -> f64 {
        if self.server_cpu >= 0.01 {
            self.throughput_per_s / self.server_cpu
        } else {
            f64::NAN
        }
    }

    /// Errors, timeouts and requests unanswered at the end, as `e / t / u` (the report's
    /// column and the progress line).
    pub fn failures(&self) -> String {
        format!(
            "{} / {} / {}",
            self.errors, self.timeouts, self.in_flight_at_end
        )
    }

    /// The CPU the server used, the load generator used, and other programs took, as shares
    /// of a core `s% / g% / o%` (the report's column and the progress line).
    pub fn cpu_shares(&self) -> String {
        format!(
            "{:.0}% / {:.0}% / {:.0}%",
            self.server_cpu * 100.0,
            self.load_generator_cpu * 100.0,
            self.lost_to_others * 100.0
        )
    }

    /// How much of a core other programs took from the server or the generator.
    pub fn disturbance(&self) -> f64 {
        self.lost_to_others
    }

    /// Whether every request sent was answered (none failed or timed out).
    pub fn clean(&self) -> bool {
        self.completed > 0 && self.errors == 0 && self.timeouts == 0
    }
}

/// The closed-loop SPECweb99 load of Haboob's client against `addr`.
pub fn config(addr: SocketAddr, clients: usize, dirs: usize, t: Timing) -> Result<LoadConfig> {
    let target = Target::parse(&format!("http://{addr}/"))?;
    let model = Model::Closed(Closed {
        users: clients,
        think: THINK,
        think_exponential: false,
        ramp: Duration::ZERO,
    });
    let mut cfg = LoadConfig::new(target, model)?;
    // The original client's mix (file 0 never requested), as the paper measured.
    cfg.workload = Arc::new(SpecWeb::original_file_mix("", dirs)?);
    cfg.duration = t.run;
    cfg.warmup = t.warmup;
    cfg.client = ClientConfig {
        requests_per_connection: REQUESTS_PER_CONNECTION,
        connect_timeout: DEADLINE,
        deadline: DEADLINE,
        ..ClientConfig::default()
    };
    Ok(cfg)
}

/// Runs one point against the server whose parent is `pid`, and records it.
pub fn run(
    lab: &Lab,
    server: &str,
    (addr, pid): (SocketAddr, u32),
    clients: usize,
    dirs: usize,
    t: Timing,
) -> Result<Point> {
    let cfg = config(addr, clients, dirs, t)?;
    // CPU over the measured run only, as the throughput is: the warm-up opens every
    // connection, which costs a server more than the steady state does.
    let mark = || Mark::now(pid, lab.server_cpu, lab.load_cpu);
    let (start, report) = std::thread::scope(|s| {
        let start = s.spawn(|| {
            std::thread::sleep(t.warmup);
            mark()
        });
        let report = lab.load(cfg);
        (start.join(), report)
    });
    let start = start.map_err(|_| anyhow::anyhow!("reading the CPU counters panicked"))?;
    let report = report?;
    let usage = start.usage(&mark());
    let p = Point::of(server, clients, &report, usage);
    lab.log(format!(
        "{server:>8} {clients:>5} clients: {:>6.0} req/s {:>6.0} Mbit/s  mean {:>6.1} ms  max \
         {:>7.1} ms  fairness {:.3}  errors / timeouts / open {}  cpu: server / generator / lost \
         to others {}",
        p.throughput_per_s,
        p.mbit_per_s,
        p.mean_response_s * 1e3,
        p.max_response_s * 1e3,
        p.fairness,
        p.failures(),
        p.cpu_shares()
    ));
    Ok(p)
}
