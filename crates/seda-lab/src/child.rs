//! Servers under test as child processes: pinned to a core, logged to a file, stopped on drop.
//!
//! A peer (nginx, Apache, HAProxy...) and our own `seda serve ...` are started the same way, so
//! every scenario compares processes on equal terms: one core each, their output kept beside
//! the results for when something goes wrong.

use std::fs::File;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

/// A running child process, killed (SIGTERM, then SIGKILL) when dropped.
#[derive(Debug)]
pub struct Child {
    name: String,
    log: PathBuf,
    process: std::process::Child,
}

/// Where `taskset` is, if installed: it pins a process (and the threads it starts) to a core
/// without any unsafe code of ours.
fn taskset() -> Option<PathBuf> {
    ["/usr/bin/taskset", "/bin/taskset"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
}

impl Child {
    /// Starts `cmd` pinned to `cpu` (when `taskset` is installed) with stdout and stderr going
    /// to `<dir>/<name>.log`.
    pub fn spawn(name: &str, cmd: &Command, cpu: Option<usize>, dir: &Path) -> Result<Child> {
        let log = dir.join(format!("{name}.log"));
        let out = File::create(&log).with_context(|| format!("cannot create {}", log.display()))?;
        let err = out.try_clone()?;
        let mut real = match (cpu, taskset()) {
            (Some(cpu), Some(taskset)) => {
                let mut c = Command::new(taskset);
                c.arg("-c").arg(cpu.to_string()).arg(cmd.get_program());
                c
            }
            _ => Command::new(cmd.get_program()),
        };
        real.args(cmd.get_args());
        for (k, v) in cmd.get_envs() {
            match v {
                Some(v) => real.env(k, v),
                None => real.env_remove(k),
            };
        }
        if let Some(d) = cmd.get_current_dir() {
            real.current_dir(d);
        }
        let process = real
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .with_context(|| format!("cannot start {name} ({:?})", cmd.get_program()))?;
        Ok(Child {
            name: name.to_string(),
            log,
            process,
        })
    }

    /// Waits until `addr` accepts connections; fails with the log's tail if the process exits
    /// or `timeout` passes first.
    pub fn wait_port(&mut self, addr: SocketAddr, timeout: Duration) -> Result<()> {
        let start = Instant::now();
        loop {
            if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
                return Ok(());
            }
            if let Some(status) = self.process.try_wait()? {
                bail!(
                    "{} exited ({status}) before listening on {addr}:\n{}",
                    self.name,
                    self.log_tail()
                );
            }
            if start.elapsed() > timeout {
                bail!(
                    "{} did not listen on {addr} within {timeout:?}:\n{}",
                    self.name,
                    self.log_tail()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The last lines the process wrote.
    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.process.id()
    }

    /// Stops the process: SIGTERM, up to 5 s for a graceful exit, then SIGKILL.
    pub fn stop(mut self) {
        self.terminate();
    }

    fn terminate(&mut self) {
        if matches!(self.process.try_wait(), Ok(Some(_))) {
            return;
        }
        // `kill` from procps sends SIGTERM without unsafe code; fall back to SIGKILL.
        let _ = Command::new("kill")
            .arg(self.process.id().to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(5) {
            if matches!(self.process.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.process.kill();
        let _ = self.process.wait();
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        self.terminate();
    }
}

/// A free TCP port on 127.0.0.1 (bound and released; another process could take it in
/// between, which on a lab machine does not happen in practice).
pub fn free_port() -> Result<u16> {
    let l = TcpListener::bind("127.0.0.1:0").context("cannot bind 127.0.0.1:0")?;
    Ok(l.local_addr()?.port())
}

/// Two different free loopback addresses: a server's service port and its admin port.
pub fn two_free_addrs() -> Result<(SocketAddr, SocketAddr)> {
    let a = free_port()?;
    let mut b = free_port()?;
    for _ in 0..16 {
        if b != a {
            break;
        }
        b = free_port()?;
    }
    Ok((([127, 0, 0, 1], a).into(), ([127, 0, 0, 1], b).into()))
}
