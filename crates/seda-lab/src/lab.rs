//! The context a scenario runs in: where it writes, which cores it uses, how it starts servers,
//! drives load and draws plots.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use anyhow::{Context, Result, anyhow};
use seda_load::{LoadConfig, Report};

use crate::child::Child;
use crate::health::{LoadHealth, Watch, Watched};
use crate::peers::Absent;
use crate::plot::LineChart;

/// A scenario's run: its options and output directory.
#[derive(Debug)]
pub struct Lab {
    /// The quick form (under a minute, for CI) rather than the full one.
    pub quick: bool,
    /// This scenario's output directory (exists).
    pub dir: PathBuf,
    /// The `seda` binary that starts our servers.
    pub seda_bin: PathBuf,
    /// The core servers are pinned to (none on a one-core machine).
    pub server_cpu: Option<usize>,
    /// The core the load generator is pinned to.
    pub load_cpu: Option<usize>,
    name: String,
    plots: Mutex<Vec<String>>,
    /// The processes started with [`spawn`](Self::spawn): the servers a load is watched for.
    servers: Mutex<Vec<u32>>,
    /// Unpinned services the servers rely on ([`Lab::uses_service`]).
    services: Mutex<Vec<u32>>,
    /// Every load's watch, in order.
    loads: Mutex<Vec<LoadHealth>>,
}

impl Lab {
    /// A run of scenario `name` writing into `dir` (created). Servers go on CPU 0 and the
    /// load generator on CPU 1 when there are two CPUs or more.
    pub fn new(name: &str, dir: &Path, seda_bin: &Path, quick: bool) -> Result<Lab> {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        let two = std::thread::available_parallelism().map_or(1, |n| n.get()) >= 2;
        Ok(Lab {
            quick,
            dir: dir.to_path_buf(),
            seda_bin: seda_bin.to_path_buf(),
            server_cpu: two.then_some(0),
            load_cpu: two.then_some(1),
            name: name.to_string(),
            plots: Mutex::new(Vec::new()),
            servers: Mutex::new(Vec::new()),
            services: Mutex::new(Vec::new()),
            loads: Mutex::new(Vec::new()),
        })
    }

    /// Picks the quick or the full value.
    pub fn pick<T>(&self, quick: T, full: T) -> T {
        if self.quick { quick } else { full }
    }

    /// Prints a progress line on stderr.
    pub fn log(&self, msg: impl std::fmt::Display) {
        eprintln!("[{}] {msg}", self.name);
    }

    /// What a scenario does without a peer it needs ([`crate::peers::missing`]): with
    /// `SEDA_REQUIRE_PEERS=1`, an error naming the package to install, so that the scenario
    /// cannot run and `seda lab run` fails; otherwise the skip is recorded (stderr and
    /// `SEDA_SKIP_LOG`) and its reason returned, for the result's `config.skipped` and report.
    ///
    /// # Errors
    ///
    /// When peers are required.
    pub fn skip(&self, absent: Absent) -> Result<String> {
        crate::peers::missing(&format!("lab {}", self.name), absent.peer, &absent.why)?;
        Ok(absent.to_string())
    }

    /// [`Lab::skip`] where a peer is absent: `None` where nothing is.
    ///
    /// # Errors
    ///
    /// When a peer is absent and peers are required.
    pub fn skipping(&self, absent: Option<Absent>) -> Result<Option<String>> {
        absent.map(|a| self.skip(a)).transpose()
    }

