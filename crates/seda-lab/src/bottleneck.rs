//! The CPU-bound bottleneck service (WC03 Section 4.5) as the scenarios run it: `seda serve
//! bottleneck` as a pinned child process with a chosen control, and its users.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use seda_http::bottleneck::{BottleneckConfig, BottleneckServeConfig, Control, STAGE};
use seda_load::{ClientConfig, Closed, LoadConfig, Model, Target};

use crate::child::Child;
use crate::lab::Lab;

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
    let mut cmd = lab.seda(&[
        "serve",
        "bottleneck",
        "--addr",
        &addr.to_string(),
        "--admin",
        &admin.to_string(),
    ]);
    cmd.arg("--config").arg(path);
    let mut child = lab.spawn(name, &cmd)?;
    child.wait_port(addr, Duration::from_secs(30))?;
    lab.log(format!(
        "{name} serving on http://{addr}/; live dashboard http://{admin}/"
    ));
    Ok((addr, admin, child))
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
    let b = seda_http::bottleneck::BottleneckConfig::default();
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
        let mut cmd = lab.seda(&[
            "serve",
            "bottleneck",
            "--addr",
            &addr.to_string(),
            "--admin",
            &admin.to_string(),
            "--control",
            control.name(),
            "--target-s",
            &target_s.to_string(),
        ]);
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

/// CPU seconds (user + system) process `pid` has used so far, from `/proc/PID/stat`.
pub fn process_cpu_seconds(pid: u32) -> Option<f64> {
    stat_seconds(pid, 11)
}

/// Two adjacent clock-tick fields of `/proc/PID/stat`, summed, in seconds: `first` counts the
/// fields after the command name (which may hold spaces) in parentheses, from 0; 11 is `utime`
/// and `stime`, 13 `cutime` and `cstime` (reaped children's). Ticks are USER_HZ, 100 on Linux.
fn stat_seconds(pid: u32, first: usize) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let ticks = stat_field(&stat, first)?.parse::<f64>().ok()?
        + stat_field(&stat, first + 1)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}

/// Field `n` of a `/proc/.../stat` line, counting from 0 after the command name (which may
/// hold spaces) in parentheses: 0 is the state, 1 the parent's pid, 36 the core it last ran on.
pub fn stat_field(stat: &str, n: usize) -> Option<&str> {
    stat.rsplit_once(')')?.1.split_whitespace().nth(n)
}

/// CPU seconds the live threads of process `pid` have run, by the scheduler's own count
/// (`/proc/PID/task/*/schedstat`, in ns). The `utime` and `stime` of `/proc/PID/stat` are ticks
/// sampled at the timer and held from going backwards when the kernel scales them to the
/// runtime, so a process that ran in bursts shorter than a tick can read nothing for seconds:
/// under Apache's first load, its 150 workers read 0 CPU in the first second and 40 of the
/// next second's 73 (hundredths of a core) while the scheduler counted 65 and 73, and the
/// lab's watch called the rest other processes' and every `static-sweep` run loaded. A thread
/// that exits takes its count with it: use this for processes whose threads live as long as
/// they do (a proxy's), [`process_cpu_seconds`] for the rest.
pub fn process_runtime_seconds(pid: u32) -> Option<f64> {
    let ns: Vec<u64> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .ok()?
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse().ok())
        .collect();
    // None where the kernel keeps no schedstat, so the caller falls back to `stat`.
    (!ns.is_empty()).then(|| ns.iter().sum::<u64>() as f64 / 1e9)
}

/// CPU seconds used so far by process `pid` and its children: those still running (from
/// `/proc/PID/task/*/children`, by the scheduler's count: `process_runtime_seconds`) and
/// those that exited and were reaped (`cutime` and `cstime`), so that the sum does not fall
/// when a pre-forking server (Apache) retires a worker.
pub fn process_tree_cpu_seconds(pid: u32) -> Option<f64> {
    let own = process_cpu_seconds(pid)?;
    let reaped = stat_seconds(pid, 13).unwrap_or(0.0);
    let children: f64 = children(pid)
        .into_iter()
        .filter_map(|c| process_runtime_seconds(c).or_else(|| process_cpu_seconds(c)))
        .sum();
    Some(own + reaped + children)
}

/// The running children of process `pid` (`/proc/PID/task/*/children`).
fn children(pid: u32) -> Vec<u32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("children")).ok())
        .flat_map(|list| {
            list.split_whitespace()
                .filter_map(|c| c.parse::<u32>().ok())
                .collect::<Vec<_>>()
        })
        .collect()
}

/// One thread of a process tree: its id, the CPU seconds it has run by the scheduler's count,
/// and the core it last ran on.
#[derive(Debug, Clone, Copy)]
pub struct ThreadCpu {
    /// The thread's id.
    pub tid: u32,
    /// CPU seconds it has run (`schedstat`).
    pub run_s: f64,
    /// The core it last ran on (`processor` in its `stat`).
    pub cpu: usize,
}

