//! `seda bench idle`: the memory an idle keep-alive connection costs `seda serve static`, next
//! to nginx's in the same run.
//!
//! Each server runs as its own process. N connections are opened, each makes one request and
//! reads the answer, then stays open and idle; the server's resident set size (VmRSS, summed
//! over nginx's master and worker) is read before and after, and the difference divided by N is
//! the cost of one idle connection. Kernel socket buffers are not in the RSS of either server.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use seda_lab::peers::nginx;

#[derive(clap::Args, Debug)]
pub struct IdleArgs {
    /// Idle keep-alive connections to open against each server.
    #[arg(long, default_value_t = 10_000)]
    connections: usize,
    /// Measure only `seda serve static` (nginx is measured when it is installed).
    #[arg(long)]
    no_nginx: bool,
}

pub fn idle(args: &IdleArgs) -> Result<()> {
    anyhow::ensure!(args.connections > 0, "--connections must be positive");
    // Our N client sockets and each server's N: the children inherit the raised limit.
    let limit = raise_open_files(args.connections as u64 * 2 + 512)?;
    anyhow::ensure!(
        limit > args.connections as u64 + 256,
        "the open-files limit is {limit}: too low for {} connections (raise the hard limit)",
        args.connections
    );
    let dir = std::env::temp_dir().join(format!("seda-bench-idle-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let root = dir.join("www");
    std::fs::create_dir_all(&root).context("cannot create the served directory")?;
    std::fs::write(root.join("f.txt"), vec![b'x'; 100]).context("cannot write the file")?;
    let result = run(args, &dir, &root);
    let _ = std::fs::remove_dir_all(&dir);
    result
}

fn run(args: &IdleArgs, dir: &Path, root: &Path) -> Result<()> {
    let n = args.connections;
    println!(
        "open-files limit {}; {n} idle keep-alive connections each\n",
        open_files_limit()
    );
    println!(
        "{:<20} {:>12} {:>12} {:>16}",
        "server", "RSS before", "RSS idle", "bytes/idle conn"
    );
    let ours = Seda::start(dir, root, n)?;
    let r = measure(&[ours.child.id()], &ours.addr, n);
    drop(ours);
    print_row("seda serve static", r?);
    if args.no_nginx {
        return Ok(());
    }
    match Nginx::start(dir, root, n) {
        Ok(Some(ng)) => {
            let pids = ng.pids();
            let r = measure(&pids, &ng.addr, n);
            drop(ng);
            print_row("nginx (1 worker)", r?);
        }
        Ok(None) => println!("nginx: not installed (apt-get install nginx-light), skipped"),
        Err(e) => println!("nginx: {e:#}"),
    }
    Ok(())
}

fn print_row(name: &str, (before, after, n): (u64, u64, usize)) {
    let per = after.saturating_sub(before) as f64 / n as f64;
    println!(
        "{name:<20} {:>9.1} MB {:>9.1} MB {per:>16.0}",
        before as f64 / 1e6,
        after as f64 / 1e6
    );
}

/// Opens one warm-up connection, then `n` idle ones after one request each; RSS before and after.
fn measure(pids: &[u32], addr: &str, n: usize) -> Result<(u64, u64, usize)> {
    let mut warm = connect(addr)?;
    request(&mut warm)?;
    std::thread::sleep(Duration::from_millis(300));
    let before = rss(pids)?;
    let mut idle = Vec::with_capacity(n);
    for i in 0..n {
        let mut c = connect(addr).with_context(|| format!("connection {i}"))?;
        request(&mut c).with_context(|| format!("request on connection {i}"))?;
        idle.push(c);
    }
    std::thread::sleep(Duration::from_millis(500));
    let after = rss(pids)?;
    // Every connection is still open and usable: one more request on the last one.
    if let Some(c) = idle.last_mut() {
        request(c).context("the last idle connection no longer answers")?;
    }
    Ok((before, after, n))
}

fn connect(addr: &str) -> Result<TcpStream> {
    let s = TcpStream::connect(addr).with_context(|| format!("cannot connect to {addr}"))?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    s.set_nodelay(true)?;
    Ok(s)
}

/// `GET /f.txt` on a keep-alive connection; reads the head and the 100-byte body.
fn request(s: &mut TcpStream) -> Result<()> {
    s.write_all(b"GET /f.txt HTTP/1.1\r\nHost: bench\r\n\r\n")?;
    let mut got = Vec::with_capacity(512);
    let mut buf = [0u8; 1024];
    loop {
        let k = s.read(&mut buf)?;
        if k == 0 {
            bail!("closed before the answer was complete");
        }
        got.extend_from_slice(&buf[..k]);
        if let Some(end) = got.windows(4).position(|w| w == b"\r\n\r\n") {
            if !got.starts_with(b"HTTP/1.1 200") {
                bail!("answer: {}", String::from_utf8_lossy(&got[..end]));
            }
            if got.len() >= end + 4 + 100 {
                return Ok(());
            }
        }
        if got.len() > 64 * 1024 {
            bail!("answer too long");
        }
    }
}

/// Sum of VmRSS over `pids`, bytes.
fn rss(pids: &[u32]) -> Result<u64> {
    let mut total = 0;
    for pid in pids {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
            .with_context(|| format!("cannot read /proc/{pid}/status"))?;
        let kb: u64 = status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .context("no VmRSS")?;
        total += kb * 1024;
    }
    Ok(total)
}

fn open_files_limit() -> u64 {
    rustix::process::getrlimit(rustix::process::Resource::Nofile)
        .current
        .unwrap_or(u64::MAX)
}

/// Raises the soft open-files limit towards `want` (at most the hard limit); the new soft limit.
fn raise_open_files(want: u64) -> Result<u64> {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let cur = getrlimit(Resource::Nofile);
    let target = cur.maximum.map_or(want, |hard| want.min(hard));
    if cur.current.is_none_or(|c| c < target) {
        setrlimit(
            Resource::Nofile,
            Rlimit {
                current: Some(target),
                maximum: cur.maximum,
            },
        )
        .context("cannot raise the open-files limit")?;
    }
    Ok(open_files_limit())
}

/// Waits until `addr` accepts a connection.
fn wait_listening(addr: &str, child: &mut Child) -> Result<()> {
    let until = Instant::now() + Duration::from_secs(10);
    while Instant::now() < until {
        if TcpStream::connect(addr).is_ok() {
            return Ok(());
        }
        if let Some(status) = child.try_wait()? {
            bail!("exited ({status}) before listening");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    bail!("not listening on {addr} after 10 s")
}

/// `seda serve static` as a child process (this executable).
struct Seda {
    child: Child,
    addr: String,
}

impl Seda {
    fn start(dir: &Path, root: &Path, n: usize) -> Result<Seda> {
        let port = seda_lab::free_port()?;
        let conf = dir.join("serve.toml");
        std::fs::write(
            &conf,
            format!(
                "[http]\nmax_connections = {}\nidle_timeout_ms = 600000\n",
                n + 64
            ),
        )?;
        let addr = format!("127.0.0.1:{port}");
        let mut child = Command::new(std::env::current_exe()?)
            .args(["serve", "static", "--addr", &addr, "--root"])
            .arg(root)
            .arg("--config")
            .arg(&conf)
            .stdout(Stdio::null())
            .spawn()
            .context("cannot start seda serve static")?;
        if let Err(e) = wait_listening(&addr, &mut child) {
            let _ = child.kill();
            let _ = child.wait();
            return Err(e.context("seda serve static"));
        }
        Ok(Seda { child, addr })
    }
}

impl Drop for Seda {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// nginx with the lab's configuration, its connection limits raised for the run.
struct Nginx {
    child: Child,
    addr: String,
}

impl Nginx {
    fn start(dir: &Path, root: &Path, n: usize) -> Result<Option<Nginx>> {
        let port = seda_lab::free_port()?;
        let work: PathBuf = dir.join("nginx");
        std::fs::create_dir_all(&work)?;
        let mut cmd = match nginx::command(root, port, &work) {
            Ok(c) => c,
            Err(seda_lab::peers::PeerError::NotInstalled { .. }) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        // The lab's file, with room for n connections.
        let conf = work.join("nginx.conf");
        let text = std::fs::read_to_string(&conf)?
            .replace(
                "worker_connections 8192;",
                &format!("worker_connections {};", n + 256),
            )
            .replace(
                "worker_rlimit_nofile 16384;",
                &format!("worker_rlimit_nofile {};", open_files_limit()),
            );
        std::fs::write(&conf, text)?;
        let addr = format!("127.0.0.1:{port}");
        let mut child = cmd
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("cannot start nginx")?;
        if let Err(e) = wait_listening(&addr, &mut child) {
            let _ = child.kill();
            let _ = child.wait();
            return Err(e.context("nginx"));
        }
        Ok(Some(Nginx { child, addr }))
    }

    /// The master and its worker(s).
    fn pids(&self) -> Vec<u32> {
        let master = self.child.id();
        let children = std::fs::read_to_string(format!("/proc/{master}/task/{master}/children"))
            .unwrap_or_default();
        std::iter::once(master)
            .chain(children.split_whitespace().filter_map(|p| p.parse().ok()))
            .collect()
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        // SIGTERM-free stop: nginx's master exits on SIGKILL and its worker follows when the
        // master's pipe closes; kill the worker too so nothing is left listening.
        for pid in self.pids().into_iter().skip(1) {
            let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
