//! CPU time from `/proc`: what the server and the load generator used, and what everything
//! else on their cores took, so a point disturbed by another program shows in the results.
//!
//! Figures are in `USER_HZ` ticks (100 per second on every Linux the lab runs on), so they are
//! good to about 10 ms over a run of seconds.

use std::time::Instant;

const TICKS_PER_S: f64 = 100.0;

/// `utime + stime` (fields 14 and 15) of a `stat` line, in seconds.
fn stat_cpu_s(stat: &str) -> Option<f64> {
    // The command name may hold spaces: count fields after its closing parenthesis.
    let f: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
    Some(ticks / TICKS_PER_S)
}

/// The parent pid (field 4) of a `stat` line.
fn stat_ppid(stat: &str) -> Option<u32> {
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// CPU seconds this thread has used.
pub fn thread_s() -> Option<f64> {
    stat_cpu_s(&std::fs::read_to_string("/proc/thread-self/stat").ok()?)
}

/// CPU seconds used by process `pid` (all its threads) and its direct children (nginx's
/// worker, Apache's 150 processes).
pub fn tree_s(pid: u32) -> Option<f64> {
    let mut total = stat_cpu_s(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)?;
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let name = entry.file_name();
        if !name
            .to_str()
            .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
        {
            continue;
        }
        // A process may exit while we look: skip what cannot be read.
        if let Ok(stat) = std::fs::read_to_string(entry.path().join("stat"))
            && stat_ppid(&stat) == Some(pid)
        {
            total += stat_cpu_s(&stat).unwrap_or(0.0);
        }
    }
    Some(total)
}

/// Busy seconds (user, nice, system) of `cpu` since boot, from `/proc/stat`. Interrupt time is
/// left out: loopback traffic is partly accounted there on either core.
pub fn core_busy_s(cpu: usize) -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let line = stat
        .lines()
        .find(|l| l.split_whitespace().next() == Some(&format!("cpu{cpu}")))?;
    let f: Vec<f64> = line
        .split_whitespace()
        .skip(1)
        .take(3)
        .filter_map(|x| x.parse().ok())
        .collect();
    (f.len() == 3).then(|| f.iter().sum::<f64>() / TICKS_PER_S)
}

/// A reading at the start of a point.
#[derive(Debug, Clone, Copy)]
pub struct Mark {
    at: Instant,
    server: Option<f64>,
    generator: Option<f64>,
    server_core: Option<f64>,
    load_core: Option<f64>,
}

/// Fractions of one core over a point.
#[derive(Debug, Clone, Copy, Default)]
pub struct Usage {
    /// The server's processes.
    pub server: f64,
    /// The load generator's thread.
    pub generator: f64,
    /// Everything else on the server's core.
    pub others_on_server_core: f64,
    /// Everything else on the generator's core.
    pub others_on_load_core: f64,
}

impl Mark {
    /// Reads the counters now (call on the load generator's thread).
    pub fn now(server_pid: u32, server_core: Option<usize>, load_core: Option<usize>) -> Mark {
        Mark {
            at: Instant::now(),
            server: tree_s(server_pid),
            generator: thread_s(),
            server_core: server_core.and_then(core_busy_s),
            load_core: load_core.and_then(core_busy_s),
        }
    }

    /// The usage between `self` and `end` (NaN where a counter could not be read).
    pub fn usage(&self, end: &Mark) -> Usage {
        let secs = end.at.duration_since(self.at).as_secs_f64().max(1e-9);
        let d = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) => (b - a) / secs,
            _ => f64::NAN,
        };
        let server = d(self.server, end.server);
        let generator = d(self.generator, end.generator);
        Usage {
            server,
            generator,
            others_on_server_core: (d(self.server_core, end.server_core) - server).max(0.0),
            others_on_load_core: (d(self.load_core, end.load_core) - generator).max(0.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_stat_lines_with_spaces_in_the_name() {
        let line = "42 (web server) S 7 42 42 0 -1 4194560 10 0 0 0 250 50 0 0 20 0 3 0";
        assert_eq!(stat_ppid(line), Some(7));
        assert_eq!(stat_cpu_s(line), Some(3.0));
    }

    #[test]
    fn reads_this_process() {
        assert!(thread_s().is_some());
        assert!(tree_s(std::process::id()).is_some());
        assert!(core_busy_s(0).is_some());
    }
}
