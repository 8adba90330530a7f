//! `seda proxy`: a reverse proxy with per-route overload control in front of any HTTP service.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Args;
use seda_proxy::{Proxy, ProxyConfig};

/// Arguments of `seda proxy`.
#[derive(Args, Debug)]
pub struct ProxyArgs {
    /// Address to listen on (the simple case; with --config, the file's `listen`).
    #[arg(long, default_value = "127.0.0.1:8080")]
    listen: SocketAddr,
    /// The service to forward to, http://host:port (the simple case: one route for every path).
    #[arg(long, conflicts_with = "config")]
    upstream: Option<String>,
    /// p90 response-time target in ms; requests past what meets it get 503 with Retry-After.
    /// Without it the proxy forwards without admission control.
    #[arg(long, conflicts_with = "config")]
    target_ms: Option<u64>,
    /// TOML file with `listen` and [[route]]s (prefix, upstream, target_ms, deadline_ms): see
    /// `crates/seda-proxy/src/config.rs`.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Answer HAProxy's agent-check on this address: a weight steered by the share of arriving
    /// requests the routes serve, `drain` while they serve almost none, and `maxconn:N` when
    /// every route's controller keeps a concurrency limit.
    #[arg(long)]
    agent: Option<SocketAddr>,
    /// The admin address (loopback by default, `off` for none): the live dashboard (each route
    /// drawn as a stage), `/metrics` with each route's admission (`seda_layer_*`), and
    /// `/_seda/stats` (JSON, the routes under `layers`).
    #[arg(long, default_value = crate::admin::DEFAULT)]
    admin: crate::admin::AdminAddr,
    /// How the refusals on one connection are answered, against clients that resend at once
    /// on a 503: `none` (at once), `delay:50ms` (each after a pause, no CPU spent meanwhile),
    /// `close:N` (the connection closed after N in a row) or `cap:N` (N a second at once, the
    /// rest paced to N a second). Overrides the config file's `refusal`. [default: cap:10]
    #[arg(long)]
    refusal: Option<seda_control::RefusalPolicy>,
    /// Refusals a second the proxy answers at once across its connections; past it a refusal
    /// waits its turn (0: no cap). Overrides the config file's `refusals_per_s`. [default: 5000]
    #[arg(long)]
    refusals_per_s: Option<u32>,
    /// Print each route's admitted and rejected counts every this many seconds (0: never).
    #[arg(long, default_value_t = 0)]
    stats_every_s: u64,
}

/// Runs the proxy until SIGINT or SIGTERM.
pub fn run(args: &ProxyArgs) -> anyhow::Result<()> {
    let mut config = match (&args.config, &args.upstream) {
        (Some(path), _) => ProxyConfig::from_file(path)?,
        (None, Some(upstream)) => {
            let target = args.target_ms.map(Duration::from_millis);
            ProxyConfig::single(args.listen, upstream, target)?
        }
        (None, None) => {
            bail!("give --upstream http://host:port (and --target-ms), or --config FILE")
        }
    };
    if let Some(policy) = args.refusal {
        config.refusal = policy;
    }
    if let Some(per_s) = args.refusals_per_s {
        config.refusals_per_s = per_s;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    rt.block_on(async {
        let proxy = Proxy::bind(config.clone()).await.map_err(|e| anyhow::anyhow!("{e}"))?;
        let addr = proxy.local_addr()?;
        let in_all = match config.refusals_per_s {
            0 => "no cap in all".to_string(),
            n => format!("{n} a second in all"),
        };
        println!(
            "seda proxy: listening on http://{addr}/ (refusals: {} a connection, {in_all})",
            config.refusal
        );
        for r in &config.routes {
            let control = r
                .target
                .map_or("no admission control".to_string(), |t| format!("p90 target {} ms", t.as_millis()));
            println!("  {:<20} -> {}  ({control})", r.prefix, r.upstream);
        }
        // Kept alive until the proxy stops; dropping it stops the admin address.
        let _admin = match args.admin.0 {
            Some(addr) => {
                let read = proxy.stats_reader();
                let sources = seda_http::AdminSources {
                    layers: Some(std::sync::Arc::new(move || {
                        read()
                            .into_iter()
                            .filter_map(|r| r.admission.map(|a| (r.prefix, a)))
                            .collect()
                    })),
                    ..seda_http::AdminSources::default()
                };
                let server = seda_http::AdminServer::start(addr, sources)
                    .with_context(|| format!("cannot serve the admin address {addr}"))?;
                crate::admin::announce(Some(server.local_addr()));
                Some(server)
            }
            None => {
                crate::admin::announce(None);
                None
            }
        };
        if let Some(agent) = args.agent {
            let listener = tokio::net::TcpListener::bind(agent)
                .await
                .with_context(|| format!("cannot listen for agent checks on {agent}"))?;
            println!("agent-check: {}", listener.local_addr()?);
            let read = proxy.stats_reader();
            tokio::spawn(seda_proxy::serve_agent(listener, move || {
                seda_proxy::routes_sample(&read())
            }));
        }
        if args.stats_every_s > 0 {
            let read = proxy.stats_reader();
            let every = Duration::from_secs(args.stats_every_s);
            tokio::spawn(async move {
                let mut tick = tokio::time::interval(every);
                tick.tick().await;
                loop {
                    tick.tick().await;
                    for r in read() {
                        if let Some(a) = r.admission {
                            let rejected: u64 = a.rejected.iter().map(|(_, n)| n).sum();
                            // Refused (504) at the door for the deadline, and cut at it.
                            let (late, cut) = a.deadline.map_or((0, 0), |d| {
                                (d.refused_passed + d.refused_predicted, d.cut)
                            });
                            println!(
                                "{:<20} admitted {:>9} rejected {:>9} completed {:>9} \
                                 deadline refused {:>7} cut {:>7}",
                                r.prefix, a.admitted, rejected, a.completed, late, cut
                            );
                        }
                    }
                }
            });
        }
        tokio::select! {
            served = proxy.serve() => served.context("the proxy stopped")?,
            signal = crate::serve::wait_for_signal_async() => signal.context("cannot install the signal handlers")?,
        }
        println!("seda proxy: stopped");
        Ok(())
    })
}
