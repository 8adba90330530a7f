//! `seda serve tower-demo` (hidden): the axum service of `seda lab run tower-spike`, with a
//! CPU-bound page, served bare, behind tower's own `ConcurrencyLimit` + `LoadShed`, or behind
//! seda's tower layer. It lives in the `seda` binary so the lab's quick runs (and `cargo test`)
//! have it without building an example.
//!
//! The page is written as an axum user would write it: the CPU work runs on tokio's blocking
//! pool (`spawn_blocking`), so requests in flight share the core and response times grow with
//! them, as a real service's do.

use std::net::SocketAddr;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, anyhow, bail};
use axum::Router;
use axum::error_handling::HandleErrorLayer;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::routing::get;
use clap::Args;
use seda_proxy::LagMeter;
use seda_tower::{ArrivalLag, SedaLayer};

use crate::timed_listener::TimedListener;
use tower::ServiceBuilder;

/// What stands in front of the page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Nothing: every request is served, however many are in flight.
    Bare,
    /// tower's `ConcurrencyLimit(N)` under `LoadShed`: N requests in flight, the rest get 503.
    Limit(usize),
    /// seda's layer, `SedaLayer::response_time(target)`.
    Seda,
}

impl FromStr for Mode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "bare" => Ok(Mode::Bare),
            "seda" => Ok(Mode::Seda),
            _ => match s.strip_prefix("limit:").map(str::parse::<usize>) {
                Some(Ok(n)) if n > 0 => Ok(Mode::Limit(n)),
                _ => Err(format!(
                    "`{s}` is not a mode: bare, limit:N (N >= 1) or seda"
                )),
            },
        }
    }
}

/// Arguments of `seda serve tower-demo`.
#[derive(Args, Debug)]
pub struct TowerDemoArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8080")]
    addr: SocketAddr,
    /// bare, limit:N (tower's ConcurrencyLimit + LoadShed) or seda (our layer).
    #[arg(long, default_value = "bare")]
    mode: Mode,
    /// p90 target of our layer, in ms.
    #[arg(long, default_value_t = 500)]
    target_ms: u64,
    /// KiB checksummed per request (the page's CPU work).
    #[arg(long, default_value_t = 64)]
    work_kb: usize,
    /// Checksum passes over them.
    #[arg(long, default_value_t = 4)]
    rounds: u32,
    /// Worker threads of the async runtime (the blocking pool grows as tokio's does).
    #[arg(long, default_value_t = 2)]
    threads: usize,
}

/// The page's data and work.
struct Page {
    data: Vec<u8>,
    rounds: u32,
}

/// FNV-1a, `rounds` chained passes, so no pass can be skipped.
fn checksum(data: &[u8], rounds: u32) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for _ in 0..rounds {
        for b in data {
            h = (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}

/// The page, with a `Server-Timing: cpu;dur=...` header (W3C Server Timing, in ms) telling
/// what its work cost the thread that did it: the lab prices the pages answered in time with
/// it, at the machine's speed in the run (see `tower-spike`).
async fn render(
    State(page): State<Arc<Page>>,
) -> Result<([(&'static str, String); 1], String), StatusCode> {
    let (sum, used) = tokio::task::spawn_blocking(move || {
        let start = seda::thread_cpu_time();
        let sum = checksum(&page.data, page.rounds);
        (sum, seda::thread_cpu_time().saturating_sub(start))
    })
    .await
    .map_err(|_| StatusCode::INTERNAL_SERVER_ERROR)?;
    Ok((
        [("server-timing", seda::server_timing_cpu(used))],
        format!("<html><body>checksum {sum:016x}</body></html>\n"),
    ))
}

/// The service for `mode`, and the arrival lags its layer counts (with seda's layer).
fn app(mode: Mode, target: Duration, page: Arc<Page>) -> anyhow::Result<(Router, Vec<ArrivalLag>)> {
    let app = Router::new().route("/", get(render)).with_state(page);
    Ok(match mode {
        Mode::Bare => (app, Vec::new()),
        // tower's idiom: LoadShed turns "not ready" (all N permits taken) into an error, which
        // HandleErrorLayer answers with 503 and Retry-After, as our layer does.
        Mode::Limit(n) => (
            app.layer(
                ServiceBuilder::new()
                    .layer(HandleErrorLayer::new(|_: tower::BoxError| async {
                        (
                            StatusCode::SERVICE_UNAVAILABLE,
                            [(header::RETRY_AFTER, "1")],
                        )
                    }))
                    .load_shed()
                    .concurrency_limit(n),
            ),
            Vec::new(),
        ),
        Mode::Seda => {
            let layer = SedaLayer::response_time(target)
                .map_err(|e| anyhow!("--target-ms: {e}"))?
                .http();
            let lag = layer.arrival_lag();
            (app.layer(layer), vec![lag])
        }
    })
}

/// Serves until SIGINT or SIGTERM.
pub fn serve(args: &TowerDemoArgs) -> anyhow::Result<()> {
    if args.work_kb == 0 || args.rounds == 0 {
        bail!("--work-kb and --rounds must be at least 1");
    }
    let target = Duration::from_millis(args.target_ms);
    let data = (0..args.work_kb * 1024)
        .map(|i| (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) as u8 ^ (i >> 8) as u8)
        .collect();
    let page = Arc::new(Page {
        data,
        rounds: args.rounds,
    });
    let (app, lags) = app(args.mode, target, page)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(args.threads.max(1))
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    rt.block_on(async {
        // The proxy's listen backlog: a spike of new connections waits to be accepted.
        let inner = seda_proxy::listen(args.addr)
            .with_context(|| format!("cannot listen on {}", args.addr))?;
        let meter = LagMeter::new(lags);
        tokio::spawn(meter.clone().tick());
        let listener = TimedListener { inner, meter };
        println!(
            "seda serve tower-demo: {:?}, {} KiB x {} passes per page, on http://{}/",
            args.mode,
            args.work_kb,
            args.rounds,
            listener.inner.local_addr()?
        );
        axum::serve(listener, app)
            .with_graceful_shutdown(async {
                let _ = crate::serve::wait_for_signal_async().await;
            })
            .await
            .context("the server stopped")
    })
}

#[cfg(test)]
mod tests {
    use super::Mode;

    #[test]
    fn modes_parse_and_bad_ones_say_what_is_expected() {
        assert_eq!("bare".parse(), Ok(Mode::Bare));
        assert_eq!("seda".parse(), Ok(Mode::Seda));
        assert_eq!("limit:16".parse(), Ok(Mode::Limit(16)));
        for bad in ["limit:0", "limit:x", "limit", "fast"] {
            let e = bad.parse::<Mode>().unwrap_err();
            assert!(e.contains("limit:N"), "{bad}: {e}");
        }
    }
}
