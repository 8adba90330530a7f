//! `static-sweep` (SEDA01; SOSP'01 Figure 8 and its table): the SPECweb99 static mix from 1
//! to 1024 closed-loop clients against our static server, nginx, Apache with a fixed pool of
//! 150 processes, and lighttpd. Throughput, mean and max response time, and Jain's fairness
//! over the clients' completed requests.
//!
//! All servers are started once, up front, and the client counts are swept in ascending order,
//! each point with its own warm-up: restarting per point would repay Apache's 150 forks and a
//! cold cache every time, which is not what a steady state at N clients measures; the first
//! round warms up longer to fill the caches. At each client count the servers take their turn
//! one after the other (an idle server costs nothing), so that a burst of other work on this
//! shared machine falls on one point rather than on one server's whole sweep. A point during
//! which the server or the generator lost more than a fifth of a core to other programs is
//! run again once, time permitting, and the less disturbed try is kept (both are reported). Servers run on one core
//! (CPU 0) and the load generator on the other.

mod checks;
mod cpu;
mod fileset;
mod paper;
mod point;
mod report;
mod servers;

use std::time::{Duration, Instant};

use anyhow::Result;
use serde_json::{Value, json};

use crate::lab::Lab;
use crate::outcome::Outcome;
use crate::plot::{LineChart, Series};
use crate::scenario::Scenario;
use point::{Point, Timing};
use servers::{NotRun, Server};

/// The scenario.
pub struct StaticSweep;

/// What to run.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    /// Client counts, ascending.
    pub clients: Vec<usize>,
    /// Timing of each server's first point (a longer warm-up fills its caches).
    pub first: Timing,
    /// Timing of the other points.
    pub each: Timing,
    /// SPECweb99 directories in the file set.
    pub dirs: usize,
    /// Repeat a disturbed point only if the scenario, with the points still to run, stays
    /// within this.
    pub budget: Duration,
}

/// A point is disturbed when the server or the generator lost more than this share of a core to
/// other programs.
const DISTURBED: f64 = 0.2;

impl Plan {
    fn for_lab(lab: &Lab) -> Plan {
        let secs = Duration::from_secs_f64;
        if lab.quick {
            // Four servers x two points in under a minute; the paper's table is at 256 and 1024.
            Plan {
                clients: vec![256, 1024],
                first: Timing {
                    warmup: secs(2.0),
                    run: secs(2.5),
                },
                each: Timing {
                    warmup: secs(1.0),
                    run: secs(2.5),
                },
                dirs: 20,
                budget: secs(50.0),
            }
        } else {
            // Haboob's 680 directories (connload 1000); 6 points x 4 servers in about 8 minutes.
            Plan {
                clients: vec![1, 4, 16, 64, 256, 1024],
                first: Timing {
                    warmup: secs(8.0),
                    run: secs(15.0),
                },
                each: Timing {
                    warmup: secs(3.0),
                    run: secs(15.0),
                },
                dirs: 680,
                budget: secs(560.0),
            }
        }
    }
}

