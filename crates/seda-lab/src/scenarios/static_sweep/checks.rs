//! The headline figures at the largest client count, the paper's claims checked, and the
//! project's goals (reported, not asserted).

use serde_json::{Map, Value, json};

use super::point::Point;
use super::{Plan, num};
use crate::outcome::Check;

/// The point of `server` at `clients`, if it ran.
pub(crate) fn at<'a>(points: &'a [Point], server: &str, clients: usize) -> Option<&'a Point> {
    points
        .iter()
        .find(|p| p.server == server && p.clients == clients)
}

/// The largest client count of the plan.
fn largest(plan: &Plan) -> usize {
    plan.clients.iter().copied().max().unwrap_or(0)
}

/// Per server at the largest client count: throughput, response times, fairness, failures;
/// and the goals.
pub(crate) fn summary(points: &[Point], plan: &Plan) -> Map<String, Value> {
    let n = largest(plan);
    let mut s = Map::new();
    s.insert("clients".into(), json!(n));
    for p in points.iter().filter(|p| p.clients == n) {
        s.insert(
            p.server.clone(),
            json!({
                "throughput_per_s": num(p.throughput_per_s),
                "throughput_per_cpu_s": num(p.throughput_per_cpu_s()),
                "mbit_per_s": num(p.mbit_per_s),
                "mean_response_s": num(p.mean_response_s),
                "max_response_s": num(p.max_response_s),
                "fairness": num(p.fairness),
                "errors": p.errors,
                "timeouts": p.timeouts,
                "in_flight_at_end": p.in_flight_at_end,
            }),
        );
    }
    s.insert("goals".into(), goals(points, n));
    s
}

/// DESIGN.md §12's fairness goal at the largest count: Jain >= 0.99, max response time below
/// nginx's and Apache's, throughput >= nginx's. `null` where a peer did not run.
fn goals(points: &[Point], n: usize) -> Value {
    let ours = at(points, "seda", n);
    let nginx = at(points, "nginx", n);
    let apache = at(points, "apache", n);
    let cmp = |peer: Option<&Point>, f: &dyn Fn(&Point, &Point) -> bool| match (ours, peer) {
        (Some(o), Some(p)) => json!(f(o, p)),
        _ => Value::Null,
    };
    json!({
        "fairness_at_least_0_99": ours.map(|o| o.fairness >= 0.99),
        "max_response_below_nginx": cmp(nginx, &|o, p| o.max_response_s < p.max_response_s),
        "max_response_below_apache": cmp(apache, &|o, p| o.max_response_s < p.max_response_s),
        "throughput_at_least_nginx": cmp(nginx, &|o, p| o.throughput_per_s >= p.throughput_per_s),
    })
}

/// The fairness a check asks for: `wanted`, or less when clients completed so few requests
/// that even counts with Poisson noise would miss it (their expected Jain index is `m / (m +
/// 1)` for a mean of `m` each): over a short, disturbed point the index measures sampling as
/// much as the server.
fn fairness_floor(wanted: f64, per_client: f64) -> f64 {
    wanted.min(per_client / (per_client + 1.0))
}

