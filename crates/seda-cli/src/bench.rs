//! `seda bench hop`: the runtime's cost per stage hop against a raw channel chain, in one run.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use seda::{Runtime, Sink, Stage};
use serde::Serialize;

/// Stages (and channel hops) in each pipeline.
const HOPS: usize = 3;
/// Queue bound at the pipeline's entrance, for both pipelines.
const ENTRANCE_BOUND: usize = 4096;
/// Pause between latency samples: long enough for every worker to park.
const IDLE_GAP: Duration = Duration::from_millis(1);

#[derive(clap::Args, Debug)]
pub struct HopArgs {
    /// Events pushed through each pipeline for the throughput measurement.
    #[arg(long, default_value_t = 2_000_000)]
    events: u64,
    /// Single events timed through each idle pipeline for the latency measurement.
    #[arg(long, default_value_t = 2_000)]
    samples: usize,
    /// Alternating rounds of each measurement; medians are reported (the machine is noisy).
    #[arg(long, default_value_t = 5)]
    rounds: usize,
    /// Measure only one side (for profiling): `runtime` or `raw`.
    #[arg(long, value_parser = ["runtime", "raw"])]
    only: Option<String>,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    json: bool,
    /// Compare the runtime's throughput bare and with an admin server whose `/metrics` is
    /// scraped every `--scrape-ms` (rounds alternate), instead of runtime against raw.
    #[arg(long)]
    metrics: bool,
    /// Scrape period with `--metrics`, ms (Prometheus's default is 60 s; 100 is harsh).
    #[arg(long, default_value_t = 100)]
    scrape_ms: u64,
}

#[derive(Serialize)]
struct HopResult {
    hops: usize,
    rounds: usize,
    events: u64,
    samples: usize,
    runtime_events_per_s: f64,
    raw_events_per_s: f64,
    throughput_ratio: f64,
    runtime_idle_hop_p50_ns: f64,
    raw_idle_hop_p50_ns: f64,
    runtime_idle_hop_p99_ns: f64,
    raw_idle_hop_p99_ns: f64,
    latency_ratio: f64,
}

pub fn hop(args: &HopArgs) -> Result<()> {
    anyhow::ensure!(
        args.events > 0 && args.samples > 0 && args.rounds > 0,
        "--events, --samples and --rounds must be positive"
    );
    if args.metrics {
        return hop_metrics(args);
    }
    // Alternate the two pipelines so a burst of noise hits both, and report medians.
    let (mut runtime_rates, mut raw_rates) = (Vec::new(), Vec::new());
    let (mut runtime_lat, mut raw_lat) = (Vec::new(), Vec::new());
    let (runtime, raw) = match args.only.as_deref() {
        Some("runtime") => (true, false),
        Some(_) => (false, true),
        None => (true, true),
    };
    for _ in 0..args.rounds {
        if runtime {
            runtime_rates.push(runtime_throughput(args.events)?);
            runtime_lat.extend(runtime_latency(args.samples)?);
        }
        if raw {
            raw_rates.push(raw_throughput(args.events));
            raw_lat.extend(raw_latency(args.samples));
        }
    }
    if !(runtime && raw) {
        let (rates, lat) = if runtime {
            (&mut runtime_rates, &runtime_lat)
        } else {
            (&mut raw_rates, &raw_lat)
        };
        let p50 = quantile(lat, 0.5).as_nanos() as f64 / HOPS as f64;
        println!("events/s {:.0}  idle hop p50 ns {p50:.0}", median(rates));
        return Ok(());
    }
    let runtime_rate = median(&mut runtime_rates);
    let raw_rate = median(&mut raw_rates);
    let per_hop = |v: &[Duration], q: f64| quantile(v, q).as_nanos() as f64 / HOPS as f64;
    let r = HopResult {
        hops: HOPS,
        rounds: args.rounds,
        events: args.events,
        samples: args.samples,
        runtime_events_per_s: runtime_rate,
        raw_events_per_s: raw_rate,
        throughput_ratio: runtime_rate / raw_rate,
        runtime_idle_hop_p50_ns: per_hop(&runtime_lat, 0.5),
        raw_idle_hop_p50_ns: per_hop(&raw_lat, 0.5),
        runtime_idle_hop_p99_ns: per_hop(&runtime_lat, 0.99),
        raw_idle_hop_p99_ns: per_hop(&raw_lat, 0.99),
        latency_ratio: per_hop(&runtime_lat, 0.5) / per_hop(&raw_lat, 0.5),
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&r)?);
    } else {
        println!(
            "{HOPS}-hop pass-through pipeline: median of {} rounds of {} events; {} idle samples",
            r.rounds,
            r.events,
            r.samples * r.rounds
        );
        println!("                      runtime        raw channels   ratio");
        println!(
            "throughput (ev/s)     {:<14.0} {:<14.0} {:.2}",
            r.runtime_events_per_s, r.raw_events_per_s, r.throughput_ratio
        );
        println!(
            "idle hop p50 (ns)     {:<14.0} {:<14.0} {:.2}",
            r.runtime_idle_hop_p50_ns, r.raw_idle_hop_p50_ns, r.latency_ratio
        );
        println!(
            "idle hop p99 (ns)     {:<14.0} {:<14.0}",
            r.runtime_idle_hop_p99_ns, r.raw_idle_hop_p99_ns
        );
    }
    Ok(())
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn quantile(v: &[Duration], q: f64) -> Duration {
    let mut v = v.to_vec();
    v.sort();
    v[((v.len() - 1) as f64 * q).round() as usize]
}

