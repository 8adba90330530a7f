//! A small closed-loop driver over real HTTP: N [`UserModel`]s for a duration.
//!
//! Each user has its own keep-alive connection and waits for each answer before thinking and
//! sending the next request. Latency is measured from just before sending to the end of the
//! body, per request type, after a warm-up; rejections (503) and errors are counted, never
//! recorded as latency.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

use crate::request::RequestKind;
use crate::user_model::{Mix, Outcome, Step, UserModel};

/// Largest response body read (larger ones count as errors).
const MAX_RESPONSE_BYTES: usize = 8 << 20;

/// Settings of a load run.
#[derive(Debug, Clone)]
pub struct LoadOptions {
    /// Server address.
    pub addr: SocketAddr,
    /// Emulated users.
    pub users: u64,
    /// Users in the corpus (emulated user i logs in as corpus user `i % corpus_users + 1`).
    pub corpus_users: u64,
    /// Measured time.
    pub duration: Duration,
    /// Time before measuring.
    pub warmup: Duration,
    /// Think time.
    pub think: Duration,
    /// Markov model or one request type.
    pub mix: Mix,
    /// Seed of the users' random choices.
    pub seed: u64,
    /// `x-seda-class` header sent by every user, if any.
    pub class: Option<u8>,
}

/// Counts and latencies of one request type.
#[derive(Debug, Clone)]
pub struct KindStats {
    /// 2xx and 3xx responses.
    pub ok: u64,
    /// 503 responses.
    pub rejected: u64,
    /// 4xx responses.
    pub client_errors: u64,
    /// 5xx responses other than 503.
    pub server_errors: u64,
    /// Transport failures.
    pub failed: u64,
    /// Latency of ok and 4xx responses, in microseconds.
    pub latency_us: Histogram<u64>,
}

impl KindStats {
    fn new() -> KindStats {
        KindStats {
            ok: 0,
            rejected: 0,
            client_errors: 0,
            server_errors: 0,
            failed: 0,
            // Constant, valid bounds: 1 us to 10 minutes, 3 significant digits.
            latency_us: Histogram::new_with_bounds(1, 600_000_000, 3)
                .expect("constant histogram bounds are valid"),
        }
    }
}

/// The result of a run.
#[derive(Debug, Clone)]
pub struct LoadReport {
    /// Measured seconds.
    pub seconds: f64,
    /// Per request type, in [`RequestKind::ALL`] order.
    pub kinds: Vec<(RequestKind, KindStats)>,
}

impl LoadReport {
    /// A table: type, ok/s, counts, p50/p90/p99 in ms.
    pub fn table(&self) -> String {
        let mut s = format!(
            "{:<14} {:>8} {:>8} {:>8} {:>6} {:>6} {:>6} {:>9} {:>9} {:>9}\n",
            "type", "ok", "ok/s", "rejected", "4xx", "5xx", "failed", "p50 ms", "p90 ms", "p99 ms"
        );
        let mut total = KindStats::new();
        for (k, st) in &self.kinds {
            s.push_str(&row(k.name(), st, self.seconds));
            total.ok += st.ok;
            total.rejected += st.rejected;
            total.client_errors += st.client_errors;
            total.server_errors += st.server_errors;
            total.failed += st.failed;
            let _ = total.latency_us.add(&st.latency_us);
        }
        s.push_str(&row("all", &total, self.seconds));
        s
    }
}

fn row(name: &str, st: &KindStats, seconds: f64) -> String {
    let q = |p: f64| {
        if st.latency_us.is_empty() {
            "-".to_string()
        } else {
            format!("{:.1}", st.latency_us.value_at_quantile(p) as f64 / 1000.0)
        }
    };
    format!(
        "{:<14} {:>8} {:>8.1} {:>8} {:>6} {:>6} {:>6} {:>9} {:>9} {:>9}\n",
        name,
        st.ok,
        st.ok as f64 / seconds.max(1e-9),
        st.rejected,
        st.client_errors,
        st.server_errors,
        st.failed,
        q(0.5),
        q(0.9),
        q(0.99)
    )
}

type Sender = hyper::client::conn::http1::SendRequest<Full<Bytes>>;

async fn connect(addr: SocketAddr) -> Option<Sender> {
    let stream = TcpStream::connect(addr).await.ok()?;
    let _ = stream.set_nodelay(true);
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .ok()?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Some(sender)
}

