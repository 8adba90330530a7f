//! One run of a pool sizer on a plant: the real runtime, in this process, pinned to the
//! server core, with one stage whose handler calls an [`EmulatedBackend`] and a producer that
//! keeps its queue from running dry (so throughput is what the pool can do).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Result, anyhow};
use seda::{Config, PoolControllerConfig, Runtime, SizerConfig, Stage, StageConfig, handler};
use seda_http::bottleneck::EmulatedBackend;
use serde::Serialize;

/// The stage (and pool) name.
const STAGE: &str = "plant";
/// Events kept waiting in the stage's queue.
const BACKLOG: usize = 400;
/// Most threads any sizer may use.
pub(crate) const MAX_THREADS: usize = 48;

/// A plant whose throughput depends on its pool.
#[derive(Debug, Clone, Copy, Serialize)]
pub(crate) struct Plant {
    /// Its name in the summary.
    pub name: &'static str,
    /// The emulated backend's latency, ms.
    pub latency_ms: u64,
    /// Callers the backend serves before it thrashes (0: never).
    pub knee: usize,
    /// Calls the backend serves at once, the rest waiting (0: no limit).
    pub channels: usize,
}

/// The plants, 25 events/s per thread (a thread is a small step of the throughput, as on the
/// thesis's larger pools): a backend with 24 channels (throughput grows with threads up to 24,
/// then stays flat), and one that thrashes past 12 callers (an interior optimum at 12).
pub(crate) const PLANTS: [Plant; 2] = [
    Plant {
        name: "io",
        latency_ms: 40,
        knee: 0,
        channels: 24,
    },
    Plant {
        name: "contended",
        latency_ms: 40,
        knee: 12,
        channels: 0,
    },
];

/// One control period as seen from outside the sizer.
#[derive(Debug, Clone, Copy, Serialize)]
pub(crate) struct Sample {
    /// Seconds since the run started.
    pub t_s: f64,
    /// Which phase it belongs to.
    pub phase: usize,
    /// Worker threads at the end of the period.
    pub threads: usize,
    /// Completions per second over the period.
    pub throughput_per_s: f64,
    /// The throughput target in force (self-tuning only).
    pub target_per_s: Option<f64>,
}

/// What a run measured.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Run {
    /// Every period.
    pub samples: Vec<Sample>,
    /// The ARX model's mean relative one-step error at the end (self-tuning only).
    pub arx_error: Option<f64>,
}

/// Runs `sizer` on `plant`, starting at `threads`, through `phases` (each a length and the
/// throughput target given at its start, if any), sampling every `period`. Runs on a thread
/// pinned to `cpu`, so the runtime's threads are pinned there too.
pub(crate) fn run(
    plant: Plant,
    sizer: SizerConfig,
    threads: usize,
    phases: &[(Duration, Option<f64>)],
    period: Duration,
    cpu: Option<usize>,
) -> Result<Run> {
    let phases = phases.to_vec();
    std::thread::spawn(move || {
        if let Some(cpu) = cpu {
            seda_load::pin_to_cpu(cpu).map_err(|e| anyhow!("pinning to CPU {cpu}: {e}"))?;
        }
        run_here(plant, sizer, threads, &phases, period)
    })
    .join()
    .map_err(|_| anyhow!("the pool-control run panicked"))?
}

fn run_here(
    plant: Plant,
    sizer: SizerConfig,
    threads: usize,
    phases: &[(Duration, Option<f64>)],
    period: Duration,
) -> Result<Run> {
    let config = Config::from_toml("[runtime]\ntick_ms = 10\nstats_period_ms = 1000\n")?;
    let rt = Runtime::builder().config(config).start()?;
    let backend = Arc::new(
        EmulatedBackend::new(Duration::from_millis(plant.latency_ms), plant.knee)
            .with_channels(plant.channels),
    );
    // SEDA's heuristic at one thread per control period when the queue is long (Sandstorm's
    // 2 s delay, 4 samples per thread and threshold of 1000 would add one thread in 8 s).
    let heuristic = sizer.is_seda().then(|| PoolControllerConfig {
        enable: true,
        delay_ms: Some((period.as_millis() as u64 / 4).max(1)),
        threshold: Some(10),
        idle_ms: None,
    });
    let sink = rt.stage(
        Stage::builder(STAGE)
            .threads(threads)
            .thread_bounds(1, MAX_THREADS)
            .batch(1)
            .threshold(BACKLOG * 2)
            .config(StageConfig {
                pool_controller: heuristic,
                ..StageConfig::default()
            })
            .sizer(sizer)
            .handler(handler::each(move |_: u64, _| backend.call())),
    )?;
    let stop = Arc::new(AtomicBool::new(false));
    let producer = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                if sink.len() < BACKLOG {
                    let _ = sink.enqueue(n);
                    n += 1;
                } else {
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
        })
    };
    let completed = |rt: &Runtime| {
        rt.stats()
            .stages
            .first()
            .map_or(0, |s| s.totals.counters.completed)
    };
    let start = Instant::now();
    let mut samples = Vec::new();
    let mut last = (Instant::now(), completed(&rt));
    let mut target = None;
    for (phase, (length, phase_target)) in phases.iter().enumerate() {
        if phase_target.is_some() {
            target = *phase_target;
            rt.set_throughput_target(STAGE, target)?;
        }
        let end = Instant::now() + *length;
        while Instant::now() < end {
            std::thread::sleep(period);
            let now = Instant::now();
            let done = completed(&rt);
            let dt = now.duration_since(last.0).as_secs_f64().max(1e-3);
            let threads = rt.stats().pools.first().map_or(0, |p| p.threads);
            samples.push(Sample {
                t_s: now.duration_since(start).as_secs_f64(),
                phase,
                threads,
                throughput_per_s: done.saturating_sub(last.1) as f64 / dt,
                target_per_s: target,
            });
            last = (now, done);
        }
    }
    let arx_error = rt.stats().pools.first().and_then(|p| p.sizing.arx_error);
    stop.store(true, Ordering::Relaxed);
    let _ = producer.join();
    // The backlog is the producer's, not work anyone waits for: drop it rather than drain it.
    rt.shutdown_timeout(Duration::from_millis(100));
    Ok(Run { samples, arx_error })
}