/// The paper's qualitative claims, with tolerances a loaded two-core machine keeps.
pub(crate) fn checks(points: &[Point], plan: &Plan, quick: bool) -> Vec<Check> {
    let n = largest(plan);
    let ours: Vec<&Point> = points.iter().filter(|p| p.server == "seda").collect();
    let mut out = Vec::new();
    let failures: u64 = ours.iter().map(|p| p.errors + p.timeouts).sum();
    out.push(Check::new(
        "Haboob serves every client count it is offered (1 to 1024) without failing requests",
        !ours.is_empty() && ours.iter().all(|p| p.clean()),
        format!(
            "ours: {} points, {} requests completed, {failures} errors or timeouts",
            ours.len(),
            ours.iter().map(|p| p.completed).sum::<u64>()
        ),
    ));
    let largest_point = at(points, "seda", n);
    let fair = largest_point.map_or(f64::NAN, |p| p.fairness);
    let per_client = largest_point.map_or(0.0, |p| p.completed as f64 / n as f64);
    let floor = fairness_floor(if quick { 0.95 } else { 0.98 }, per_client);
    out.push(Check::new(
        format!(
            "SEDA is fair to its clients at {n} (paper: Jain 0.98 at 1024; here >= {floor:.3})"
        ),
        fair >= floor,
        format!(
            "ours: Jain's index {fair:.3} over {n} clients' completed requests ({per_client:.0} \
             each on average)"
        ),
    ));
    // A single short point's maximum is at the mercy of other programs on a shared machine:
    // the quick form reports this comparison (the goals) but does not check it.
    if let (false, Some(o), Some(a)) = (quick, at(points, "seda", n), at(points, "apache", n)) {
        out.push(Check::new(
            format!(
                "a fixed pool of 150 processes makes some clients wait far longer: our max \
                 response time at {n} clients is below Apache's (paper: 3.9 s vs 93.7 s)"
            ),
            o.max_response_s < a.max_response_s,
            format!(
                "max response: ours {:.3} s, Apache {:.3} s",
                o.max_response_s, a.max_response_s
            ),
        ));
    }
    if let (Some(o), Some(x)) = (at(points, "seda", n), at(points, "nginx", n)) {
        // In requests per second, the paper's measure. Another program taking a server's core
        // makes the run inconclusive (the watch, `crate::health`), which is what comparing per
        // CPU-second each server got had guarded against; per CPU-second also counted against
        // the busier server whenever the load generator, not the servers, set the pace (a CI
        // debug run: nginx on 50% of its core, ours on 95%, 0.49 x per CPU-second and 0.92 x
        // in requests per second).
        let ratio = o.throughput_per_s / x.throughput_per_s;
        out.push(Check::new(
            format!(
                "Haboob's throughput holds up against an event-driven server at {n} clients \
                 (paper: 201 vs Flash's 173 Mbit/s; here >= 0.5 x nginx's requests per second)"
            ),
            ratio >= 0.5,
            format!(
                "ours {:.0} req/s on {:.0}% of a core, nginx {:.0} req/s on {:.0}%: {ratio:.2} x \
                 ({:.2} x per CPU-second each server got)",
                o.throughput_per_s,
                o.server_cpu * 100.0,
                x.throughput_per_s,
                x.server_cpu * 100.0,
                o.throughput_per_cpu_s() / x.throughput_per_cpu_s()
            ),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenarios::static_sweep::point::Timing;
    use std::time::Duration;

    fn point(server: &str, clients: usize, tput: f64, max_s: f64, fairness: f64) -> Point {
        Point {
            server: server.into(),
            clients,
            duration_s: 3.0,
            sent: 100_000,
            completed: 100_000,
            rejected: 0,
            timeouts: 0,
            errors: 0,
            in_flight_at_end: 0,
            error_kinds: Default::default(),
            throughput_per_s: tput,
            mbit_per_s: 1.0,
            mean_response_s: 0.01,
            p50_response_s: 0.01,
            p90_response_s: 0.02,
            p99_response_s: 0.03,
            max_response_s: max_s,
            fairness,
            server_cpu: 0.9,
            load_generator_cpu: 0.5,
            server_waited: 0.0,
            others_on_server_core: 0.0,
            others_on_load_core: 0.0,
            io_stalled: 0.0,
            lost_to_others: 0.0,
            repeated: false,
        }
    }

    fn plan() -> Plan {
        let t = Timing {
            warmup: Duration::from_secs(1),
            run: Duration::from_secs(3),
        };
        Plan {
            clients: vec![256, 1024],
            first: t,
            each: t,
            dirs: 1,
            budget: Duration::from_secs(1),
        }
    }

    #[test]
    fn checks_and_goals_follow_the_figures() {
        let points = vec![
            point("seda", 256, 900.0, 0.1, 0.999),
            point("seda", 1024, 1000.0, 0.2, 0.999),
            point("nginx", 1024, 1500.0, 0.3, 0.999),
            point("apache", 1024, 500.0, 2.0, 0.9),
        ];
        assert_eq!(
            checks(&points, &plan(), true).len(),
            3,
            "quick: no max check"
        );
        let c = checks(&points, &plan(), false);
        assert_eq!(c.len(), 4);
        assert!(c.iter().all(|c| c.passed), "{c:?}");
        let g = &summary(&points, &plan())["goals"];
        assert_eq!(g["fairness_at_least_0_99"], json!(true));
        assert_eq!(g["max_response_below_apache"], json!(true));
        assert_eq!(g["throughput_at_least_nginx"], json!(false));

        let mut bad = points.clone();
        bad[1].errors = 3;
        bad[1].fairness = 0.9;
        bad[1].throughput_per_s = 100.0;
        bad[1].max_response_s = 5.0;
        let c = checks(&bad, &plan(), false);
        assert_eq!(c.iter().filter(|c| !c.passed).count(), 4, "{c:?}");
    }

    #[test]
    fn throughput_is_compared_in_requests_per_second() {
        // The load generator set the pace: nginx answered 1,500 req/s on 30% of its core, ours
        // 1,400 on 90%. Ours holds up (0.93 x), though it is 0.31 x per CPU-second.
        let ours = point("seda", 1024, 1400.0, 0.2, 0.999);
        let mut nginx = point("nginx", 1024, 1500.0, 0.3, 0.999);
        nginx.server_cpu = 0.3;
        let points = vec![ours, nginx];
        let c = checks(&points, &plan(), true);
        let tput = c.iter().find(|c| c.claim.contains("throughput")).unwrap();
        assert!(tput.passed, "{tput:?}");
        assert!(
            tput.detail.contains("0.93 x (0.31 x per CPU-second"),
            "{tput:?}"
        );
        // Under half nginx's requests per second fails.
        let points = vec![
            point("seda", 1024, 700.0, 0.2, 0.999),
            point("nginx", 1024, 1500.0, 0.3, 0.999),
        ];
        let c = checks(&points, &plan(), true);
        let tput = c.iter().find(|c| c.claim.contains("throughput")).unwrap();
        assert!(!tput.passed, "{tput:?}");
    }

    #[test]
    fn the_fairness_floor_allows_for_few_requests_per_client() {
        assert_eq!(fairness_floor(0.95, 100.0), 0.95);
        assert!((fairness_floor(0.95, 3.0) - 0.75).abs() < 1e-9);
        assert_eq!(fairness_floor(0.95, 0.0), 0.0);
    }

    #[test]
    fn a_peer_that_did_not_run_is_not_checked() {
        let points = vec![point("seda", 1024, 1000.0, 0.2, 0.999)];
        assert_eq!(checks(&points, &plan(), true).len(), 2);
        let g = &summary(&points, &plan())["goals"];
        assert_eq!(g["max_response_below_nginx"], Value::Null);
    }
}
