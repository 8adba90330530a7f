//! Pool sizers on the real runtime (FAIR07 Section 4.3): fixed, self-tuning and hill climbing
//! acting on a stage whose handler blocks on an emulated backend, and global control.
//!
//! The plant: every event sleeps [`IO`] (an emulated backend's latency, not real I/O), so a
//! thread completes at most 1 / IO events per second and throughput grows with threads. The
//! producer keeps the queue non-empty, so throughput is what the pool can do.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use seda::{Config, GlobalControlConfig, Meta, Runtime, Sink, SizerConfig, Stage, handler};
use seda_control::catalogue::sizers;
use seda_control::selftune::Law;

use crate::eventually;

/// The emulated backend's latency per event: 100 events/s per thread.
const IO: Duration = Duration::from_millis(10);

#[derive(Debug)]
struct Req(Meta);

impl seda::Event for Req {
    fn meta(&self) -> Option<&Meta> {
        Some(&self.0)
    }
}

/// Keeps about `backlog` events queued at `sink` until dropped.
struct Producer {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Producer {
    fn start(sink: Sink<Req>, backlog: usize) -> Producer {
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let thread = std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                if sink.len() < backlog {
                    let _ = sink.enqueue(Req(Meta::new()));
                } else {
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
        });
        Producer {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Producer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn runtime() -> Runtime {
    let config = Config::from_toml("[runtime]\ntick_ms = 10\nstats_period_ms = 200\n").unwrap();
    Runtime::builder().config(config).start().unwrap()
}

fn io_stage(rt: &Runtime, sizer: SizerConfig, threads: usize) -> Sink<Req> {
    rt.stage(
        Stage::builder("io")
            .threads(threads)
            .thread_bounds(1, 32)
            .batch(1)
            .sizer(sizer)
            .handler(handler::each(|_: Req, _| std::thread::sleep(IO))),
    )
    .unwrap()
}

fn pool(rt: &Runtime) -> seda::PoolSnapshot {
    rt.stats()
        .pools
        .into_iter()
        .find(|p| p.name == "io")
        .unwrap()
}

#[test]
fn sizers_parse_from_toml_and_bad_settings_are_named() {
    let config = Config::from_toml(
        r#"
        [runtime.global]
        target_p90_ms = 100
        entry = "io"
        arrival_floor = false
        [stages.io]
        sizer = { kind = "self_tuning", law = "pi", period_ms = 500, target_per_s = 300.0 }
        [stages.other]
        sizer = { kind = "hill_climbing" }
        "#,
    )
    .unwrap();
    let io = &config.stages["io"];
    let sizer = io.sizer.as_ref().unwrap();
    assert_eq!(sizer.kind, sizers::SELF_TUNING);
    assert_eq!(sizer.period(), Duration::from_millis(500));
    assert_eq!(config.runtime.global.as_ref().unwrap().entry, "io");
    assert_eq!(
        config.runtime.global.as_ref().unwrap().arrival_floor,
        Some(false)
    );
    let magic = Config::from_toml("[stages.io]\nsizer = { kind = \"magic\" }\n").unwrap_err();
    // The error names the registry's sizers, so the user can pick one.
    let text = magic.to_string();
    assert!(
        text.contains("unknown sizer `magic`; known sizers: seda, fixed, self_tuning"),
        "{text}"
    );

    let rt = runtime();
    let bad = rt
        .stage(
            Stage::builder("bad")
                .sizer(SizerConfig {
                    target_per_s: Some(-1.0),
                    ..SizerConfig::new(sizers::SELF_TUNING)
                })
                .handler(handler::each(|_: u64, _| {})),
        )
        .unwrap_err();
    assert!(bad.to_string().contains("sizer.target_per_s"), "{bad}");
    let bad_global = Runtime::builder()
        .global(GlobalControlConfig::new(Duration::ZERO, "io"))
        .start()
        .unwrap_err();
    assert!(
        bad_global.to_string().contains("target_p90_ms"),
        "{bad_global}"
    );
}

#[test]
fn a_fixed_pool_keeps_its_size_under_load() {
    let rt = runtime();
    let sink = io_stage(&rt, SizerConfig::new(sizers::FIXED), 3);
    let _load = Producer::start(sink, 50);
    assert!(eventually(Duration::from_secs(10), || {
        let s = rt.stats();
        s.stages[0]
            .period
            .as_ref()
            .is_some_and(|p| p.counters.completed > 0)
    }));
    let p = pool(&rt);
    assert_eq!(p.sizer, "fixed");
    assert_eq!(p.threads, 3);
    assert_eq!(p.sizing.threads_target, Some(3));
    assert_eq!(rt.stats().stages[0].threads_target, Some(3));
}

/// A batch of slow events outlasts a sizer's period: its handler time counts in each period it
/// runs through, not all in the one it ends in. Credited only when a batch ended, a period's
/// busy threads read 0.0, 9.5 and 3.2 in turn for 4 threads always busy, and a pool that had
/// just grown never read itself saturated.
#[test]
fn busy_threads_count_batches_still_running() {
    let rt = runtime();
    let sizer = SizerConfig {
        period_ms: Some(100),
        ..SizerConfig::new(sizers::FIXED)
    };
    let sink = rt
        .stage(
            Stage::builder("io")
                .threads(4)
                .batch(8)
                .sizer(sizer)
                .handler(handler::each(|_: Req, _| {
                    std::thread::sleep(Duration::from_millis(40))
                })),
        )
        .unwrap();
    let _load = Producer::start(sink, 100);
    std::thread::sleep(Duration::from_millis(500));
    let readings: Vec<f64> = (0..6)
        .map(|_| {
            std::thread::sleep(Duration::from_millis(110));
            pool(&rt).sizing.busy_threads.unwrap_or(0.0)
        })
        .collect();
    // Every thread is busy all the time; a loaded machine stretches a period's wall time a
    // little past the handlers' sleeps.
    assert!(
        readings.iter().all(|b| (3.4..=4.6).contains(b)),
        "busy threads per period: {readings:.2?}"
    );
}

#[test]
fn the_self_tuning_pool_reaches_a_throughput_target_on_a_blocking_stage() {
    let rt = runtime();
    let sizer = SizerConfig {
        period_ms: Some(200),
        target_per_s: Some(400.0),
        ..SizerConfig::self_tuning(Law::P)
    };
    let sink = io_stage(&rt, sizer, 1);
    let _load = Producer::start(sink, 100);
    // 400/s at 100/s per thread: about 4 threads (a loaded machine may need a few more).
    let reached = eventually(Duration::from_secs(60), || {
        let p = pool(&rt);
        p.sizing.throughput_per_s.is_some_and(|y| y >= 0.9 * 400.0)
            && p.sizing
                .threads_target
                .is_some_and(|n| (3..=8).contains(&n))
    });
    let p = pool(&rt);
    assert!(reached, "{p:?}");
    assert_eq!(p.sizer, "self_tuning");
    assert_eq!(p.sizing.throughput_target_per_s, Some(400.0));
    // Its busy threads, by Little's law: the throughput times the handler's sleep (or a little
    // more, on a loaded machine).
    let busy = p.sizing.throughput_per_s.unwrap_or(0.0) * IO.as_secs_f64();
    assert!(
        p.sizing
            .busy_threads
            .is_some_and(|b| b >= 0.9 * busy && b <= 1.5 * busy),
        "busy threads against {busy:.2}: {p:?}"
    );

    // A new target at run time: the pool follows it down.
    rt.set_throughput_target("io", Some(150.0)).unwrap();
    let followed = eventually(Duration::from_secs(60), || {
        let p = pool(&rt);
        p.sizing.throughput_target_per_s == Some(150.0)
            && p.sizing.threads_target.is_some_and(|n| n <= 3)
            && p.threads <= 3
    });
    let p = pool(&rt);
    assert!(followed, "{p:?}");
    // Its busy threads reach a target in a move or two (Little's law); by now it has moved
    // enough to fit its model.
    assert!(p.sizing.arx_b.is_some(), "the model is fitted: {p:?}");
}

#[test]
fn hill_climbing_adds_threads_where_they_pay() {
    let rt = runtime();
    let sizer = SizerConfig {
        period_ms: Some(100),
        ..SizerConfig::new(sizers::HILL_CLIMBING)
    };
    let sink = io_stage(&rt, sizer, 1);
    let _load = Producer::start(sink, 100);
    let grew = eventually(Duration::from_secs(60), || pool(&rt).threads >= 4);
    assert!(grew, "{:?}", pool(&rt));
    assert_eq!(pool(&rt).sizer, "hill_climbing");
}

#[test]
fn global_control_sets_targets_and_drops_only_at_the_entry() {
    let target = Duration::from_millis(200);
    let rt = Runtime::builder()
        .config(Config::from_toml("[runtime]\ntick_ms = 10\nstats_period_ms = 200\n").unwrap())
        .global(GlobalControlConfig::new(target, "io"))
        .start()
        .unwrap();
    let sizer = SizerConfig {
        period_ms: Some(200),
        ..SizerConfig::self_tuning(Law::P)
    };
    let sink = io_stage(&rt, sizer, 1);
    let controller = rt.stats().stages[0].controller.clone().unwrap();
    assert_eq!(controller.name, "selective_dropper");
    let _load = Producer::start(sink, 100);
    let targeted = eventually(Duration::from_secs(60), || {
        let s = rt.stats();
        let g = s.global.clone().unwrap();
        let p = s.pools.iter().find(|p| p.name == "io").unwrap().clone();
        g.throughput_target_per_s.is_some_and(|t| t > 0.0)
            && p.sizing.throughput_target_per_s.is_some()
            && p.threads >= 3
    });
    assert!(targeted, "{:?}", rt.stats().global);
    assert!(rt.set_response_target(Duration::from_millis(300)));
    assert_eq!(rt.stats().global.unwrap().target_p90_s, 0.3);
}
