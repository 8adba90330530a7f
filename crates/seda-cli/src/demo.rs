//! `seda demo`: a small stage graph driven past its capacity, with and without admission
//! control, printing what each stage saw every second.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;
use seda::{Config, Meta, Runtime, Sink, Stage, handler};

/// Service time of the bottleneck stage's handler.
const SERVICE: Duration = Duration::from_millis(1);
/// Workers of the bottleneck stage: capacity is about `WORKERS / SERVICE`.
const WORKERS: usize = 2;
/// Queue threshold when admission control is on.
const THRESHOLD: usize = 64;
/// Offered load, as a multiple of the measured capacity.
const OVERLOAD: f64 = 2.0;

/// A request flowing through the demo graph.
struct Request {
    meta: Meta,
}

impl seda::Event for Request {
    fn meta(&self) -> Option<&Meta> {
        Some(&self.meta)
    }
}

#[derive(clap::Args, Debug)]
pub struct DemoArgs {
    /// Seconds of overload in each phase.
    #[arg(long, default_value_t = 4)]
    seconds: u64,
}

pub fn run(args: &DemoArgs) -> Result<()> {
    anyhow::ensure!(
        (1..=600).contains(&args.seconds),
        "--seconds must be between 1 and 600"
    );
    println!(
        "seda demo: parse (inline) -> work ({WORKERS} workers, {SERVICE:?} per request) -> reply\n"
    );
    let capacity = measure_capacity()?;
    let offered = capacity * OVERLOAD;
    println!(
        "measured capacity of `work`: {capacity:.0} requests/s; offering {offered:.0}/s ({OVERLOAD}x)\n"
    );
    let controlled = phase(Some(THRESHOLD), offered, args.seconds)?;
    let uncontrolled = phase(None, offered, args.seconds)?;
    println!("summary (last second of each phase):");
    println!(
        "  with a queue threshold of {THRESHOLD}: p90 response {} ms, {:.0}% rejected at the door (reason QueueFull; an HTTP front end answers 503)",
        ms(controlled.p90_s),
        controlled.rejected_fraction * 100.0
    );
    println!(
        "  without admission control:       p90 response {} ms and growing, nothing rejected, the queue holds {} requests",
        ms(uncontrolled.p90_s),
        uncontrolled.queue_len
    );
    Ok(())
}

fn ms(s: Option<f64>) -> String {
    s.map_or("-".into(), |s| format!("{:.0}", s * 1000.0))
}

struct Phase {
    p90_s: Option<f64>,
    rejected_fraction: f64,
    queue_len: usize,
}

fn graph(threshold: Option<usize>) -> Result<(Runtime, Sink<Request>)> {
    let config = Config::from_toml("[runtime]\ntick_ms = 10\nstats_period_ms = 1000\n")?;
    let rt = Runtime::builder().config(config).start()?;
    let reply = rt.stage(Stage::builder("reply").handler(handler::each(|_r: Request, _| {})))?;
    let work = rt.stage(
        Stage::builder("work")
            .threads(WORKERS)
            .thread_bounds(WORKERS, WORKERS)
            .batch(1)
            .threshold(threshold.unwrap_or(0))
            .handler(handler::each(move |r: Request, _| {
                std::thread::sleep(SERVICE);
                let _ = reply.enqueue(r);
            })),
    )?;
    let parse = rt.stage(Stage::builder("parse").inline().handler(handler::each(
        move |r: Request, _| {
            // The rejection comes back here; a server would answer 503 with Retry-After.
            let _ = work.enqueue(r);
        },
    )))?;
    Ok((rt, parse))
}

fn measure_capacity() -> Result<f64> {
    let (rt, parse) = graph(Some(THRESHOLD))?;
    let completed = || {
        rt.stats()
            .stages
            .iter()
            .find(|s| s.name == "reply")
            .map_or(0, |s| s.totals.counters.completed)
    };
    // Keep the queue full; count completions over one second after a short warm-up.
    let saturate = |until: Instant| {
        while Instant::now() < until {
            if parse.enqueue(Request { meta: Meta::new() }).is_err() {
                std::thread::sleep(Duration::from_micros(200));
            }
        }
    };
    saturate(Instant::now() + Duration::from_millis(300));
    let (start, before) = (Instant::now(), completed());
    saturate(start + Duration::from_secs(1));
    let rate = (completed() - before) as f64 / start.elapsed().as_secs_f64();
    rt.shutdown_timeout(Duration::from_secs(5));
    Ok(rate.max(1.0))
}

fn phase(threshold: Option<usize>, rate: f64, seconds: u64) -> Result<Phase> {
    match threshold {
        Some(t) => println!("phase 1: admission control on (queue threshold {t})"),
        None => println!("phase 2: admission control off (unbounded queue)"),
    }
    let (rt, parse) = graph(threshold)?;
    let rt = Arc::new(rt);
    println!(
        "  {:>3}  {:>9} {:>9} {:>9} {:>9} {:>6} {:>13}",
        "t", "offered/s", "admitted", "rejected", "done", "queue", "p90 response"
    );
    let start = Instant::now();
    let gap = Duration::from_secs_f64(1.0 / rate);
    let mut next_send = start;
    // Report just after the runtime closes each 1 s stats period (it started a moment earlier).
    let mut next_report = start + Duration::from_millis(1050);
    let mut offered = 0u64;
    let mut last = Phase {
        p90_s: None,
        rejected_fraction: 0.0,
        queue_len: 0,
    };
    for second in 1..=seconds {
        // Open loop: requests are sent on schedule whatever the service does.
        while Instant::now() < next_report {
            let now = Instant::now();
            while next_send <= now {
                let _ = parse.enqueue(Request {
                    meta: Meta::born_at(next_send),
                });
                offered += 1;
                next_send += gap;
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        next_report += Duration::from_secs(1);
        let stats = rt.stats();
        let work = stats.stages.iter().find(|s| s.name == "work");
        let reply = stats.stages.iter().find(|s| s.name == "reply");
        let (Some(work), Some(reply)) = (work, reply) else {
            continue;
        };
        // Cumulative counters divided by elapsed time: simple and independent of period edges.
        let elapsed = start.elapsed().as_secs_f64();
        let c = &work.totals.counters;
        let p90 = match &reply.period {
            Some(period) => period.response.p90_s,
            None => reply.totals.response.p90_s,
        };
        println!(
            "  {second:>2}s  {:>9.0} {:>9.0} {:>9.0} {:>9.0} {:>6} {:>10} ms",
            offered as f64 / elapsed,
            c.admitted as f64 / elapsed,
            c.rejected_total as f64 / elapsed,
            reply.totals.counters.completed as f64 / elapsed,
            work.queue_len,
            ms(p90)
        );
        last = Phase {
            p90_s: p90,
            rejected_fraction: c.rejected_total as f64 / c.arrivals.max(1) as f64,
            queue_len: work.queue_len,
        };
    }
    let backlog = rt.stats().in_flight;
    let t = Instant::now();
    let report = rt.shutdown_timeout(Duration::from_secs(10));
    println!(
        "  shutdown: {backlog} requests in flight, drained={} in {:.1} s, abandoned={}\n",
        report.drained,
        t.elapsed().as_secs_f64(),
        report.abandoned
    );
    Ok(last)
}
