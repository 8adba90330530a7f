//! The process metrics of client_golang (`process_*`), read from `/proc/self` at scrape time.
//!
//! Linux only; elsewhere (or if `/proc` cannot be read) the figures are left out.

use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Unit;

/// Ticks per second of `/proc/self/stat`'s CPU times: `sysconf(_SC_CLK_TCK)` is 100 on every
/// Linux architecture Rust supports (the kernel's `USER_HZ`).
const CLK_TCK: f64 = 100.0;

/// Largest `/proc` file read (a `stat` line is a few hundred bytes, `limits` ~1.5 KB).
const MAX_PROC_BYTES: u64 = 64 * 1024;

/// What the process uses now.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProcessStats {
    /// User plus system CPU time, seconds.
    pub cpu_seconds: f64,
    /// Resident set size, bytes.
    pub resident_bytes: u64,
    /// Virtual memory size, bytes.
    pub virtual_bytes: u64,
    /// Threads.
    pub threads: u64,
    /// Open file descriptors.
    pub open_fds: u64,
    /// The soft limit on open file descriptors.
    pub max_fds: Option<u64>,
    /// When the process started, seconds since the Unix epoch.
    pub start_time_s: Option<f64>,
}

fn read(path: &str) -> Option<String> {
    use std::io::Read;
    let mut s = String::new();
    std::fs::File::open(path)
        .ok()?
        .take(MAX_PROC_BYTES)
        .read_to_string(&mut s)
        .ok()?;
    Some(s)
}

/// Reads `/proc/self`; `None` where there is no `/proc`.
pub fn read_self() -> Option<ProcessStats> {
    let stat = read("/proc/self/stat")?;
    // The command name may hold spaces and parentheses: fields start after the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // rest[0] is field 3 (state); utime is field 14, stime 15, num_threads 20, starttime 22,
    // vsize 23.
    let field = |n: usize| -> Option<u64> { f.get(n - 3)?.parse().ok() };
    let ticks = field(14)? + field(15)?;
    let open_fds = std::fs::read_dir("/proc/self/fd").ok()?.count() as u64;
    let max_fds = read("/proc/self/limits").and_then(|l| {
        l.lines()
            .find(|line| line.starts_with("Max open files"))
            .and_then(|line| line.split_whitespace().nth(3)?.parse().ok())
    });
    let start_time_s = boot_time_s().and_then(|boot| Some(boot + field(22)? as f64 / CLK_TCK));
    Some(ProcessStats {
        cpu_seconds: ticks as f64 / CLK_TCK,
        resident_bytes: vm_rss_bytes()?,
        virtual_bytes: field(23)?,
        threads: field(20)?,
        open_fds,
        max_fds,
        start_time_s,
    })
}

/// `VmRSS` of `/proc/self/status` (in kB there; the page size varies by architecture, so not
/// `stat`'s page count).
fn vm_rss_bytes() -> Option<u64> {
    let kb: u64 = read("/proc/self/status")?
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    Some(kb * 1024)
}

fn boot_time_s() -> Option<f64> {
    read("/proc/stat")?
        .lines()
        .find_map(|l| l.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()
}

pub(crate) fn encode(enc: &mut DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
    let Some(p) = read_self() else {
        return Ok(());
    };
    enc.encode_descriptor(
        "process_cpu",
        "Total user and system CPU time spent.",
        Some(&Unit::Seconds),
        MetricType::Counter,
    )?
    .encode_counter::<NoLabelSet, _, u64>(&p.cpu_seconds, None)?;
    let gauges: [(&str, &str, f64); 4] = [
        (
            "process_resident_memory_bytes",
            "Resident memory size in bytes.",
            p.resident_bytes as f64,
        ),
        (
            "process_virtual_memory_bytes",
            "Virtual memory size in bytes.",
            p.virtual_bytes as f64,
        ),
        ("process_threads", "Number of OS threads.", p.threads as f64),
        (
            "process_open_fds",
            "Number of open file descriptors.",
            p.open_fds as f64,
        ),
    ];
    for (name, help, v) in gauges {
        enc.encode_descriptor(name, help, None, MetricType::Gauge)?
            .encode_gauge(&v)?;
    }
    if let Some(max) = p.max_fds {
        enc.encode_descriptor(
            "process_max_fds",
            "Maximum number of open file descriptors.",
            None,
            MetricType::Gauge,
        )?
        .encode_gauge(&(max as f64))?;
    }
    if let Some(t) = p.start_time_s {
        enc.encode_descriptor(
            "process_start_time",
            "Start time of the process since the Unix epoch.",
            Some(&Unit::Seconds),
            MetricType::Gauge,
        )?
        .encode_gauge(&t)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_this_process() {
        let Some(p) = read_self() else {
            println!("skipped: no /proc");
            return;
        };
        let _keep = std::fs::File::open("/proc/self/stat").expect("open");
        assert!(p.threads >= 1);
        assert!(p.open_fds >= 1, "{p:?}");
        assert!(p.resident_bytes > 1 << 20, "{p:?}");
        assert!(p.virtual_bytes >= p.resident_bytes, "{p:?}");
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("clock")
            .as_secs_f64();
        let started = p.start_time_s.expect("start time");
        assert!(
            started <= now + 1.0 && started > now - 86_400.0 * 365.0,
            "{started}"
        );
    }
}
