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

/// `hop --metrics`: the throughput pipeline bare and scraped, in adjacent pairs of rounds.
///
/// Rounds of this benchmark spread about 2 x on a two-core machine (where the workers park and
/// wake decides the rate), so comparing two medians cannot resolve a few percent. Each pair of
/// adjacent rounds (off and on) shares the machine's state, so the verdict is read from the
/// pairs' ratios: their median and a distribution-free 95% interval for that median. The 3%
/// goal is shown only when the whole interval lies inside it, refuted only when it lies outside.
fn hop_metrics(args: &HopArgs) -> Result<()> {
    let period = Duration::from_millis(args.scrape_ms.max(1));
    let (mut off, mut on) = (Vec::new(), Vec::new());
    let mut scrapes = 0;
    for pair in 0..args.rounds {
        // Which side runs first alternates: the second round of a pair runs on a warmer
        // machine (caches, frequency), which would otherwise favour one side.
        let off_first = pair % 2 == 0;
        if off_first {
            off.push(runtime_throughput_with(args.events, None, &mut scrapes)?);
        }
        on.push(runtime_throughput_with(
            args.events,
            Some(period),
            &mut scrapes,
        )?);
        if !off_first {
            off.push(runtime_throughput_with(args.events, None, &mut scrapes)?);
        }
    }
    let rate_ratios: Vec<f64> = on.iter().zip(&off).map(|(n, f)| n.rate / f.rate).collect();
    let cpu_ratios: Vec<f64> = on
        .iter()
        .zip(&off)
        .map(|(n, f)| n.cpu_per_event / f.cpu_per_event)
        .collect();
    println!(
        "{HOPS}-hop pipeline, {} adjacent pairs of rounds (off and on, alternating which goes \
         first) of {} events; metrics on = admin server scraped every {} ms ({scrapes} scrapes)",
        args.rounds,
        args.events,
        period.as_millis()
    );
    let rates = |v: &[Round]| v.iter().map(|r| r.rate).collect::<Vec<_>>();
    for (label, v) in [("off", rates(&off)), ("on ", rates(&on))] {
        let (lo, hi) = min_max(&v);
        println!(
            "metrics {label}: median {:.0} ev/s (min {lo:.0}, max {hi:.0})",
            median(&mut v.clone())
        );
    }
    println!("                    median  95% interval of the median   within 3%?");
    for (label, ratios, worse_above) in [
        ("throughput on/off", rate_ratios, false),
        ("CPU/event on/off ", cpu_ratios, true),
    ] {
        let (m, lo, hi) = median_interval(&ratios);
        let verdict = goal_verdict(lo, hi, 0.03, worse_above);
        println!("{label}   {m:.3}   {lo:.3} .. {hi:.3}               {verdict}");
    }
    Ok(())
}

/// One measured round of the throughput pipeline.
struct Round {
    /// Events per second, wall clock.
    rate: f64,
    /// Process CPU-seconds per event (all threads, the scraper's included).
    cpu_per_event: f64,
}

fn min_max(v: &[f64]) -> (f64, f64) {
    v.iter()
        .fold((f64::MAX, f64::MIN), |(lo, hi), &x| (lo.min(x), hi.max(x)))
}

/// The median of `v` and a distribution-free ~95% interval for it: the order statistics
/// `k` and `n + 1 - k`, `k` the largest with `P(Binomial(n, 1/2) < k) <= 0.025`. With fewer than
/// six values no such `k` exists and the interval is the whole range.
fn median_interval(v: &[f64]) -> (f64, f64, f64) {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    let m = s[n / 2];
    let mut below = 0.0; // P(Binomial(n, 1/2) < k), for k = 1, 2...
    let mut term = 0.5f64.powi(n as i32); // P(X = k - 1)
    let mut k = 0;
    for j in 0..n / 2 {
        below += term;
        if below > 0.025 {
            break;
        }
        k = j + 1;
        term *= (n - j) as f64 / (j + 1) as f64;
    }
    if k == 0 {
        return (m, s[0], s[n - 1]);
    }
    (m, s[k - 1], s[n - k])
}

/// Whether an interval `[lo, hi]` of a ratio lies within `1 +- goal` on its bad side.
fn goal_verdict(lo: f64, hi: f64, goal: f64, worse_above: bool) -> &'static str {
    let (best, worst) = if worse_above {
        (lo, hi)
    } else {
        (2.0 - hi, 2.0 - lo)
    };
    if worst <= 1.0 + goal {
        "yes (shown)"
    } else if best > 1.0 + goal {
        "no (refuted)"
    } else {
        "undecided: run more rounds"
    }
}

fn runtime_throughput(events: u64) -> Result<f64> {
    Ok(runtime_throughput_with(events, None, &mut 0)?.rate)
}

/// Throughput of the pipeline; with `scrape`, an admin server on the runtime is scraped that
/// often meanwhile (`scrapes` counts the scrapes that succeeded).
fn runtime_throughput_with(
    events: u64,
    scrape: Option<Duration>,
    scrapes: &mut u64,
) -> Result<Round> {
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
    let cpu_start = process_cpu();
    for i in 0..events {
        entrance
            .enqueue_timeout(i, Duration::from_secs(10))
            .map_err(|r| anyhow::anyhow!("hop pipeline stalled: {r}"))?;
    }
    done_rx.recv().context("pipeline ended early")?;
    let rate = events as f64 / start.elapsed().as_secs_f64();
    let cpu_per_event = (process_cpu() - cpu_start).as_secs_f64() / events as f64;
    if let Some(s) = scraper {
        *scrapes += s.stop();
    }
    rt.shutdown();
    Ok(Round {
        rate,
        cpu_per_event,
    })
}

/// CPU time of this process so far, all threads.
fn process_cpu() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    Duration::new(
        t.tv_sec.max(0) as u64,
        t.tv_nsec.clamp(0, 999_999_999) as u32,
    )
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_interval_uses_binomial_order_statistics() {
        // n = 11: P(X <= 1) = 12/2048 <= 0.025 < P(X <= 2) = 67/2048, so k = 2.
        let v: Vec<f64> = (1..=11).rev().map(f64::from).collect();
        assert_eq!(median_interval(&v), (6.0, 2.0, 10.0));
        // n = 5: even P(X = 0) = 1/32 exceeds 0.025: the whole range.
        assert_eq!(median_interval(&[3.0, 1.0, 2.0, 5.0, 4.0]), (3.0, 1.0, 5.0));
    }

    #[test]
    fn goal_verdict_needs_the_whole_interval() {
        assert_eq!(goal_verdict(0.99, 1.02, 0.03, true), "yes (shown)");
        assert_eq!(
            goal_verdict(0.99, 1.05, 0.03, true),
            "undecided: run more rounds"
        );
        assert_eq!(goal_verdict(1.04, 1.10, 0.03, true), "no (refuted)");
        // Throughput: lower is worse.
        assert_eq!(goal_verdict(0.98, 1.10, 0.03, false), "yes (shown)");
        assert_eq!(goal_verdict(0.90, 0.96, 0.03, false), "no (refuted)");
    }
}