impl Scenario for StaticSweep {
    fn name(&self) -> &'static str {
        "static-sweep"
    }

    fn about(&self) -> &'static str {
        "SPECweb99 static files, 1 to 1024 closed-loop clients: ours vs nginx, Apache (150 \
         processes) and lighttpd; throughput, mean/max response time, fairness (SEDA01, SOSP'01 \
         Figure 8)"
    }

    /// At the largest client count. Not the mean response time: with closed clients that think
    /// 20 ms it is the small remainder of a cycle (`clients / throughput` = 20 ms of think time +
    /// the response + the generator's own lateness, 22-25 ms here), so it moves several times
    /// as much as the throughput it follows (a set of 5 quick runs on 2026-12-05: throughput 9%
    /// apart, mean response 58%). It adds little the throughput does not say, and stays in the
    /// summary and the report.
    fn headline(&self) -> &'static [&'static str] {
        &[
            "seda/throughput_per_s",
            "seda/throughput_per_cpu_s",
            "seda/fairness",
        ]
    }

    fn run(&self, lab: &Lab) -> Result<Outcome> {
        let started = Instant::now();
        let plan = Plan::for_lab(lab);
        let root = fileset::ensure(lab, plan.dirs)?;
        let (running, skipped) = start_all(lab, &root)?;
        let mut points: Vec<Point> = Vec::new();
        let mut disturbed: Vec<Point> = Vec::new();
        let mut left = plan.clients.len() * running.len();
        for (i, &clients) in plan.clients.iter().enumerate() {
            let t = if i == 0 { plan.first } else { plan.each };
            for (server, r) in &running {
                let target = (r.addr, r.child.pid());
                let mut p = point::run(lab, server.name(), target, clients, plan.dirs, t)?;
                left -= 1;
                let to_come = (plan.each.warmup + plan.each.run) * left as u32;
                let room = started.elapsed() + t.warmup + t.run + to_come < plan.budget;
                if p.disturbance() > DISTURBED && room {
                    lab.log(format!(
                        "lost {:.0}% of a core to other programs: running the point again",
                        p.disturbance() * 100.0
                    ));
                    let mut again = point::run(lab, server.name(), target, clients, plan.dirs, t)?;
                    again.repeated = true;
                    if again.disturbance() < p.disturbance() {
                        std::mem::swap(&mut p, &mut again);
                    }
                    disturbed.push(again);
                }
                points.push(p);
            }
        }
        for (_, r) in running {
            r.child.stop();
        }
        plots(lab, &points)?;
        let ran: Vec<Server> = Server::ALL
            .into_iter()
            .filter(|s| points.iter().any(|p| p.server == s.name()))
            .collect();
        let kept_disturbed = points
            .iter()
            .filter(|p| p.disturbance() > DISTURBED)
            .count();
        Ok(Outcome {
            paper: "SEDA01 (SEDA slides: Haboob vs Apache and Flash); SOSP'01 Figure 8 and its \
                    table at 256 and 1024 clients"
                .into(),
            config: json!({
                "clients": plan.clients,
                "first_point": plan.first,
                "other_points": plan.each,
                "think_ms": point::THINK.as_millis() as u64,
                "requests_per_connection": point::REQUESTS_PER_CONNECTION,
                "client_deadline_s": point::DEADLINE.as_secs(),
                "workload": "SPECweb99 static mix, original HttpLoad file mix (file 0 never requested)",
                "fileset_dirs": plan.dirs,
                "fileset_bytes": fileset::bytes(plan.dirs),
                "servers": ran.iter().map(|s| json!({"name": s.name(), "config": s.describe()})).collect::<Vec<_>>(),
                "skipped": skipped.iter().map(|(n, why)| json!({"name": n, "reason": why})).collect::<Vec<_>>(),
                "server_cpu": lab.server_cpu,
                "load_cpu": lab.load_cpu,
                "disturbed_above": DISTURBED,
            }),
            summary: checks::summary(&points, &plan),
            data: json!({ "points": points, "set_aside": disturbed }),
            checks: checks::checks(&points, &plan, lab.quick),
            report: report::report(&points, &plan, &ran, &skipped, lab.quick)
                + &report::disturbance(&points, disturbed.len(), kept_disturbed, DISTURBED),
        })
    }
}

/// A server that started.
type Started = (Server, servers::Running);
/// A server that did not, and why.
type Skipped = (String, String);

/// Starts every server: ours must start; a peer that is missing or fails is skipped with the
/// reason.
fn start_all(lab: &Lab, root: &std::path::Path) -> Result<(Vec<Started>, Vec<Skipped>)> {
    let mut running = Vec::new();
    let mut skipped = Vec::new();
    for server in Server::ALL {
        match servers::start(lab, server, root) {
            Ok(r) => running.push((server, r)),
            Err(NotRun::Failed(e)) if server == Server::Seda => return Err(e),
            Err(NotRun::Missing(absent)) => {
                skipped.push((server.name().to_string(), lab.skip(absent)?))
            }
            Err(NotRun::Skip(why)) => skipped.push((server.name().to_string(), why)),
            Err(NotRun::Failed(e)) => {
                skipped.push((server.name().to_string(), format!("did not start: {e:#}")))
            }
        }
    }
    for (name, why) in &skipped {
        lab.log(format!("skipping {name}: {why}"));
    }
    Ok((running, skipped))
}

/// Throughput, mean and max response time, and fairness against clients (log2 axis).
fn plots(lab: &Lab, points: &[Point]) -> Result<()> {
    let series = |y: fn(&Point) -> f64| -> Vec<Series> {
        Server::ALL
            .iter()
            .map(|s| Series {
                name: s.name().into(),
                points: points
                    .iter()
                    .filter(|p| p.server == s.name())
                    .map(|p| ((p.clients as f64).log2(), y(p)))
                    .collect(),
            })
            .filter(|s| !s.points.is_empty())
            .collect()
    };
    let x_label = "clients (log2: 0 = 1, 8 = 256, 10 = 1024)".to_string();
    type Metric = fn(&Point) -> f64;
    let charts: [(&str, &str, &str, Metric); 4] = [
        (
            "throughput",
            "throughput, SPECweb99 static mix",
            "requests/s",
            |p| p.throughput_per_s,
        ),
        ("mean_response", "mean response time", "ms", |p| {
            p.mean_response_s * 1e3
        }),
        ("max_response", "max response time", "ms", |p| {
            p.max_response_s * 1e3
        }),
        (
            "fairness",
            "Jain's fairness over clients' completed requests",
            "index",
            |p| p.fairness,
        ),
    ];
    for (stem, title, y_label, y) in charts {
        lab.plot(
            stem,
            &LineChart {
                title: title.into(),
                x_label: x_label.clone(),
                y_label: y_label.into(),
                series: series(y),
            },
        )?;
    }
    Ok(())
}

/// A figure for JSON: `null` when not a number.
pub(crate) fn num(x: f64) -> Value {
    if x.is_finite() { json!(x) } else { Value::Null }
}
