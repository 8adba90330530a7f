//! What `/proc` says about CPU: a process's and a process tree's CPU seconds, its threads and
//! the cores they ran on, and each core's busy time. One reader for every part of the lab that
//! watches the machine (the health watch, the servers' CPU, the calibrations), so that busy
//! means the same thing everywhere.

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
