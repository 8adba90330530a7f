//! Criticality under a designed overload: an axum service whose capacity is set by design (a
//! semaphore of `PERMITS` held `HOLD` per request: `PERMITS / HOLD` requests/s whatever the
//! CPU), offered 3 x that over real sockets, 20% of it critical. The critical requests must
//! come through (>= 99.9%, p90 within the target) and the cuts must land on the sheddable
//! levels.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::Extension;
use axum::routing::get;
use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use seda_tower::{Cohorts, Criticality, CriticalityLayer, Level, SedaLayer};
use tokio::sync::Semaphore;
use tokio::time::Instant;

const PERMITS: usize = 8;
const HOLD: Duration = Duration::from_millis(20);
/// 8 permits / 20 ms = 400 requests/s.
const CAPACITY_PER_S: f64 = PERMITS as f64 / 0.020;
const TARGET: Duration = Duration::from_millis(100);
const WARMUP: Duration = Duration::from_secs(2);
const RUN: Duration = Duration::from_secs(8);

/// Which level the route gives: the edge decides from the path, never from the client's header.
fn by_route(req: &http::Request<Body>) -> Criticality {
    let path = req.uri().path();
    let level = if path.starts_with("/critical") {
        Level::Critical
    } else if path.starts_with("/browse") {
        Level::SheddablePlus
    } else {
        Level::Sheddable
    };
    Criticality::new(level)
}

