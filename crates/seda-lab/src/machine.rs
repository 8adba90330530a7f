//! What the machine was, recorded in every result so figures can be compared across runs.

use serde::{Deserialize, Serialize};

/// The machine a scenario ran on.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Machine {
    /// Host name.
    pub host: String,
    /// CPUs this process may use.
    pub cpus: usize,
    /// CPU model, from /proc/cpuinfo.
    pub cpu_model: String,
    /// Memory in GiB, from /proc/meminfo.
    pub memory_gib: f64,
    /// Kernel release.
    pub kernel: String,
    /// One-minute load average when the scenario started (a busy machine skews figures).
    pub load_average_1m: f64,
    /// This program's version.
    pub seda_version: String,
}

fn read(path: &str) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

impl Machine {
    /// The CPU model, or "an unknown CPU" where /proc/cpuinfo did not name it.
    pub fn cpu_name(&self) -> &str {
        if self.cpu_model.is_empty() {
            "an unknown CPU"
        } else {
            &self.cpu_model
        }
    }

    /// Reads the machine's description (Linux; fields stay empty elsewhere).
    pub fn probe() -> Machine {
        let cpuinfo = read("/proc/cpuinfo");
        let cpu_model = cpuinfo
            .lines()
            .find(|l| l.starts_with("model name"))
            .and_then(|l| l.split(':').nth(1))
            .map_or(String::new(), |s| s.trim().to_string());
        let memory_gib = read("/proc/meminfo")
            .lines()
            .find(|l| l.starts_with("MemTotal:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<f64>().ok())
            .map_or(0.0, |kb| kb / 1024.0 / 1024.0);
        let load_average_1m = read("/proc/loadavg")
            .split_whitespace()
            .next()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0.0);
        Machine {
            host: read("/proc/sys/kernel/hostname").trim().to_string(),
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
            cpu_model,
            memory_gib,
            kernel: read("/proc/sys/kernel/osrelease").trim().to_string(),
            load_average_1m,
            seda_version: env!("CARGO_PKG_VERSION").to_string(),
        }
    }
}
