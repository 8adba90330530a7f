//! Test fixtures: a small scriptable HTTP server on 127.0.0.1, nginx run as a child process, and
//! config helpers.

use std::net::{SocketAddr, TcpListener as StdListener, TcpStream as StdStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, kill_process};
use seda_load::{Arrivals, Closed, LoadConfig, Model, Open, Target};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// What the test server does with one request.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub body: usize,
    pub delay: Duration,
    pub close: bool,
    /// Close the connection after the reply without saying so (an idle timeout).
    pub silent_close: bool,
    pub garbage: bool,
    /// Extra header lines, each ending in CRLF.
    pub headers: String,
    /// The body text (instead of `body` bytes of filler).
    pub text: Option<String>,
    /// Close the connection after reading the request, without answering (a server that
    /// processed it, then died or timed the connection out).
    pub hang_up: bool,
}

impl Reply {
    pub fn ok() -> Reply {
        Reply {
            status: 200,
            body: 100,
            delay: Duration::ZERO,
            close: false,
            silent_close: false,
            garbage: false,
            headers: String::new(),
            text: None,
            hang_up: false,
        }
    }
    pub fn status(status: u16) -> Reply {
        Reply {
            status,
            ..Reply::ok()
        }
    }
    pub fn delayed(delay: Duration) -> Reply {
        Reply {
            delay,
            ..Reply::ok()
        }
    }
}

/// One request the server received.
#[derive(Debug, Clone)]
pub struct Seen {
    pub at: Instant,
    /// Connection number, in accept order from 0.
    pub conn: u64,
    /// Request number over the server's life, from 0.
    pub n: u64,
    pub path: String,
    /// The request head, lower-cased.
    pub head: String,
}

type Handler = dyn Fn(&Seen) -> Reply + Send + Sync;

#[derive(Default)]
struct Stats {
    log: Mutex<Vec<Seen>>,
    connections: AtomicU64,
    requests: AtomicU64,
    in_flight: AtomicU64,
    max_in_flight: AtomicU64,
}