struct Answer {
    status: u16,
    location: Option<String>,
    set_cookie: Option<String>,
    body: String,
}

async fn send(
    sender: &mut Option<Sender>,
    addr: SocketAddr,
    step: &Step,
    class: Option<u8>,
) -> Option<Answer> {
    if sender.as_ref().is_none_or(|s| s.is_closed()) {
        *sender = connect(addr).await;
    }
    let s = sender.as_mut()?;
    s.ready().await.ok()?;
    let mut b = hyper::Request::builder()
        .method(step.method)
        .uri(step.path.as_str())
        .header("host", addr.to_string());
    if let Some(c) = &step.cookie {
        b = b.header("cookie", c.as_str());
    }
    if let Some(c) = class {
        b = b.header("x-seda-class", c.to_string());
    }
    let body = match &step.form {
        Some(f) => {
            b = b.header("content-type", "application/x-www-form-urlencoded");
            Full::new(Bytes::from(f.clone()))
        }
        None => Full::new(Bytes::new()),
    };
    let req = b.body(body).ok()?;
    let resp = match s.send_request(req).await {
        Ok(r) => r,
        Err(_) => {
            *sender = None;
            return None;
        }
    };
    let status = resp.status().as_u16();
    let header = |n: &str| {
        resp.headers()
            .get(n)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    let location = header("location");
    let set_cookie = header("set-cookie");
    let body = Limited::new(resp.into_body(), MAX_RESPONSE_BYTES)
        .collect()
        .await
        .ok()?
        .to_bytes();
    Some(Answer {
        status,
        location,
        set_cookie,
        body: String::from_utf8_lossy(&body).into_owned(),
    })
}

async fn user_loop(i: u64, opts: LoadOptions, start: Instant, end: Instant) -> Vec<KindStats> {
    let mut stats: Vec<KindStats> = RequestKind::ALL.iter().map(|_| KindStats::new()).collect();
    let corpus_user = i % opts.corpus_users.max(1) + 1;
    let mut model = UserModel::new(corpus_user, opts.seed.wrapping_add(i), opts.think, opts.mix);
    let mut sender = None;
    let mut step = model.next(None);
    let measure_from = start + opts.warmup;
    loop {
        let wake = Instant::now() + step.delay;
        if wake >= end {
            break;
        }
        tokio::time::sleep_until(wake.into()).await;
        let t0 = Instant::now();
        let answer = send(&mut sender, opts.addr, &step, opts.class).await;
        let t1 = Instant::now();
        let record = t0 >= measure_from && t1 <= end;
        let st = &mut stats[step.kind.index()];
        step = match answer {
            None => {
                if record {
                    st.failed += 1;
                }
                model.next(Some(Outcome::Failed))
            }
            Some(a) if a.status == 503 => {
                if record {
                    st.rejected += 1;
                }
                model.next(Some(Outcome::Rejected))
            }
            Some(a) => {
                if record {
                    match a.status {
                        200..=399 => st.ok += 1,
                        400..=499 => st.client_errors += 1,
                        _ => st.server_errors += 1,
                    }
                    if a.status < 500 {
                        let us = (t1 - t0).as_micros().max(1) as u64;
                        let _ = st.latency_us.record(us);
                    }
                }
                model.next(Some(Outcome::Response {
                    status: a.status,
                    location: a.location.as_deref(),
                    set_cookie: a.set_cookie.as_deref(),
                    body: &a.body,
                }))
            }
        };
    }
    stats
}

/// Runs the load and returns what it measured.
pub async fn run(opts: LoadOptions) -> LoadReport {
    let start = Instant::now();
    let end = start + opts.warmup + opts.duration;
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..opts.users {
        tasks.spawn(user_loop(i, opts.clone(), start, end));
    }
    let mut kinds: Vec<(RequestKind, KindStats)> = RequestKind::ALL
        .iter()
        .map(|&k| (k, KindStats::new()))
        .collect();
    while let Some(r) = tasks.join_next().await {
        if let Ok(stats) = r {
            for (total, st) in kinds.iter_mut().zip(stats) {
                let t = &mut total.1;
                t.ok += st.ok;
                t.rejected += st.rejected;
                t.client_errors += st.client_errors;
                t.server_errors += st.server_errors;
                t.failed += st.failed;
                let _ = t.latency_us.add(&st.latency_us);
            }
        }
    }
    LoadReport {
        seconds: opts.duration.as_secs_f64(),
        kinds,
    }
}
