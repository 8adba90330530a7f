//! `seda serve criticality` (hidden): the service of `seda lab run criticality`. An axum
//! service whose capacity is set by design (an emulated processor: `--workers` permits, each
//! request holding one for `--hold-ms`, so `workers / hold` requests a second whatever the
//! CPU), behind seda's tower layer admitting by criticality (`SedaLayer::prioritized`), with a
//! `CriticalityLayer` at its edge deciding each request's level from its route, the trusted
//! part of a request, and its cohort from the `x-user` header. A client's own
//! `x-seda-criticality` header is removed unread. It lives in the `seda` binary so the lab has
//! it without building an example; it is not on any product's request path.
//!
//! Routes: `/critical`, `/browse` (sheddable-plus), `/prefetch` (sheddable), and the layer's
//! state as JSON on [`seda_lab::criticality_stats::PATH`].

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, anyhow, bail};
use axum::Router;
use axum::body::Body;
use axum::extract::{Extension, State};
use axum::http::header;
use axum::routing::get;
use clap::Args;
use seda_lab::criticality_stats::{CriticalityStats, PATH};
use seda_tower::{Cohorts, Criticality, CriticalityLayer, Level, SedaLayer, StatsHandle};
use tokio::sync::Semaphore;

/// Arguments of `seda serve criticality`.
#[derive(Args, Debug)]
pub struct CriticalityArgs {
    /// Address to listen on.
    #[arg(long)]
    addr: SocketAddr,
    /// Permits of the emulated processor.
    #[arg(long, default_value_t = 8)]
    workers: usize,
    /// How long a request holds a permit, ms.
    #[arg(long, default_value_t = 20)]
    hold_ms: u64,
    /// p90 response-time target of the seda layer, ms.
    #[arg(long, default_value_t = 100)]
    target_ms: u64,
}

/// The level the route gives: decided at the edge, never read from the client's header.
fn by_route(req: &axum::http::Request<Body>) -> Criticality {
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

/// The header a session's user id comes in (its cohort is a hash of it).
const USER_HEADER: &str = "x-user";
/// The longest user id hashed.
const MAX_USER_BYTES: usize = 64;

async fn stats(
    State(handle): State<StatsHandle>,
) -> ([(header::HeaderName, &'static str); 1], String) {
    let s = handle.stats();
    let doc = CriticalityStats {
        admitted: s.admitted,
        rejected: s.rejected.iter().map(|(_, n)| n).sum(),
        state: s
            .state
            .iter()
            .map(|(k, v)| ((*k).to_string(), *v))
            .collect(),
    };
    (
        [(header::CONTENT_TYPE, "application/json")],
        serde_json::to_string(&doc).unwrap_or_default(),
    )
}

/// Serves until SIGINT or SIGTERM.
pub fn serve(args: &CriticalityArgs) -> anyhow::Result<()> {
    if args.workers == 0 || args.hold_ms == 0 || args.target_ms == 0 {
        bail!("--workers, --hold-ms and --target-ms must be at least 1");
    }
    let seda = SedaLayer::prioritized(Duration::from_millis(args.target_ms))
        .map_err(|e| anyhow!("--target-ms: {e}"))?
        .http();
    let handle = seda.stats();
    let edge = CriticalityLayer::new(by_route).cohorts(Cohorts::default(), |r| {
        r.headers()
            .get(USER_HEADER)
            .filter(|v| v.len() <= MAX_USER_BYTES)
            .map(|v| v.as_bytes().to_vec())
    });
    let permits = Arc::new(Semaphore::new(args.workers));
    let hold = Duration::from_millis(args.hold_ms);
    let work = move |Extension(c): Extension<Criticality>| {
        let permits = Arc::clone(&permits);
        async move {
            // The emulated processor: a permit held for the request's service time.
            let Ok(_p) = permits.acquire().await else {
                return String::new();
            };
            tokio::time::sleep(hold).await;
            c.level.to_string()
        }
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    rt.block_on(async {
        let app = Router::new()
            .route("/critical", get(work.clone()))
            .route("/browse", get(work.clone()))
            .route("/prefetch", get(work))
            .layer(seda)
            .layer(edge)
            .route(PATH, get(stats).with_state(handle));
        crate::serve::serve_axum(args.addr, app, |addr| {
            format!(
                "seda serve criticality: {} workers x {} ms, target {} ms, on http://{addr}/",
                args.workers, args.hold_ms, args.target_ms
            )
        })
        .await
    })
}
