//! `seda serve tier` (hidden): a front or middle tier of `seda lab run tiers`. An axum service
//! behind seda's tower layer (response-time admission and deadlines: a request's budget read
//! from `x-seda-deadline-ms`, or this tier's default, and sent on as the budget left) that does
//! work of its own, a hold of one of its workers, then calls the tier below and relays its
//! answer. It lives in the `seda` binary so the lab has it without building an example; it is
//! not on any product's request path.
//!
//! `--policy alone`: the tier controls only itself (its layer), and learns that the back is
//! overloaded only from the answer to a call it has already done its work for. `--policy
//! ours`: it also keeps a window over the tiers below ([`window`]), taken before its own work
//! and fed by the refusals relayed up from below, so an overloaded back is refused at this
//! tier's door. `--policy dagor`: WeChat's DAGOR ([`dagor`]), each tier with its own
//! admission level over the requests' priorities, told to the tier above.
//!
//! Beside any policy, the tier's client of the tier below can help it ([`help`]): adaptive
//! throttling (`--throttle`) and retries of refused calls (`--retries`) held to a retry
//! budget (`--retry-budget`).

mod call;
mod counters;
mod dagor;
mod help;
mod window;

use std::net::SocketAddr;
use std::str::FromStr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, anyhow, bail};
use axum::Router;
use axum::extract::State;
use axum::http::header;
use axum::routing::get;
use clap::Args;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use seda_control::peers::{AimdLimit, AimdLimitConfig, ConcurrencyLimiter};
use seda_tower::{Deadlines, SedaLayer};
use tokio::sync::Semaphore;

use call::Tier;
use counters::Counters;
use help::{ClientHelp, HelpArgs};
use window::DownstreamWindow;

/// The tier's state behind a lock, taken over if poisoned: a panic elsewhere that held it
/// leaves plain numbers (counts, a window, DAGOR's agent), still usable.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A gate's layer admits this many in flight: far past any queue bound it is given.
const GATE_OPEN_LIMIT: f64 = 100_000.0;

/// How a tier controls its load.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// Its own layer only.
    Alone,
    /// Its own layer and a window over the tiers below, fed by their refusals.
    Ours,
    /// Its own layer and DAGOR18's agent, told the level of the tier below.
    Dagor,
}

impl FromStr for Policy {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "alone" => Ok(Policy::Alone),
            "ours" => Ok(Policy::Ours),
            "dagor" => Ok(Policy::Dagor),
            _ => Err(format!("`{s}` is not a policy: alone, ours or dagor")),
        }
    }
}

/// Arguments of `seda serve tier`.
#[derive(Args, Debug)]
pub struct TierArgs {
    /// Address to listen on.
    #[arg(long)]
    addr: SocketAddr,
    /// The tier below, as http://host:port/path (each request's query is passed on).
    #[arg(long)]
    downstream: String,
    /// alone (the tier's own layer), ours (also a window over the tiers below) or dagor
    /// (also DAGOR's admission level, told to the tier above).
    #[arg(long, default_value = "alone")]
    policy: Policy,
    /// The tier's own work per request: a hold of one of its workers, ms (0: none, a gate).
    #[arg(long, default_value_t = 5.0)]
    work_ms: f64,
    /// Workers of the tier's own work.
    #[arg(long, default_value_t = 64)]
    workers: usize,
    /// Budget of a request that brings none, ms (the route's default deadline).
    #[arg(long, default_value_t = 500)]
    deadline_ms: u64,
    /// p90 response-time target of the tier's seda layer, ms.
    #[arg(long, default_value_t = 500)]
    target_ms: u64,
    /// The window's size at start (ours), requests in flight below.
    #[arg(long, default_value_t = 8.0)]
    window: f64,
    /// The trusted edge: this tier gives requests their DAGOR priority (ignoring any sent).
    #[arg(long)]
    edge: bool,
    /// At most this many calls below in flight, the rest queued in this tier (a gate in
    /// front of a service, where DAGOR's agent sees the queue). A gate's seda layer only
    /// carries deadlines: it refuses nothing, the queue bound is the service's.
    #[arg(long)]
    below_limit: Option<usize>,
    /// Calls allowed to wait for one of --below-limit's slots; past them, 503.
    #[arg(long, default_value_t = 32)]
    below_queue: usize,
    /// Throttle calls below adaptively, as Google's clients do: refuse a request here, before
    /// its work, with probability max(0, (requests - 2 x accepts) / (requests + 1)) over
    /// 10 s, accepts being the answers from below that were not a 503.
    #[arg(long)]
    throttle: bool,
    /// Send a call the tier below refused (503) again at once, up to N times, while the
    /// request's budget lasts.
    #[arg(long, default_value_t = 0, value_name = "N")]
    retries: u32,
    /// Retry at most this share of the first calls (over 10 s, plus one retry a second).
    #[arg(long, requires = "retries", value_name = "SHARE")]
    retry_budget: Option<f64>,
}

