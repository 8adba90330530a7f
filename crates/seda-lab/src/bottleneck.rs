//! The CPU-bound bottleneck service (WC03 Section 4.5) as the scenarios run it: `seda serve
//! bottleneck` as a pinned child process with a chosen control, and its users.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use seda_load::{LoadConfig, Model};
use seda_testbed::bottleneck::{BottleneckConfig, BottleneckServeConfig, Control, STAGE};

use crate::child::Child;
use crate::lab::Lab;
use crate::loads;
use crate::procfs::process_cpu_seconds;

/// Think time between a reply and the next request. WC03 Section 4.5 does not give one; this
/// is the 20 ms of its e-mail users ("aggressively set"), for users as eager.
pub const THINK: Duration = Duration::from_millis(20);
/// Wait after a 503 before starting over (WC03's e-mail users wait 5 s).
pub const REJECT_WAIT: Duration = Duration::from_secs(5);

/// Starts `seda serve bottleneck` as `name` with `config` (written to `<name>.toml`; the
/// addresses come from the command line), pinned like every lab server; returns its address,
/// its admin address and the process, once it listens.
pub(crate) fn spawn_configured(
    lab: &Lab,
    name: &str,
    config: &BottleneckServeConfig,
) -> Result<(SocketAddr, SocketAddr, Child)> {
    let (addr, admin) = crate::child::two_free_addrs()?;
    let path = write_config(lab, name, config)?;
    let mut cmd = serve_command(lab, addr, admin, &[]);
    cmd.arg("--config").arg(path);
    let mut child = lab.spawn(name, &cmd)?;
    child.wait_port(addr, Duration::from_secs(30))?;
    lab.log(format!(
        "{name} serving on http://{addr}/; live dashboard http://{admin}/"
    ));
    Ok((addr, admin, child))
}

/// `seda serve bottleneck` on `addr` with its admin on `admin`, then `extra` arguments.
fn serve_command(
    lab: &Lab,
    addr: SocketAddr,
    admin: SocketAddr,
    extra: &[&str],
) -> std::process::Command {
    let mut cmd = lab.seda(&[
        "serve",
        "bottleneck",
        "--addr",
        &addr.to_string(),
        "--admin",
        &admin.to_string(),
    ]);
    cmd.args(extra);
    cmd
}

/// Writes `config` to `<name>.toml` in the lab's directory; returns the path.
pub(crate) fn write_config(
    lab: &Lab,
    name: &str,
    config: &BottleneckServeConfig,
) -> Result<PathBuf> {
    let path = lab.file(&format!("{name}.toml"));
    let text = config
        .to_toml()
        .with_context(|| format!("{name}: the configuration has no TOML form"))?;
    std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(path)
}

/// Cores of the emulated processor [`BottleneckServer::start`] gives the page.
pub const PAGE_CORES: f64 = 1.0;

/// Pages a second [`BottleneckServer`] serves at full quality, by design: its cores over a
/// full-quality page's stated cost.
pub fn page_capacity_full_quality() -> f64 {
    let b = seda_testbed::bottleneck::BottleneckConfig::default();
    PAGE_CORES / ((b.base_ms + b.work_ms) / 1e3)
}

/// A running `seda serve bottleneck`.
#[derive(Debug)]
pub struct BottleneckServer {
    /// Where it listens.
    pub addr: SocketAddr,
    /// Its admin address (`/_seda/stats`, `/metrics`, the dashboard).
    pub admin: SocketAddr,
    child: Child,
}

