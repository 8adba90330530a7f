//! `seda serve bottleneck`: WC03 Section 4.5's CPU-bound page with a quality knob.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, anyhow, bail};
use clap::Args;
use seda_testbed::bottleneck::{BottleneckServeConfig, BottleneckServer, Control, STAGE};

/// Arguments of `seda serve bottleneck`.
#[derive(Args, Debug)]
pub struct BottleneckArgs {
    /// Address to listen on (overrides the file's `http.addr`).
    #[arg(long)]
    addr: Option<SocketAddr>,
    /// Overload control of the stage: none, degrade (WC03 Figure 12) or degrade+admission
    /// (Figure 13). A `[stages.bottleneck.admission]` section of --config overrides it.
    #[arg(long, default_value = "none", value_parser = Control::NAMES)]
    control: String,
    /// 90th-percentile response-time target of the controller, in seconds.
    #[arg(long, default_value_t = 5.0)]
    target_s: f64,
    /// Mean KiB read per request at quality 1 (overrides `bottleneck.work_kb`).
    #[arg(long)]
    work_kb: Option<f64>,
    /// Checksum passes at quality 1 (overrides `bottleneck.rounds`).
    #[arg(long)]
    rounds: Option<u32>,
    /// KiB checksummed per request whatever the quality (overrides `bottleneck.base_kb`).
    #[arg(long)]
    base_kb: Option<f64>,
    /// An emulated backend's wait per request, ms: a plant whose throughput grows with
    /// threads (overrides `bottleneck.backend_ms`).
    #[arg(long)]
    backend_ms: Option<f64>,
    /// Requests the emulated backend serves at once before it thrashes: a plant with an
    /// interior optimum of threads (overrides `bottleneck.backend_knee`).
    #[arg(long)]
    backend_knee: Option<usize>,
    /// Requests the emulated backend serves at once (overrides `bottleneck.backend_channels`).
    #[arg(long)]
    backend_channels: Option<usize>,
    /// Share of the backend's wait each call's wait varies by, on either side, in [0, 1]
    /// (overrides `bottleneck.backend_spread`).
    #[arg(long)]
    backend_spread: Option<f64>,
    /// Hold an emulated processor of this many cores for each page's stated cost after its
    /// real work (`bottleneck.base_ms + bottleneck.work_ms x quality x size`), so the service's
    /// capacity is known before a run (overrides `bottleneck.cores`; 0: none).
    #[arg(long)]
    cores: Option<f64>,
    /// Admin address: dashboard, /metrics, /_seda/stats, /_seda/graph; never the service port
    /// (`off`: none).
    #[arg(long, default_value = crate::admin::DEFAULT)]
    admin: crate::admin::AdminAddr,
    /// TOML file with [http], [bottleneck] and the runtime's [runtime]/[stages.bottleneck].
    #[arg(long)]
    config: Option<PathBuf>,
}

/// Serves until SIGINT or SIGTERM, then shuts down gracefully.
pub fn serve(args: &BottleneckArgs) -> anyhow::Result<()> {
    let mut config = match &args.config {
        Some(path) => BottleneckServeConfig::from_file(path)?,
        None => BottleneckServeConfig::default(),
    };
    if let Some(addr) = args.addr {
        config.http.addr = addr;
    }
    config.http.admin_addr = args.admin.0;
    let b = &mut config.bottleneck;
    b.work_kb = args.work_kb.unwrap_or(b.work_kb);
    b.rounds = args.rounds.unwrap_or(b.rounds);
    b.base_kb = args.base_kb.unwrap_or(b.base_kb);
    b.backend_ms = args.backend_ms.unwrap_or(b.backend_ms);
    b.backend_knee = args.backend_knee.unwrap_or(b.backend_knee);
    b.backend_channels = args.backend_channels.unwrap_or(b.backend_channels);
    b.backend_spread = args.backend_spread.unwrap_or(b.backend_spread);
    b.cores = args.cores.unwrap_or(b.cores);
    b.validate()
        .map_err(|e| anyhow!("bad bottleneck setting: {e}"))?;
    let control = Control::from_name(&args.control)
        .ok_or_else(|| anyhow!("--control must be one of {}", Control::NAMES.join(", ")))?;
    let target = match Duration::try_from_secs_f64(args.target_s) {
        Ok(t) if !t.is_zero() => t,
        _ => bail!(
            "--target-s must be a positive number of seconds, got {}",
            args.target_s
        ),
    };
    let from_file = config
        .runtime
        .stages
        .get(STAGE)
        .and_then(|s| s.admission.as_ref())
        .map(|a| a.kind.clone());
    let timeout = config.http.shutdown_timeout();
    let b = &config.bottleneck;
    let mut summary = format!(
        "work {} KiB x {} rounds + base {} KiB",
        b.work_kb, b.rounds, b.base_kb
    );
    if b.cores > 0.0 {
        summary += &format!(
            ", then {} ms + {} ms x quality x size on {} emulated core(s)",
            b.base_ms, b.work_ms, b.cores
        );
    }
    let server = BottleneckServer::start(config, control.admission(target))
        .context("cannot start the bottleneck service")?;
    let addr = server.local_addr();
    let control_text = match from_file {
        Some(kind) => format!("{kind} (from the configuration file)"),
        None if control == Control::None => "none".to_string(),
        None => format!("{} (p90 target {} s)", control.name(), target.as_secs_f64()),
    };
    println!("seda serve bottleneck: control {control_text}, {summary}; serving on http://{addr}/");
    crate::admin::announce(server.admin_addr());
    crate::serve::wait_for_signal().context("cannot install the signal handlers")?;
    println!(
        "shutting down (waiting up to {} ms for requests in flight)",
        timeout.as_millis()
    );
    let stats = server.runtime().stats();
    if let Some(s) = stats.stages.iter().find(|s| s.name == STAGE) {
        let c = &s.totals.counters;
        println!(
            "{STAGE}: completed {}, rejected {}, dropped {}, p90 {}",
            c.completed,
            c.rejected_total,
            c.dropped_total,
            s.totals
                .response
                .p90_s
                .map_or("-".into(), |p| format!("{:.3} s", p))
        );
    }
    let done = server.shutdown(timeout);
    println!(
        "stopped: {} connection(s) cut, stages drained: {}",
        done.http.connections_cut, done.runtime.drained
    );
    Ok(())
}
