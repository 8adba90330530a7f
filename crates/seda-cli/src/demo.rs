//! `seda demo`: a small stage graph driven past its capacity, with and without admission
//! control, printing what each stage saw every second.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;
use seda::{Config, Meta, Runtime, Sink, Stage, handler};
use seda_lab::plot::{LineChart, Series};

/// Service time of the bottleneck stage's handler.
const SERVICE: Duration = Duration::from_millis(1);
/// Workers of the bottleneck stage: capacity is about `WORKERS / SERVICE`.
const WORKERS: usize = 2;
/// Queue threshold when admission control is on.
const THRESHOLD: usize = 64;
/// Offered load, as a multiple of the measured capacity.
const OVERLOAD: f64 = 2.0;
/// p90 response-time target of the adaptive controller in phase 3.
const TARGET_S: f64 = 0.1;

/// How the bottleneck stage protects itself in a phase.
#[derive(Clone, Copy)]
enum Control {
    Threshold(usize),
    Unbounded,
    /// An adaptive controller toward a p90 target: `seda_control` kind and target.
    Adaptive(&'static str, f64),
}

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
    #[arg(long, default_value_t = 3)]
    seconds: u64,
    /// Where to write the plots.
    #[arg(long, default_value = "target/seda-demo")]
    out: std::path::PathBuf,
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
    let controlled = phase(Control::Threshold(THRESHOLD), offered, args.seconds)?;
    let uncontrolled = phase(Control::Unbounded, offered, args.seconds)?;
    let paper = phase(
        Control::Adaptive("response_time", TARGET_S),
        offered,
        args.seconds,
    )?;
    let tuned = phase(
        Control::Adaptive("response_time_tuned", TARGET_S),
        offered,
        args.seconds,
    )?;
    let phases = [&controlled, &uncontrolled, &paper, &tuned];
    let chart = |title: &str, y: &str, pick: fn(&Phase) -> &Vec<(f64, f64)>| LineChart {
        title: format!("{title}, offered load {OVERLOAD}x capacity"),
        x_label: "time (s)".into(),
        y_label: y.into(),
        series: phases
            .iter()
            .map(|p| Series {
                name: p.label.clone(),
                points: pick(p).clone(),
            })
            .collect(),
    };
    let p90_files = chart("p90 response time", "ms", |p| &p.p90_ms).write(args.out.join("p90"))?;
    let done_files =
        chart("completed requests", "per second", |p| &p.done).write(args.out.join("completed"))?;
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
    for (name, p) in [
        ("002's response-time controller", &paper),
        ("our tuned controller", &tuned),
    ] {
        println!(
            "  {name} (p90 target {} ms): p90 response {} ms, {:.0}% rejected, {:.0} done/s",
            TARGET_S * 1000.0,
            ms(p.p90_s),
            p.rejected_fraction * 100.0,
            p.done_per_s
        );
    }
    println!(
        "\nplots: {}",
        p90_files
            .iter()
            .chain(&done_files)
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
    Ok(())
}

fn ms(s: Option<f64>) -> String {
    s.map_or("-".into(), |s| format!("{:.0}", s * 1000.0))
}

struct Phase {
    label: String,
    /// (second, p90 response in ms) of each second.
    p90_ms: Vec<(f64, f64)>,
    /// (second, completed requests per second) of each second.
    done: Vec<(f64, f64)>,
    p90_s: Option<f64>,
    rejected_fraction: f64,
    queue_len: usize,
    done_per_s: f64,
}

fn graph(control: Control) -> Result<(Runtime, Sink<Request>)> {
    let config = Config::from_toml("[runtime]\ntick_ms = 10\nstats_period_ms = 1000\n")?;
    let rt = Runtime::builder().config(config).start()?;
    let reply = rt.stage(Stage::builder("reply").handler(handler::each(|_r: Request, _| {})))?;
    let mut work = Stage::builder("work")
        .threads(WORKERS)
        .thread_bounds(WORKERS, WORKERS)
        .batch(1)
        .handler(handler::each(move |r: Request, _| {
            std::thread::sleep(SERVICE);
            let _ = reply.enqueue(r);
        }));
    work = match control {
        Control::Threshold(t) => work.threshold(t),
        Control::Unbounded => work.threshold(0),
        Control::Adaptive(kind, target_s) => {
            let params = [("target_s".to_string(), target_s)].into_iter().collect();
            let controller =
                seda_control::build_admission(kind, &params).map_err(anyhow::Error::msg)?;
            work.threshold(0).admission(controller)
        }
    };
    let work = rt.stage(work)?;
    let parse = rt.stage(Stage::builder("parse").inline().handler(handler::each(
        move |r: Request, _| {
            // The rejection comes back here; a server would answer 503 with Retry-After.
            let _ = work.enqueue(r);
        },
    )))?;
    Ok((rt, parse))
}

fn measure_capacity() -> Result<f64> {
    let (rt, parse) = graph(Control::Threshold(THRESHOLD))?;
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

fn phase(control: Control, rate: f64, seconds: u64) -> Result<Phase> {
    match control {
        Control::Threshold(t) => println!("phase 1: admission control on (queue threshold {t})"),
        Control::Unbounded => println!("phase 2: admission control off (unbounded queue)"),
        Control::Adaptive("response_time", t) => println!(
            "phase 3: 002's response-time controller (Figure 4 parameters), p90 target {} ms",
            t * 1000.0
        ),
        Control::Adaptive(kind, t) => println!(
            "phase 4: `{kind}`, our controller (queue capped at departure rate x wait budget), p90 target {} ms",
            t * 1000.0
        ),
    }
    let (rt, parse) = graph(control)?;
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
        label: match control {
            Control::Threshold(t) => format!("queue threshold {t}"),
            Control::Unbounded => "no admission control".into(),
            Control::Adaptive(kind, _) => kind.into(),
        },
        p90_ms: Vec::new(),
        done: Vec::new(),
        p90_s: None,
        rejected_fraction: 0.0,
        queue_len: 0,
        done_per_s: 0.0,
    };
    let mut done_before = 0;
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
        let done = reply.totals.counters.completed;
        if let Some(p90) = p90 {
            last.p90_ms.push((second as f64, p90 * 1000.0));
        }
        last.done.push((second as f64, (done - done_before) as f64));
        done_before = done;
        last.p90_s = p90;
        last.rejected_fraction = c.rejected_total as f64 / c.arrivals.max(1) as f64;
        last.queue_len = work.queue_len;
        last.done_per_s = done as f64 / elapsed;
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