impl BottleneckServer {
    /// Starts the service named `name` (its log is `<name>.log`) with `control` toward a p90
    /// target of `target_s`, on an emulated processor of [`PAGE_CORES`] cores that each page
    /// holds for the service's default stated cost after a little real work. The
    /// controller's measurement window (Sandstorm's 100 samples, or 1 s when traffic is slow)
    /// is multiplied by `time_scale`, so a run on a shorter clock keeps the controller's pace
    /// relative to the target.
    pub fn start(
        lab: &Lab,
        name: &str,
        control: Control,
        target_s: f64,
        time_scale: f64,
    ) -> Result<Self> {
        let (addr, admin) = crate::child::two_free_addrs()?;
        let mut cmd = serve_command(
            lab,
            addr,
            admin,
            &[
                "--control",
                control.name(),
                "--target-s",
                &target_s.to_string(),
            ],
        );
        // Real work of a few KiB (tens of microseconds), then the stated cost; two threads so
        // that one page's real work overlaps another's hold and the processor stays the
        // bottleneck.
        let mut config = BottleneckServeConfig {
            bottleneck: BottleneckConfig {
                cores: PAGE_CORES,
                work_kb: 4.0,
                base_kb: 4.0,
                threads: 2,
                ..BottleneckConfig::default()
            },
            ..BottleneckServeConfig::default()
        };
        if let Some(mut admission) = control.admission(Duration::from_secs_f64(target_s)) {
            let window = [
                ("nreq", (100.0 * time_scale).round().max(10.0)),
                ("timeout_s", time_scale),
            ];
            admission
                .params
                .extend(window.map(|(k, v)| (k.to_string(), v)));
            config.runtime.stages.insert(
                STAGE.to_string(),
                seda::StageConfig {
                    admission: Some(admission),
                    ..seda::StageConfig::default()
                },
            );
        }
        cmd.arg("--config").arg(write_config(lab, name, &config)?);
        let mut child = lab.spawn(name, &cmd)?;
        child.wait_port(addr, Duration::from_secs(30))?;
        lab.log(format!(
            "{name} serving on http://{addr}/; live dashboard http://{admin}/"
        ));
        Ok(BottleneckServer { addr, admin, child })
    }

    /// CPU seconds (user + system) the server has used so far: on a shared machine, the
    /// share of its core it actually got.
    pub fn cpu_seconds(&self) -> Option<f64> {
        process_cpu_seconds(self.child.pid())
    }

    /// Stops the server (SIGTERM, then SIGKILL).
    pub fn stop(self) {
        self.child.stop();
    }
}

/// Closed users requesting pages from `addr`: [`THINK`] (exponential) and [`REJECT_WAIT`] after
/// a 503, both multiplied by `time_scale` (1: the paper's), 1 s intervals with their histograms
/// kept, and a client deadline of `deadline`.
pub fn users(
    addr: SocketAddr,
    users: usize,
    duration: Duration,
    deadline: Duration,
    time_scale: f64,
) -> Result<LoadConfig> {
    let mut cfg = loads::closed_users(addr, users, THINK.mul_f64(time_scale))?;
    cfg.duration = duration;
    cfg.client = loads::users_client(REJECT_WAIT.mul_f64(time_scale), deadline);
    cfg.keep_interval_histograms = true;
    Ok(cfg)
}

/// What a calibration measured.
#[derive(Debug, Clone, Copy)]
pub struct Calibration {
    /// Pages per CPU-second of the server: its capacity on a core of its own, whatever else
    /// ran on that core meanwhile (only the time it ran counts).
    pub capacity_per_s: f64,
    /// Pages per second of wall-clock time (lower when other work took part of the core).
    pub throughput_per_s: f64,
}

/// Measures the page at `addr` with `users` closed users and no think time, its capacity in
/// pages per CPU-second of the server (`cpu_seconds` reads the server's CPU time so far).
pub fn capacity_of(
    lab: &Lab,
    addr: SocketAddr,
    users_n: usize,
    cpu_seconds: &dyn Fn() -> Option<f64>,
) -> Result<Calibration> {
    let duration = lab.pick(Duration::from_millis(1500), Duration::from_secs(10));
    let mut cfg = users(addr, users_n, duration, Duration::from_secs(30), 1.0)?;
    if let Model::Closed(c) = &mut cfg.model {
        c.think = Duration::ZERO;
    }
    // No warm-up: the CPU time read around the run must cover the same pages as the counts.
    let before = cpu_seconds();
    let report = lab.load(cfg)?;
    let cpu = before.zip(cpu_seconds()).map(|(a, b)| b - a);
    let pages = report.summary.counts.completed as f64;
    let throughput_per_s = report.summary.throughput_per_s;
    if throughput_per_s.is_nan() || throughput_per_s <= 1.0 {
        bail!(
            "the service at {addr} completed {throughput_per_s:.1} pages/s while calibrating: \
             is it working?"
        );
    }
    // Without /proc (not Linux), the wall-clock figure is all there is.
    let capacity_per_s = match cpu {
        Some(c) if c > 0.1 => pages / c,
        _ => throughput_per_s,
    };
    Ok(Calibration {
        capacity_per_s,
        throughput_per_s,
    })
}