/// A scriptable HTTP/1.1 server on its own thread and runtime.
pub struct TestServer {
    pub addr: SocketAddr,
    stats: Arc<Stats>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl TestServer {
    pub fn start(handler: impl Fn(&Seen) -> Reply + Send + Sync + 'static) -> TestServer {
        let listener = StdListener::bind("127.0.0.1:0").expect("bind a test port");
        listener.set_nonblocking(true).expect("nonblocking");
        let addr = listener.local_addr().expect("local addr");
        let stats = Arc::new(Stats::default());
        let handler: Arc<Handler> = Arc::new(handler);
        let (stop, mut stopped) = tokio::sync::oneshot::channel::<()>();
        let st = stats.clone();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("rt");
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
                loop {
                    tokio::select! {
                        _ = &mut stopped => return,
                        acc = listener.accept() => {
                            let Ok((sock, _)) = acc else { continue };
                            let conn = st.connections.fetch_add(1, Ordering::SeqCst);
                            tokio::spawn(serve(sock, conn, st.clone(), handler.clone()));
                        }
                    }
                }
            });
        });
        TestServer {
            addr,
            stats,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    pub fn log(&self) -> Vec<Seen> {
        self.stats.log.lock().expect("log").clone()
    }

    pub fn requests(&self) -> u64 {
        self.stats.requests.load(Ordering::SeqCst)
    }

    pub fn connections(&self) -> u64 {
        self.stats.connections.load(Ordering::SeqCst)
    }

    pub fn max_in_flight(&self) -> u64 {
        self.stats.max_in_flight.load(Ordering::SeqCst)
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

async fn serve(mut sock: tokio::net::TcpStream, conn: u64, st: Arc<Stats>, handler: Arc<Handler>) {
    let _ = sock.set_nodelay(true);
    let mut buf = Vec::with_capacity(4096);
    let mut chunk = [0u8; 4096];
    loop {
        let end = loop {
            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
            match sock.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        };
        let head = String::from_utf8_lossy(&buf[..end]).to_string();
        buf.drain(..end);
        let path = head.split(' ').nth(1).unwrap_or("/").to_string();
        let n = st.requests.fetch_add(1, Ordering::SeqCst);
        let seen = Seen {
            at: Instant::now(),
            conn,
            n,
            path,
            head: head.to_ascii_lowercase(),
        };
        st.log.lock().expect("log").push(seen.clone());
        let now = st.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        st.max_in_flight.fetch_max(now, Ordering::SeqCst);
        let reply = handler(&seen);
        if reply.hang_up {
            st.in_flight.fetch_sub(1, Ordering::SeqCst);
            return;
        }
        if !reply.delay.is_zero() {
            tokio::time::sleep(reply.delay).await;
        }
        st.in_flight.fetch_sub(1, Ordering::SeqCst);
        let client_close = head.to_ascii_lowercase().contains("connection: close");
        let out = if reply.garbage {
            b"this is not HTTP at all\r\n\r\n".to_vec()
        } else {
            let body_len = reply.text.as_ref().map_or(reply.body, String::len);
            let close = if reply.close {
                "Connection: close\r\n"
            } else {
                ""
            };
            let mut out = format!(
                "HTTP/1.1 {} X\r\nContent-Length: {body_len}\r\n{close}{}\r\n",
                reply.status, reply.headers
            )
            .into_bytes();
            match &reply.text {
                Some(t) => out.extend_from_slice(t.as_bytes()),
                None => out.resize(out.len() + reply.body, b'b'),
            }
            out
        };
        if sock.write_all(&out).await.is_err()
            || reply.close
            || reply.silent_close
            || reply.garbage
            || client_close
        {
            return;
        }
    }
}

/// A closed-model config: `users` users for `duration`, against `url`.
pub fn closed(url: &str, users: usize, think: Duration, duration: Duration) -> LoadConfig {
    let model = Model::Closed(Closed {
        users,
        think,
        think_exponential: false,
        ramp: Duration::ZERO,
    });
    let mut c = LoadConfig::new(Target::parse(url).expect("url"), model).expect("config");
    c.duration = duration;
    c
}

/// An open-model config at `rate` per second.
pub fn open(url: &str, rate: f64, arrivals: Arrivals, duration: Duration) -> LoadConfig {
    let model = Model::Open(Open {
        rate_per_s: rate,
        arrivals,
        max_connections: 2000,
        max_backlog: 100_000,
    });
    let mut c = LoadConfig::new(Target::parse(url).expect("url"), model).expect("config");
    c.duration = duration;
    c
}

/// Every request sent ends exactly once.
pub fn assert_counts_add_up(r: &seda_load::Report) {
    let s = &r.summary;
    let c = &s.counts;
    assert_eq!(
        c.sent,
        c.completed + c.rejected + c.timeouts + c.errors + s.in_flight_at_end,
        "counts do not add up: {s:?}"
    );
    let sum = |f: fn(&seda_load::record::Counts) -> u64| {
        r.classes.iter().map(|k| f(&k.counts)).sum::<u64>()
    };
    assert_eq!(sum(|k| k.sent), c.sent);
    assert_eq!(sum(|k| k.completed), c.completed);
    assert_eq!(sum(|k| k.rejected), c.rejected);
    assert_eq!(r.clients.iter().map(|k| k.sent).sum::<u64>(), c.sent);
    assert_eq!(
        r.clients.iter().map(|k| k.completed).sum::<u64>(),
        c.completed
    );
    assert_eq!(
        r.clients.iter().map(|k| k.rejected).sum::<u64>(),
        c.rejected
    );
    assert_eq!(
        r.series.iter().map(|i| i.counts.completed).sum::<u64>(),
        c.completed
    );
    assert_eq!(r.series.iter().map(|i| i.counts.sent).sum::<u64>(), c.sent);
}

/// nginx run from the test as a child process (`daemon off; master_process off;`) with a
/// generated config in a temp dir, on a free port.
pub struct Nginx {
    child: Child,
    pub port: u16,
    dir: PathBuf,
}

fn nginx_binary() -> Option<PathBuf> {
    // Lets the skip path be exercised on a machine that has nginx.
    if std::env::var_os("SEDA_LOAD_SKIP_NGINX").is_some() {
        return None;
    }
    seda_peers::NGINX.find()
}

pub fn temp_dir(tag: &str) -> PathBuf {
    static N: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let d = std::env::temp_dir().join(format!(
        "seda-load-{tag}-{}-{}-{nanos}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    ));
    std::fs::create_dir_all(&d).expect("create temp dir");
    d
}

impl Nginx {
    /// Starts nginx serving `www` (files written by `fill`), or prints why not and returns None
    /// when nginx is not installed.
    pub fn start(test: &str, fill: impl FnOnce(&Path)) -> Option<Nginx> {
        let Some(bin) = nginx_binary() else {
            let why = "not installed, or SEDA_LOAD_SKIP_NGINX is set";
            seda_peers::skip(&format!("seda-load test {test}"), &seda_peers::NGINX, why);
            return None;
        };
        let dir = temp_dir("nginx");
        let root = dir.join("www");
        std::fs::create_dir_all(root.join("tmp")).expect("www");
        fill(&root);
        let port = StdListener::bind("127.0.0.1:0")
            .expect("port")
            .local_addr()
            .expect("addr")
            .port();
        let d = dir.display();
        let conf = format!(
            "daemon off;\nmaster_process off;\nworker_processes 1;\nerror_log {d}/error.log;\npid {d}/nginx.pid;\n\
             events {{ worker_connections 4096; }}\n\
             http {{\n  access_log off;\n  client_body_temp_path {d}/tmp;\n  keepalive_requests 1000000;\n\
               server {{ listen 127.0.0.1:{port}; root {r}; }}\n}}\n",
            r = root.display()
        );
        std::fs::write(dir.join("nginx.conf"), conf).expect("write nginx.conf");
        let mut child = Command::new(bin)
            .arg("-c")
            .arg(dir.join("nginx.conf"))
            .arg("-p")
            .arg(&dir)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn nginx");
        // nginx has no readiness signal in this mode: poll its port (bounded).
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if StdStream::connect(("127.0.0.1", port)).is_ok() {
                break;
            }
            if let Ok(Some(status)) = child.try_wait() {
                let log = std::fs::read_to_string(dir.join("error.log")).unwrap_or_default();
                panic!("nginx exited with {status} at start: {log}");
            }
            assert!(
                Instant::now() < deadline,
                "nginx did not listen within 10 s"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        Some(Nginx { child, port, dir })
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// Sends SIGSTOP (`stop = true`) or SIGCONT to nginx.
    pub fn pause(&self, stop: bool) {
        let sig = if stop { Signal::STOP } else { Signal::CONT };
        let pid = Pid::from_child(&self.child);
        kill_process(pid, sig).expect("signal nginx");
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = kill_process(Pid::from_child(&self.child), Signal::CONT);
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Distinct connections that sent requests in `[from, to)` after `t0`.
pub fn connections_between(log: &[Seen], t0: Instant, from: f64, to: f64) -> usize {
    let mut conns: Vec<u64> = log
        .iter()
        .filter(|s| {
            let t = s.at.saturating_duration_since(t0).as_secs_f64();
            t >= from && t < to
        })
        .map(|s| s.conn)
        .collect();
    conns.sort_unstable();
    conns.dedup();
    conns.len()
}