/// Builds `HOPS` pass-through stages ending in `last`; returns the entrance.
fn pipeline<E: seda::Event>(
    rt: &Runtime,
    last: impl Fn(&mut Vec<E>, &seda::Cx<'_>) + Send + Sync + 'static,
) -> Result<Sink<E>> {
    let mut next = rt.stage(
        Stage::builder(format!("hop{HOPS}"))
            .threshold(0)
            .handler(last),
    )?;
    for i in (1..HOPS).rev() {
        let downstream = next.clone();
        let threshold = if i == 1 { ENTRANCE_BOUND } else { 0 };
        next = rt.stage(
            Stage::builder(format!("hop{i}"))
                .threshold(threshold)
                .handler(move |batch: &mut Vec<E>, _: &seda::Cx<'_>| {
                    // Unbounded downstream queues: a rejection here would be a bug.
                    let _ = downstream.enqueue_many(std::mem::take(batch));
                }),
        )?;
    }
    Ok(next)
}

/// `hop --metrics`: the throughput pipeline bare and scraped, alternating, medians and spreads.
fn hop_metrics(args: &HopArgs) -> Result<()> {
    let period = Duration::from_millis(args.scrape_ms.max(1));
    let (mut off, mut on) = (Vec::new(), Vec::new());
    let mut scrapes = 0;
    for _ in 0..args.rounds {
        off.push(runtime_throughput_with(args.events, None, &mut scrapes)?);
        on.push(runtime_throughput_with(
            args.events,
            Some(period),
            &mut scrapes,
        )?);
    }
    let spread = |v: &[f64]| {
        let (lo, hi) = v
            .iter()
            .fold((f64::MAX, f64::MIN), |(lo, hi), &x| (lo.min(x), hi.max(x)));
        (lo, hi)
    };
    let (off_lo, off_hi) = spread(&off);
    let (on_lo, on_hi) = spread(&on);
    let (m_off, m_on) = (median(&mut off), median(&mut on));
    println!(
        "{HOPS}-hop pipeline, {} alternating rounds of {} events; metrics on = admin server \
         scraped every {} ms ({scrapes} scrapes)",
        args.rounds,
        args.events,
        period.as_millis()
    );
    println!("metrics off: median {m_off:.0} ev/s (min {off_lo:.0}, max {off_hi:.0})");
    println!("metrics on:  median {m_on:.0} ev/s (min {on_lo:.0}, max {on_hi:.0})");
    println!("on / off: {:.3}", m_on / m_off);
    Ok(())
}

fn runtime_throughput(events: u64) -> Result<f64> {
    runtime_throughput_with(events, None, &mut 0)
}

