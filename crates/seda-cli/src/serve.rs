//! `seda serve static`: Haboob, the staged static-file server.

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use seda_http::{ServeConfig, StaticServer};

/// Arguments of `seda serve static`.
#[derive(Args, Debug)]
pub struct StaticArgs {
    /// Directory to serve.
    #[arg(long)]
    root: PathBuf,
    /// Address to listen on (overrides the file's `http.addr`).
    #[arg(long)]
    addr: Option<SocketAddr>,
    /// Admin address: dashboard, /metrics, /_seda/stats, /_seda/graph; never the service port
    /// (`off`: none).
    #[arg(long, default_value = crate::admin::DEFAULT)]
    admin: crate::admin::AdminAddr,
    /// TOML file with [http], [static] and the runtime's [runtime]/[domains.*]/[stages.*].
    #[arg(long)]
    config: Option<PathBuf>,
    /// Also serve hidden files and directories (`/.env`, `/.git/...`): by default they are
    /// answered 404 (`static.serve_hidden`).
    #[arg(long)]
    serve_hidden: bool,
}

/// Serves until SIGINT or SIGTERM, then shuts down gracefully.
pub fn serve_static(args: &StaticArgs) -> anyhow::Result<()> {
    let mut config = match &args.config {
        Some(path) => ServeConfig::from_file(path)?,
        None => ServeConfig::default(),
    };
    config.statics.root = args.root.clone();
    if args.serve_hidden {
        config.statics.serve_hidden = true;
    }
    if let Some(addr) = args.addr {
        config.http.addr = addr;
    }
    config.http.admin_addr = args.admin.0;
    let timeout = config.http.shutdown_timeout();
    let server = StaticServer::start(config).context("cannot start the static-file server")?;
    let addr = server.local_addr();
    println!(
        "seda serve static: serving {} on http://{addr}/",
        args.root.display()
    );
    crate::admin::announce(server.admin_addr());
    wait_for_signal().context("cannot install the signal handlers")?;
    println!(
        "shutting down (waiting up to {} ms for requests in flight)",
        timeout.as_millis()
    );
    let done = server.shutdown(timeout);
    println!(
        "stopped: {} connection(s) cut, stages drained: {}",
        done.http.connections_cut, done.runtime.drained
    );
    Ok(())
}

pub(crate) fn wait_for_signal() -> std::io::Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(wait_for_signal_async())
}

/// Listens on `addr` (the proxy's listen backlog), prints `banner` of the bound address, and
/// serves `app` until SIGINT or SIGTERM: the hidden axum services the lab starts.
pub(crate) async fn serve_axum(
    addr: SocketAddr,
    app: axum::Router,
    banner: impl FnOnce(SocketAddr) -> String,
) -> anyhow::Result<()> {
    let listener = seda_proxy::listen(addr).with_context(|| format!("cannot listen on {addr}"))?;
    println!("{}", banner(listener.local_addr()?));
    axum::serve(listener, app)
        .with_graceful_shutdown(async {
            let _ = wait_for_signal_async().await;
        })
        .await
        .context("the server stopped")
}

/// Waits for SIGINT or SIGTERM inside a running tokio runtime.
pub(crate) async fn wait_for_signal_async() -> std::io::Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
    Ok(())
}