#[derive(Default, Clone, Copy)]
struct Tally {
    ok: u64,
    refused: u64,
    other: u64,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn critical_requests_come_through_a_threefold_overload() {
    let permits = Arc::new(Semaphore::new(PERMITS));
    let seda = SedaLayer::prioritized(TARGET).unwrap().http();
    let stats = seda.stats();
    let edge = CriticalityLayer::new(by_route).cohorts(Cohorts::default(), |r| {
        r.headers().get("x-user").map(|v| v.as_bytes().to_vec())
    });
    let work = move |Extension(c): Extension<Criticality>| {
        let permits = Arc::clone(&permits);
        async move {
            let _p = permits.acquire().await.unwrap();
            tokio::time::sleep(HOLD).await;
            c.level.to_string()
        }
    };
    let app = Router::new()
        .route("/critical", get(work.clone()))
        .route("/browse", get(work.clone()))
        .route("/prefetch", get(work))
        .layer(seda)
        .layer(edge);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });

    let client = Client::builder(TokioExecutor::new())
        .pool_max_idle_per_host(1024)
        .build_http::<Empty<Bytes>>();
    let offered_per_s = 3.0 * CAPACITY_PER_S;
    let batch = 6;
    let every = Duration::from_secs_f64(batch as f64 / offered_per_s);
    let start = Instant::now();
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    let mut tasks = Vec::new();
    let mut n: u64 = 0;
    while start.elapsed() < WARMUP + RUN {
        tick.tick().await;
        for _ in 0..batch {
            n += 1;
            // 20% critical, 40% sheddable-plus (browse), 40% sheddable (prefetch).
            let (level, path) = match n % 10 {
                0 | 5 => (Level::Critical, "/critical"),
                1 | 3 | 6 | 8 => (Level::SheddablePlus, "/browse"),
                _ => (Level::Sheddable, "/prefetch"),
            };
            let user = n.wrapping_mul(0x9e37_79b9_7f4a_7c15) % 1000;
            let req = http::Request::get(format!("{base}{path}"))
                .header("x-user", format!("user{user}"))
                // A client calling itself critical-plus is not believed.
                .header("x-seda-criticality", "critical_plus")
                .body(Empty::new())
                .unwrap();
            let client = client.clone();
            let measured = start.elapsed() >= WARMUP;
            // The cohort the edge computes for this user now (the same hash, the same clock).
            let wall = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap();
            let cohort = Cohorts::default().of(format!("user{user}").as_bytes(), wall);
            tasks.push(tokio::spawn(async move {
                let sent = Instant::now();
                let status = match client.request(req).await {
                    Ok(r) => {
                        let s = r.status().as_u16();
                        let body = r.into_body().collect().await.map(|b| b.to_bytes());
                        if s == 200 {
                            assert_eq!(
                                body.unwrap(),
                                level.as_str(),
                                "the handler saw another level"
                            );
                        }
                        s
                    }
                    Err(_) => 0,
                };
                (level, cohort, measured, status, sent.elapsed())
            }));
        }
    }
    let mut tally = [Tally::default(); 4];
    let mut critical_ok_ms: Vec<f64> = Vec::new();
    // Sheddable-plus, the level cut part-way: (served, sent) per cohort.
    let mut by_cohort = [(0u64, 0u64); Cohorts::DEFAULT_COUNT as usize];
    for t in tasks {
        let (level, cohort, measured, status, took) = t.await.unwrap();
        if !measured {
            continue;
        }
        if level == Level::SheddablePlus {
            let c = &mut by_cohort[usize::from(cohort)];
            c.0 += u64::from(status == 200);
            c.1 += 1;
        }
        let k = &mut tally[level.index()];
        match status {
            200 => {
                k.ok += 1;
                if level == Level::Critical {
                    critical_ok_ms.push(took.as_secs_f64() * 1e3);
                }
            }
            503 => k.refused += 1,
            _ => k.other += 1,
        }
    }
    critical_ok_ms.sort_by(f64::total_cmp);
    let p90_ms = critical_ok_ms
        .get((critical_ok_ms.len() * 9 / 10).saturating_sub(1))
        .copied()
        .unwrap_or(f64::NAN);
    let served: u64 = tally.iter().map(|t| t.ok).sum();
    let run_s = RUN.as_secs_f64();
    println!(
        "capacity {CAPACITY_PER_S:.0}/s, offered {offered_per_s:.0}/s for {run_s} s after a {} s warm-up",
        WARMUP.as_secs()
    );
    for l in [Level::Critical, Level::SheddablePlus, Level::Sheddable] {
        let t = tally[l.index()];
        let total = t.ok + t.refused + t.other;
        println!(
            "{l:>15}: {:>5} sent, {:>5} ok ({:.2}%), {:>5} refused, {} other",
            total,
            t.ok,
            100.0 * t.ok as f64 / total.max(1) as f64,
            t.refused,
            t.other
        );
    }
    println!(
        "served {:.0}/s ({:.2} x capacity); critical p90 {p90_ms:.1} ms (target {} ms)",
        served as f64 / run_s,
        served as f64 / run_s / CAPACITY_PER_S,
        TARGET.as_millis()
    );
    let shares: Vec<f64> = by_cohort
        .iter()
        .map(|(ok, n)| *ok as f64 / (*n).max(1) as f64)
        .collect();
    let pct: Vec<String> = shares.iter().map(|s| format!("{:.0}", s * 1e2)).collect();
    println!("sheddable_plus served by cohort, %: {}", pct.join(" "));
    println!("layer: {:?}", stats.stats());

    let crit = tally[Level::Critical.index()];
    let crit_total = crit.ok + crit.refused + crit.other;
    assert!(crit_total > 1000, "too few critical requests: {crit_total}");
    assert!(
        crit.ok as f64 >= 0.999 * crit_total as f64,
        "critical success {} of {crit_total}",
        crit.ok
    );
    assert!(
        p90_ms <= TARGET.as_secs_f64() * 1e3,
        "critical p90 {p90_ms} ms"
    );
    // The cuts land on the sheddable levels, the lowest hardest.
    let (sp, s) = (
        tally[Level::SheddablePlus.index()],
        tally[Level::Sheddable.index()],
    );
    let refused = crit.refused + sp.refused + s.refused;
    assert!(refused > 0, "no overload reached the layer");
    assert!(crit.refused as f64 <= 0.001 * refused as f64);
    let share = |t: Tally| t.ok as f64 / (t.ok + t.refused + t.other).max(1) as f64;
    assert!(share(s) < share(sp), "sheddable was not cut first");
    // Within the level cut part-way, whole cohorts go first: the upper cohorts are served
    // far more than the lower ones (a cut spread evenly would serve each about alike).
    let low: f64 = shares[..4].iter().sum::<f64>() / 4.0;
    let high: f64 = shares[12..].iter().sum::<f64>() / 4.0;
    assert!(high > low + 0.3, "cohorts not cut in turn: {pct:?}");
    // No request got in as critical-plus by its forged header.
    let state = stats.stats().state;
    let plus = state.iter().find(|(k, _)| *k == "critical_plus_admitted");
    assert_eq!(plus.map(|(_, v)| *v), Some(0.0));
}