    /// A path in the output directory.
    pub fn file(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// A directory shared by the scenarios of one `seda lab run` (corpora, file sets), so each
    /// is built once.
    pub fn cache_dir(&self) -> Result<PathBuf> {
        let dir = self.dir.parent().unwrap_or(&self.dir).join(".cache");
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        Ok(dir)
    }

    /// A command running our `seda` binary with `args`.
    pub fn seda(&self, args: &[&str]) -> Command {
        let mut c = Command::new(&self.seda_bin);
        c.args(args);
        c
    }

    /// A command running `program`, a lab-only binary of the workspace that `cargo build
    /// --workspace` puts beside the `seda` binary (`tower-peers`: kept out of `seda` so the
    /// crates it compares ours with stay out of the product's dependencies).
    ///
    /// # Errors
    ///
    /// The binary is not there (only `seda` was built).
    pub fn beside_seda(&self, program: &str, args: &[&str]) -> Result<Command> {
        let path = self.seda_bin.with_file_name(program);
        if !path.is_file() {
            anyhow::bail!(
                "{} is missing: build it with `cargo build --release --workspace` (or `-p {program}`)",
                path.display()
            );
        }
        let mut c = Command::new(path);
        c.args(args);
        Ok(c)
    }

    /// Starts a server process pinned to the server core, logging to `<name>.log`.
    pub fn spawn(&self, name: &str, cmd: &Command) -> Result<Child> {
        self.log(format!("starting {name}"));
        let child = Child::spawn(name, cmd, self.server_cpu, &self.dir)?;
        if let Ok(mut pids) = self.servers.lock() {
            pids.push(child.pid());
        }
        Ok(child)
    }

    /// Counts `pids` (each with its children) as part of the system under test from the next
    /// load on: services the servers rely on that run unpinned, such as the lab's PostgreSQL
    /// ([`crate::postgres::postmasters`]), whose work the watch would otherwise call other
    /// processes' (`proxy-spike`'s database backends took 33-44% of the generator's core).
    pub fn uses_service(&self, pids: Vec<u32>) {
        if let Ok(mut s) = self.services.lock() {
            s.extend(pids);
        }
    }

    /// Runs the load generator on the load core and returns its report. The run is watched
    /// ([`crate::health`]): the CPU the servers got, other processes' use of both cores, the
    /// generator core's lag, and the completions of every second go into `result.json`.
    pub fn load(&self, mut config: LoadConfig) -> Result<Report> {
        config.cpu = self.load_cpu;
        // A progress bar on a terminal; nothing when stderr is not one (CI, logs).
        config.progress = true;
        let live: Vec<u32> = self
            .servers
            .lock()
            .map(|p| p.clone())
            .unwrap_or_default()
            .into_iter()
            .filter(|pid| std::path::Path::new(&format!("/proc/{pid}")).exists())
            .collect();
        let watch = Watch::start(Watched {
            server_pids: live,
            server_cpu: self.server_cpu,
            load_cpu: self.load_cpu,
            service_pids: self.services.lock().map(|s| s.clone()).unwrap_or_default(),
        });
        // On a thread of its own: the generator pins the thread it runs on to the load core,
        // and pinned, the calling thread would stay there, so that every later scenario of the
        // same process (`run all`, `repeat`) saw one CPU and ran its servers unpinned.
        let report = std::thread::scope(|s| {
            s.spawn(|| seda_load::run(config))
                .join()
                .map_err(|_| anyhow!("the load generator panicked"))?
                .map_err(|e| anyhow!("load generator: {e}"))
        });
        let seconds = watch.stop();
        if let Ok(mut loads) = self.loads.lock() {
            let label = format!(
                "load {}: {}",
                loads.len() + 1,
                report.as_ref().map_or("failed", |r| r.model.as_str())
            );
            loads.push(LoadHealth::assess(label, seconds, report.as_ref().ok()));
        }
        report
    }

    /// What the watch saw of every load so far.
    pub fn health(&self) -> Vec<LoadHealth> {
        self.loads.lock().map(|l| l.clone()).unwrap_or_default()
    }

    /// Writes `<stem>.png` and `<stem>.svg` and lists them in the result.
    pub fn plot(&self, stem: &str, chart: &LineChart) -> Result<()> {
        chart
            .write(self.dir.join(stem))
            .map_err(|e| anyhow!("plot {stem}: {e}"))?;
        self.plots
            .lock()
            .map_err(|_| anyhow!("plot list poisoned"))?
            .push(stem.to_string());
        Ok(())
    }

    pub(crate) fn plots(&self) -> Vec<String> {
        self.plots.lock().map(|p| p.clone()).unwrap_or_default()
    }
}