impl TierArgs {
    fn check(&self) -> anyhow::Result<()> {
        if !(self.work_ms.is_finite() && self.work_ms >= 0.0 && self.work_ms <= 60_000.0) {
            bail!("--work-ms must be in [0, 60000], got {}", self.work_ms);
        }
        if self.below_limit == Some(0) {
            bail!("--below-limit must be at least 1");
        }
        if self.workers == 0 || self.deadline_ms == 0 || self.target_ms == 0 {
            bail!("--workers, --deadline-ms and --target-ms must be at least 1");
        }
        if !(self.window.is_finite() && self.window >= 1.0) {
            bail!("--window must be at least 1, got {}", self.window);
        }
        let uri: axum::http::Uri = self
            .downstream
            .parse()
            .with_context(|| format!("--downstream `{}` is not a URL", self.downstream))?;
        if uri.scheme_str() != Some("http") || uri.query().is_some() {
            bail!(
                "--downstream must be http://host:port/path without a query, got `{}`",
                self.downstream
            );
        }
        Ok(())
    }
}

async fn stats(State(tier): State<Arc<Tier>>) -> ([(header::HeaderName, &'static str); 1], String) {
    let level = tier.dagor.as_ref().map(|d| d.level().to_string());
    let s = tier.counters.snapshot(tier.window_size(), level);
    (
        [(header::CONTENT_TYPE, "application/json")],
        serde_json::to_string(&s).unwrap_or_default(),
    )
}

/// Serves until SIGINT or SIGTERM.
pub fn serve(args: &TierArgs) -> anyhow::Result<()> {
    args.check()?;
    let deadline = Duration::from_millis(args.deadline_ms);
    let layer = match args.below_limit {
        // A gate stands for the service behind it, whose only admission is its queue bound
        // (--below-queue): its layer carries the deadlines and admits everything else.
        Some(_) => {
            let open = AimdLimitConfig {
                initial: GATE_OPEN_LIMIT,
                min: GATE_OPEN_LIMIT,
                max: GATE_OPEN_LIMIT,
                ..AimdLimitConfig::default()
            };
            let limit = AimdLimit::new(open).map_err(|e| anyhow!("the gate's layer: {e}"))?;
            SedaLayer::new(ConcurrencyLimiter::new(limit))
        }
        None => SedaLayer::response_time(Duration::from_millis(args.target_ms))
            .map_err(|e| anyhow!("--target-ms: {e}"))?,
    }
    .http()
    .deadlines(Deadlines::new().default_budget(deadline))
    .map_err(|e| anyhow!("--deadline-ms: {e}"))?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let dagor = match args.policy {
        Policy::Dagor => Some(dagor::DagorTier::new(args.edge)?),
        _ => None,
    };
    let help = ClientHelp::new(HelpArgs {
        throttle: args.throttle,
        retries: args.retries,
        budget: args.retry_budget,
    })?;
    rt.block_on(async {
        let tier = Arc::new(Tier {
            counters: Counters::default(),
            window: (args.policy == Policy::Ours)
                .then(|| Mutex::new(DownstreamWindow::new(args.window, deadline))),
            dagor,
            below_limit: args.below_limit.map(|n| call::BelowLimit {
                slots: Semaphore::new(n),
                queue: args.below_queue,
                waiting: Default::default(),
            }),
            help,
            workers: Semaphore::new(args.workers),
            work: Duration::from_secs_f64(args.work_ms / 1000.0),
            downstream: args.downstream.clone(),
            client: Client::builder(TokioExecutor::new()).build_http(),
        });
        let app = Router::new()
            .route("/", get(call::handle))
            .route_layer(layer)
            .route(seda_lab::tier_stats::PATH, get(stats))
            .with_state(tier);
        crate::serve::serve_axum(args.addr, app, |addr| {
            format!(
                "seda serve tier: {:?}, {} ms of work on {} workers, calling {}, on http://{addr}/",
                args.policy, args.work_ms, args.workers, args.downstream
            )
        })
        .await
    })
}