/// The live threads of process `pid` and of its children (a PostgreSQL postmaster's
/// backends).
pub fn tree_threads(pid: u32) -> Vec<ThreadCpu> {
    std::iter::once(pid)
        .chain(children(pid))
        .flat_map(|p| {
            let tasks = std::fs::read_dir(format!("/proc/{p}/task"))
                .into_iter()
                .flatten();
            tasks.filter_map(|t| {
                let dir = t.ok()?.path();
                let tid = dir.file_name()?.to_str()?.parse().ok()?;
                let ns: f64 = std::fs::read_to_string(dir.join("schedstat"))
                    .ok()?
                    .split_whitespace()
                    .next()?
                    .parse()
                    .ok()?;
                let stat = std::fs::read_to_string(dir.join("stat")).ok()?;
                let cpu = stat_field(&stat, 36)?.parse().ok()?;
                Some(ThreadCpu {
                    tid,
                    run_s: ns / 1e9,
                    cpu,
                })
            })
        })
        .collect()
}

/// CPU seconds core `cpu` has spent busy since boot (user, nice, system, irq, softirq and
/// steal, from `/proc/stat`), whoever ran there: less the server's own, the work of others.
pub fn core_busy_seconds(cpu: usize) -> Option<f64> {
    // user nice system idle iowait irq softirq steal
    core_stat(cpu).map(|v| {
        [0, 1, 2, 5, 6, 7]
            .iter()
            .filter_map(|&i| v.get(i))
            .sum::<f64>()
            / 100.0
    })
}

/// CPU seconds core `cpu` has run tasks or lost to the hypervisor since boot (user, nice,
/// system and steal in `/proc/stat`): [`core_busy_seconds`] without the interrupt work, which
/// the run's own traffic causes on whatever core it lands on, so that the health watch never
/// counts it as other processes'.
pub fn core_task_seconds(cpu: usize) -> Option<f64> {
    core_stat(cpu).map(|v| [0, 1, 2, 7].iter().filter_map(|&i| v.get(i)).sum::<f64>() / 100.0)
}

/// CPU seconds the hypervisor has taken from core `cpu` since boot (`steal` in `/proc/stat`):
/// time this virtual CPU wanted to run and did not, which [`core_busy_seconds`] counts as busy.
pub fn core_steal_seconds(cpu: usize) -> Option<f64> {
    core_stat(cpu)
        .and_then(|v| v.get(7).copied())
        .map(|t| t / 100.0)
}

/// Core `cpu`'s line of `/proc/stat`, in ticks.
fn core_stat(cpu: usize) -> Option<Vec<f64>> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let name = format!("cpu{cpu}");
    let line = stat
        .lines()
        .find(|l| l.split_whitespace().next() == Some(name.as_str()))?;
    Some(
        line.split_whitespace()
            .skip(1)
            .filter_map(|x| x.parse().ok())
            .collect(),
    )
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
    let target = Target::parse(&format!("http://{addr}/"))?;
    let model = Model::Closed(Closed {
        users,
        think: THINK.mul_f64(time_scale),
        think_exponential: true,
        ramp: Duration::ZERO,
    });
    let mut cfg = LoadConfig::new(target, model)?;
    cfg.duration = duration;
    cfg.client = ClientConfig {
        backoff_on_503: Some(REJECT_WAIT.mul_f64(time_scale)),
        deadline,
        connect_timeout: Duration::from_secs(3),
        error_pause: Duration::from_secs(1),
        ..ClientConfig::default()
    };
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A child's work counts as its parent's: once a shell has forked a busy child, the shell's
    /// tree reads 0.2 s more than the shell alone within 10 s (a tree that left children out
    /// would never; a loaded machine may give the child a small share of a core, hence the wait
    /// rather than a fixed sleep).
    #[test]
    fn a_running_childs_cpu_counts_in_its_parents_tree() {
        let Ok(mut shell) = std::process::Command::new("sh")
            .args(["-c", "while :; do :; done & wait"])
            .spawn()
        else {
            eprintln!("skipped: no sh");
            return;
        };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let (own, tree) = loop {
            std::thread::sleep(std::time::Duration::from_millis(100));
            let own = process_cpu_seconds(shell.id()).expect("the shell's stat");
            let tree = process_tree_cpu_seconds(shell.id()).expect("the tree");
            if tree - own >= 0.2 || std::time::Instant::now() > deadline {
                break (own, tree);
            }
        };
        let _ = std::process::Command::new("pkill")
            .args(["-P", &shell.id().to_string()])
            .status();
        let _ = shell.kill();
        let _ = shell.wait();
        assert!(
            tree - own >= 0.2,
            "tree {tree:.2} s, the shell alone {own:.2} s"
        );
    }
}
