//! `seda bench hop --metrics` and `seda bench scrape`: what the admin address costs.
//!
//! Recording adds nothing to the hot path (the stages' counters and histograms exist anyway;
//! `/metrics` renders them at scrape time), so the cost to measure is a scraper and the
//! dashboard's sampler running beside the work: `hop --metrics` runs the throughput pipeline
//! alternately bare and with an admin server scraped every `--scrape-ms`, and reports both.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use seda::{Runtime, Stage};
use seda_http::{AdminServer, AdminSources};

/// Largest answer read.
const MAX_BYTES: u64 = 16 << 20;

/// GETs `path` from `addr` (one connection); returns the body.
/// An admin server on a free loopback port serving `rt`.
fn admin_for(rt: &Runtime) -> Result<AdminServer> {
    let sources = AdminSources {
        runtime: Some(rt.clone()),
        ..AdminSources::default()
    };
    Ok(AdminServer::start(([127, 0, 0, 1], 0).into(), sources)?)
}

pub(crate) fn fetch(addr: SocketAddr, path: &str) -> Result<Vec<u8>> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
    s.set_read_timeout(Some(Duration::from_secs(5)))?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n"
    )?;
    let mut raw = Vec::new();
    s.take(MAX_BYTES).read_to_end(&mut raw)?;
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .context("no HTTP head")?;
    anyhow::ensure!(raw.starts_with(b"HTTP/1.1 200"), "{path}: not a 200");
    Ok(raw.split_off(split + 4))
}

/// An admin server on `rt` and a thread scraping its `/metrics` every `period`.
pub(crate) struct Scraped {
    admin: AdminServer,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<u64>>,
}

impl Scraped {
    pub(crate) fn start(rt: &Runtime, period: Duration) -> Result<Scraped> {
        let admin = admin_for(rt)?;
        let addr = admin.local_addr();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut scrapes = 0;
            while !flag.load(Ordering::Relaxed) {
                if fetch(addr, "/metrics").is_ok() {
                    scrapes += 1;
                }
                std::thread::sleep(period);
            }
            scrapes
        });
        Ok(Scraped {
            admin,
            stop,
            thread: Some(thread),
        })
    }

    /// Stops scraping; returns how many scrapes succeeded.
    pub(crate) fn stop(mut self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        let n = self.thread.take().and_then(|t| t.join().ok()).unwrap_or(0);
        self.admin.shutdown();
        n
    }
}

/// Arguments of `seda bench scrape`.
#[derive(clap::Args, Debug)]
pub struct ScrapeArgs {
    /// Stages in the runtime scraped.
    #[arg(long, default_value_t = 20)]
    stages: usize,
    /// Scrapes timed.
    #[arg(long, default_value_t = 200)]
    scrapes: usize,
}

/// `seda bench scrape`: the time of one `/metrics` scrape and of one dashboard sample of a
/// runtime with `--stages` stages that have all seen traffic.
pub fn scrape(args: &ScrapeArgs) -> Result<()> {
    anyhow::ensure!(
        args.stages > 0 && args.scrapes > 0,
        "--stages and --scrapes must be positive"
    );
    let rt = Runtime::start()?;
    let mut sinks = Vec::new();
    for i in 0..args.stages {
        sinks.push(
            rt.stage(
                Stage::builder(format!("stage{i:02}"))
                    .threshold(1024)
                    .handler(|batch: &mut Vec<u64>, _: &seda::Cx<'_>| {
                        // Some spread of service times so every histogram has many buckets.
                        let spin = batch.first().copied().unwrap_or(0) % 50;
                        std::hint::black_box((0..spin * 100).sum::<u64>());
                        batch.clear();
                    }),
            )?,
        );
    }
    for round in 0..2_000u64 {
        for s in &sinks {
            let _ = s.enqueue_timeout(round, Duration::from_secs(1));
        }
    }
    let admin = admin_for(&rt)?;
    let addr = admin.local_addr();
    // Over HTTP, as Prometheus sees it (connect, render, transfer).
    let mut times = Vec::with_capacity(args.scrapes);
    let mut bytes = 0;
    for _ in 0..args.scrapes {
        let t = Instant::now();
        bytes = fetch(addr, "/metrics")?.len();
        times.push(t.elapsed());
    }
    times.sort();
    let q = |p: f64| times[((times.len() - 1) as f64 * p).round() as usize].as_secs_f64() * 1e3;
    println!(
        "/metrics of {} stages: {} bytes; {} scrapes over HTTP: p50 {:.2} ms, p90 {:.2} ms, max {:.2} ms",
        args.stages,
        bytes,
        args.scrapes,
        q(0.5),
        q(0.9),
        q(1.0)
    );
    // The dashboard's sampler: what it does once a second, in this thread.
    let mut history = seda_http::admin::history::History::default();
    let mut sample_times = Vec::new();
    let start = Instant::now();
    for _ in 0..args.scrapes {
        let t = Instant::now();
        let stats = rt.stats();
        let graph = rt.graph();
        history.sample(start.elapsed().as_secs_f64(), &stats, &graph);
        sample_times.push(t.elapsed());
    }
    sample_times.sort();
    let p50 = sample_times[sample_times.len() / 2].as_secs_f64();
    // What the page asks once a second (the admin server's own sampler has taken a few
    // samples by now; `since=0` sends them all, as a page's refresh after a second does).
    std::thread::sleep(Duration::from_millis(1500));
    let mut live_times = Vec::new();
    let mut live = 0;
    for _ in 0..50 {
        let t = Instant::now();
        live = fetch(addr, "/_seda/live?since=0")?.len();
        live_times.push(t.elapsed());
    }
    live_times.sort();
    let live_p50 = live_times[live_times.len() / 2].as_secs_f64();
    println!(
        "dashboard sample of {} stages: p50 {:.3} ms, i.e. {:.3}% of a core at one a second; \
         /_seda/live answer {} bytes in p50 {:.3} ms; history at most {} bytes (one hour)",
        args.stages,
        p50 * 1e3,
        p50 * 100.0,
        live,
        live_p50 * 1e3,
        seda_http::admin::history::History::bytes_for(args.stages)
    );
    admin.shutdown();
    rt.shutdown();
    Ok(())
}
