//! `tower-peers`: the `tower-peers` lab scenario's service (issue 54). An axum page served by
//! an emulated processor of designed capacity ([`processor`]), bare or behind one of the
//! load-shedding tower crates a Rust user would pick, or behind seda's layer ([`variant`]).
//!
//! A lab-only binary in a crate of its own: the peer crates are its dependencies and no
//! product crate's, and `cargo build --workspace` puts it beside the `seda` binary, where the
//! lab looks for it.
//!
//! Routes: `GET /` the page (one service time on the processor); `POST /admin/dist/{exp|heavy}`
//! and `POST /admin/slowdown/{factor}` change the processor while it runs. The admin routes are
//! not behind the variant: an operator's call is not load.

mod processor;
mod variant;

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::{Context, bail};
use axum::Router;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use clap::Parser;

use processor::{Dist, Processor};
use variant::Variant;

/// Serves the page of designed capacity behind the chosen front until killed.
#[derive(Parser, Debug)]
#[command(name = "tower-peers", version)]
struct Args {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8080")]
    addr: SocketAddr,
    /// What stands in front: bare, limit:N, little, acc-{aimd,vegas,gradient2},
    /// res-{aimd,vegas,gradient2} or seda.
    #[arg(long, default_value = "bare")]
    mode: Variant,
    /// The processor's slots (requests served at once).
    #[arg(long, default_value_t = 4)]
    slots: usize,
    /// Mean service time of a request, ms.
    #[arg(long, default_value_t = 40.0)]
    mean_ms: f64,
    /// Service-time distribution at start: exp or heavy.
    #[arg(long, default_value = "exp")]
    dist: Dist,
    /// The reply-time target, ms: ours holds its p90 to it; the peers that take a latency
    /// figure get it (see `variant`).
    #[arg(long, default_value_t = 250)]
    target_ms: u64,
    /// Seed of the service times: the same seed serves the same holds in the same order
    /// (common random numbers across the variants of a run).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Worker threads of the async runtime.
    #[arg(long, default_value_t = 2)]
    threads: usize,
}

async fn page(State(p): State<Processor>) -> String {
    let held = p.serve().await;
    format!("held {} us\n", held.as_micros())
}

async fn set_dist(State(p): State<Processor>, Path(d): Path<String>) -> (StatusCode, String) {
    match d.parse::<Dist>() {
        Ok(d) => {
            p.set_dist(d);
            (StatusCode::OK, format!("{d:?}\n"))
        }
        Err(e) => (StatusCode::BAD_REQUEST, e),
    }
}

async fn set_slowdown(State(p): State<Processor>, Path(f): Path<String>) -> (StatusCode, String) {
    let set = f
        .parse::<f64>()
        .map_err(|e| format!("slowdown `{f}`: {e}"))
        .and_then(|f| p.set_slowdown(f).map(|()| f));
    match set {
        Ok(f) => (StatusCode::OK, format!("slowdown {f}\n")),
        Err(e) => (StatusCode::BAD_REQUEST, e),
    }
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    if args.slots == 0 || !(args.mean_ms > 0.0 && args.mean_ms <= 60_000.0) || args.target_ms == 0 {
        bail!("--slots and --target-ms must be at least 1, --mean-ms in (0, 60000]");
    }
    let processor = Processor::new(
        args.slots,
        Duration::from_secs_f64(args.mean_ms / 1000.0),
        args.dist,
        args.seed,
    );
    let target = Duration::from_millis(args.target_ms);
    let page = Router::new()
        .route("/", get(page))
        .with_state(processor.clone());
    let front = variant::shared(args.mode, target, page)?;
    let app = Router::new()
        .route("/admin/dist/{dist}", post(set_dist))
        .route("/admin/slowdown/{factor}", post(set_slowdown))
        .with_state(processor)
        .fallback_service(front);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(args.threads.max(1))
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    rt.block_on(async {
        let listener = tokio::net::TcpListener::bind(args.addr)
            .await
            .with_context(|| format!("cannot listen on {}", args.addr))?;
        println!(
            "tower-peers: {:?} in front of {} slots x {} ms mean ({:?}), on http://{}/",
            args.mode,
            args.slots,
            args.mean_ms,
            args.dist,
            listener.local_addr()?
        );
        axum::serve(listener, app)
            .await
            .context("the server stopped")
    })
}
