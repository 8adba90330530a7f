//! CPU time from `/proc`: what the server and the load generator used, how long the server
//! waited for a core it was ready to run on, and what everything else on their cores took, so
//! a point disturbed by another program on this shared machine shows in the results.
//!
//! The server's run and wait times come from `schedstat` (nanoseconds, per thread); the load
//! generator's from this process's `stat` (its threads, those that have exited included: the
//! generator runs on a thread of its own that is gone by the end of a point); core totals
//! from `/proc/stat` (`USER_HZ` ticks, 100 per second on every Linux the lab runs on);
//! machine-wide I/O stalls from `/proc/pressure/io`.

use std::time::Instant;

use crate::procfs::process_cpu_seconds;

const TICKS_PER_S: f64 = 100.0;

/// Seconds on a CPU and seconds runnable but waiting, from a `schedstat` line.
fn schedstat(text: &str) -> Option<(f64, f64)> {
    let mut f = text.split_whitespace().map(|x| x.parse::<f64>().ok());
    Some((f.next()?? / 1e9, f.next()?? / 1e9))
}

/// The parent pid (field 4) of a `stat` line (the command name may hold spaces).
fn stat_ppid(stat: &str) -> Option<u32> {
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// Run and wait seconds of every thread of process `pid`.
fn process(pid: u32) -> Option<(f64, f64)> {
    let mut total = (0.0, 0.0);
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))
        .ok()?
        .flatten()
    {
        // A thread may exit while we look: skip what cannot be read.
        if let Some((run, wait)) = std::fs::read_to_string(task.path().join("schedstat"))
            .ok()
            .and_then(|t| schedstat(&t))
        {
            total.0 += run;
            total.1 += wait;
        }
    }
    Some(total)
}

/// Run and wait seconds of process `pid` and its direct children (nginx's worker, Apache's
/// 150 processes).
pub fn tree(pid: u32) -> Option<(f64, f64)> {
    let mut total = process(pid)?;
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Some(child) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        if stat_ppid(&stat) == Some(pid)
            && let Some((run, wait)) = process(child)
        {
            total.0 += run;
            total.1 += wait;
        }
    }
    Some(total)
}

/// Busy seconds (user, nice, system) of `cpu` since boot, from `/proc/stat`. Interrupt time is
/// left out: loopback traffic is partly accounted there on either core.
pub fn core_busy_s(cpu: usize) -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let name = format!("cpu{cpu}");
    let line = stat
        .lines()
        .find(|l| l.split_whitespace().next() == Some(name.as_str()))?;
    let f: Vec<f64> = line
        .split_whitespace()
        .skip(1)
        .take(3)
        .filter_map(|x| x.parse().ok())
        .collect();
    (f.len() == 3).then(|| f.iter().sum::<f64>() / TICKS_PER_S)
}

/// Seconds during which every runnable task of the machine was stalled on I/O, from the
/// kernel's pressure stall information (`/proc/pressure/io`, "full" line; absent on kernels
/// without PSI).
pub fn io_full_stall_s() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/pressure/io").ok()?;
    let full = text.lines().find(|l| l.starts_with("full"))?;
    let total = full
        .split_whitespace()
        .find_map(|kv| kv.strip_prefix("total="))?;
    Some(total.parse::<f64>().ok()? / 1e6)
}

/// A reading at the start or end of a point.
#[derive(Debug, Clone, Copy)]
pub struct Mark {
    at: Instant,
    server: Option<(f64, f64)>,
    generator: Option<f64>,
    server_core: Option<f64>,
    load_core: Option<f64>,
    io_stall: Option<f64>,
}

/// Shares of one core over a point (NaN where a counter could not be read).
#[derive(Debug, Clone, Copy, Default)]
pub struct Usage {
    /// The server's processes ran.
    pub server: f64,
    /// The load generator ran (this process's threads).
    pub generator: f64,
    /// The server's threads were ready but waiting for the core (summed over threads, so
    /// Apache's 150 processes waiting for each other count too).
    pub server_waited: f64,
    /// Everything else ran on the server's core.
    pub others_on_server_core: f64,
    /// Everything else ran on the generator's core.
    pub others_on_load_core: f64,
    /// Every runnable task of the machine was stalled on I/O (other programs' disk traffic).
    pub io_stalled: f64,
}

impl Usage {
    /// The share of a core the server or the generator lost to other programs: what they ran
    /// on the generator's core (nothing else of ours runs there), the server's wait where
    /// other programs ran on its core (bounded by what they took, since a server's threads
    /// also wait for each other), or the time the whole machine stalled on I/O, whichever is
    /// largest.
    pub fn lost_to_others(&self) -> f64 {
        let server = self.server_waited.min(self.others_on_server_core);
        [server, self.others_on_load_core, self.io_stalled]
            .into_iter()
            .filter(|x| x.is_finite())
            .fold(0.0, f64::max)
    }
}

impl Mark {
    /// Reads the counters now.
    pub fn now(server_pid: u32, server_core: Option<usize>, load_core: Option<usize>) -> Mark {
        Mark {
            at: Instant::now(),
            server: tree(server_pid),
            // Every thread this process has had, those that exited included: the load
            // generator's, since the lab's own threads sleep while a load runs.
            generator: process_cpu_seconds(std::process::id()),
            server_core: server_core.and_then(core_busy_s),
            load_core: load_core.and_then(core_busy_s),
            io_stall: io_full_stall_s(),
        }
    }

    /// The usage between `self` and `end`.
    pub fn usage(&self, end: &Mark) -> Usage {
        let secs = end.at.duration_since(self.at).as_secs_f64().max(1e-9);
        let d = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) => (b - a) / secs,
            _ => f64::NAN,
        };
        let run = |m: &Option<(f64, f64)>| m.map(|x| x.0);
        let wait = |m: &Option<(f64, f64)>| m.map(|x| x.1);
        let server = d(run(&self.server), run(&end.server));
        let generator = d(self.generator, end.generator);
        Usage {
            server,
            generator,
            server_waited: d(wait(&self.server), wait(&end.server)),
            others_on_server_core: (d(self.server_core, end.server_core) - server).max(0.0),
            others_on_load_core: (d(self.load_core, end.load_core) - generator).max(0.0),
            io_stalled: d(self.io_stall, end.io_stall),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_schedstat_and_stat_lines() {
        assert_eq!(schedstat("2000000000 500000000 7\n"), Some((2.0, 0.5)));
        assert_eq!(schedstat("garbage"), None);
        let line = "42 (web server) S 7 42 42 0 -1 4194560 10 0 0 0 250 50 0 0 20 0 3 0";
        assert_eq!(stat_ppid(line), Some(7));
    }

    #[test]
    fn reads_this_process() {
        assert!(tree(std::process::id()).is_some());
        assert!(core_busy_s(0).is_some());
    }

    #[test]
    fn only_waiting_beside_other_programs_counts_as_lost() {
        let u = Usage {
            server_waited: 3.0, // Apache's processes waiting for each other
            others_on_server_core: 0.05,
            others_on_load_core: 0.1,
            ..Usage::default()
        };
        assert!((u.lost_to_others() - 0.1).abs() < 1e-9);
        let busy = Usage {
            server_waited: 0.4,
            others_on_server_core: 0.9,
            ..Usage::default()
        };
        assert!((busy.lost_to_others() - 0.4).abs() < 1e-9);
        let stalled = Usage {
            io_stalled: 0.3,
            server_waited: f64::NAN,
            ..Usage::default()
        };
        assert!((stalled.lost_to_others() - 0.3).abs() < 1e-9);
    }
}