/// Throughput of the pipeline; with `scrape`, an admin server on the runtime is scraped that
/// often meanwhile (`scrapes` counts the scrapes that succeeded).
fn runtime_throughput_with(
    events: u64,
    scrape: Option<Duration>,
    scrapes: &mut u64,
) -> Result<f64> {
    let rt = Runtime::start()?;
    let scraper = scrape
        .map(|p| crate::bench_metrics::Scraped::start(&rt, p))
        .transpose()?;
    let seen = Arc::new(AtomicU64::new(0));
    let (done_tx, done_rx) = mpsc::channel();
    let counter = seen.clone();
    let done_tx = std::sync::Mutex::new(done_tx);
    let entrance = pipeline(&rt, move |batch: &mut Vec<u64>, _: &seda::Cx<'_>| {
        let n = batch.len() as u64;
        batch.clear();
        if counter.fetch_add(n, Ordering::Relaxed) + n == events {
            let _ = done_tx.lock().map(|tx| tx.send(()));
        }
    })?;
    let start = Instant::now();
    for i in 0..events {
        entrance
            .enqueue_timeout(i, Duration::from_secs(10))
            .map_err(|r| anyhow::anyhow!("hop pipeline stalled: {r}"))?;
    }
    done_rx.recv().context("pipeline ended early")?;
    let rate = events as f64 / start.elapsed().as_secs_f64();
    if let Some(s) = scraper {
        *scrapes += s.stop();
    }
    rt.shutdown();
    Ok(rate)
}

/// A chain of channels with one forwarding thread per hop but the last; returns the entrance,
/// the last channel's receiver (for the caller's last hop) and the threads.
fn raw_chain<T: Send + 'static>() -> (
    crossbeam_channel::Sender<T>,
    crossbeam_channel::Receiver<T>,
    Vec<thread::JoinHandle<()>>,
) {
    let (entrance, mut rx) = crossbeam_channel::bounded::<T>(ENTRANCE_BOUND);
    let mut threads = Vec::new();
    for _ in 1..HOPS {
        let (tx, next_rx) = crossbeam_channel::unbounded();
        let input = rx;
        threads.push(thread::spawn(move || {
            for x in input {
                if tx.send(x).is_err() {
                    break;
                }
            }
        }));
        rx = next_rx;
    }
    (entrance, rx, threads)
}

fn raw_throughput(events: u64) -> f64 {
    let (entrance, rx, threads) = raw_chain::<u64>();
    let last = thread::spawn(move || rx.iter().count() as u64);
    let start = Instant::now();
    for i in 0..events {
        if entrance.send(i).is_err() {
            break;
        }
    }
    drop(entrance);
    let seen = last.join().unwrap_or(0);
    let rate = seen as f64 / start.elapsed().as_secs_f64();
    for t in threads {
        let _ = t.join();
    }
    rate
}

fn runtime_latency(samples: usize) -> Result<Vec<Duration>> {
    let rt = Runtime::start()?;
    let (tx, rx) = mpsc::channel();
    let tx = std::sync::Mutex::new(tx);
    let entrance = pipeline(&rt, move |batch: &mut Vec<Instant>, _: &seda::Cx<'_>| {
        let now = Instant::now();
        for sent in batch.drain(..) {
            let _ = tx.lock().map(|tx| tx.send(now - sent));
        }
    })?;
    let mut out = Vec::with_capacity(samples);
    for _ in 0..samples {
        thread::sleep(IDLE_GAP);
        entrance
            .enqueue(Instant::now())
            .map_err(|r| anyhow::anyhow!("{r}"))?;
        out.push(rx.recv().context("pipeline ended early")?);
    }
    rt.shutdown();
    Ok(out)
}

fn raw_latency(samples: usize) -> Vec<Duration> {
    let (entrance, rx, mut threads) = raw_chain::<Instant>();
    let (back_tx, back_rx) = mpsc::channel();
    threads.push(thread::spawn(move || {
        for sent in rx {
            let _ = back_tx.send(sent.elapsed());
        }
    }));
    let mut out = Vec::with_capacity(samples);
    for _ in 0..samples {
        thread::sleep(IDLE_GAP);
        if entrance.send(Instant::now()).is_err() {
            break;
        }
        match back_rx.recv() {
            Ok(d) => out.push(d),
            Err(_) => break,
        }
    }
    drop(entrance);
    for t in threads {
        let _ = t.join();
    }
    out
}
