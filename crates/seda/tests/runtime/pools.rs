use std::sync::mpsc;
use std::sync::{Arc, Barrier, Mutex};
use std::time::Duration;

use seda::{Config, Runtime, Stage, handler};

use crate::{Counter, eventually};

#[test]
fn the_pool_controller_adds_threads_while_the_queue_is_long_and_idle_ones_retire() {
    let config = Config::from_toml(
        r#"
        [runtime]
        tick_ms = 5
        [stages.slow]
        threads = 1
        max_threads = 4
        pool_controller = { delay_ms = 5, threshold = 5, idle_ms = 100 }
        "#,
    )
    .unwrap();
    let rt = Runtime::builder().config(config).start().unwrap();
    let (gate_tx, gate_rx) = mpsc::channel::<()>();
    let gate_rx = Mutex::new(gate_rx);
    let done = Counter::default();
    let d = done.clone();
    let sink = rt
        .stage(
            Stage::builder("slow")
                .batch(1)
                .handler(handler::each(move |_: u64, _| {
                    let _ = gate_rx.lock().unwrap().recv_timeout(Duration::from_secs(5));
                    d.add(1);
                })),
        )
        .unwrap();
    for i in 0..50 {
        sink.enqueue(i).unwrap();
    }
    let threads = || rt.stats().stages[0].threads;
    assert!(
        eventually(Duration::from_secs(5), || threads() == 4),
        "grew to the maximum"
    );
    drop(gate_tx); // every waiting handler returns at once
    assert!(eventually(Duration::from_secs(5), || done.get() == 50));
    assert!(
        eventually(Duration::from_secs(5), || threads() == 1),
        "idle workers retired"
    );
    rt.shutdown();
}

#[test]
fn resizing_a_loaded_pool_keeps_every_event() {
    let rt = Runtime::start().unwrap();
    let done = Counter::default();
    let d = done.clone();
    let sink = rt
        .stage(
            Stage::builder("work")
                .threshold(0)
                .batch(4)
                .handler(handler::each(move |_: u64, _| {
                    std::thread::sleep(Duration::from_micros(50));
                    d.add(1);
                })),
        )
        .unwrap();
    let producer = {
        let sink = sink.clone();
        std::thread::spawn(move || {
            for i in 0..4000 {
                sink.enqueue(i).unwrap();
            }
        })
    };
    rt.resize_pool("work", 4, 8).unwrap();
    assert!(eventually(Duration::from_secs(5), || rt.stats().stages[0]
        .threads
        >= 4));
    rt.resize_pool("work", 1, 1).unwrap();
    producer.join().unwrap();
    rt.shutdown();
    assert_eq!(done.get(), 4000);
    let c = &rt.stats().stages[0].totals.counters;
    assert_eq!((c.admitted, c.completed), (4000, 4000));
}

#[test]
fn the_batching_controller_moves_the_batch_size() {
    let config = Config::from_toml(
        r#"
        [runtime]
        tick_ms = 2
        [stages.agg]
        batch_controller = { min = 1, max = 100, recalc_ms = 2 }
        "#,
    )
    .unwrap();
    let rt = Runtime::builder().config(config).start().unwrap();
    let sink = rt
        .stage(
            Stage::builder("agg")
                .threshold(0)
                .handler(handler::each(|_: u64, _| {})),
        )
        .unwrap();
    assert_eq!(
        rt.stats().stages[0].batch_size,
        100,
        "AggThrottle starts at the maximum"
    );
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let s = stop.clone();
    let feeder = std::thread::spawn(move || {
        let mut i = 0u64;
        while !s.load(std::sync::atomic::Ordering::Relaxed) {
            let _ = sink.enqueue_many((i..i + 50).collect());
            i += 50;
            std::thread::sleep(Duration::from_micros(200));
        }
    });
    let moved = eventually(Duration::from_secs(10), || {
        rt.stats().stages[0].batch_size < 100
    });
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    feeder.join().unwrap();
    rt.shutdown();
    assert!(
        moved,
        "steady throughput makes AggThrottle shrink the batch"
    );
}

#[test]
fn several_workers_share_a_stage() {
    let rt = Runtime::start().unwrap();
    let barrier = Arc::new(Barrier::new(3));
    let b = barrier.clone();
    let sink = rt
        .stage(
            Stage::builder("wide")
                .threads(3)
                .batch(1)
                .handler(handler::each(move |_: u64, _| {
                    // Only passes when three handlers run at the same time.
                    b.wait();
                })),
        )
        .unwrap();
    for i in 0..3 {
        sink.enqueue(i).unwrap();
    }
    let report = rt.shutdown_timeout(Duration::from_secs(10));
    assert!(report.drained, "three workers ran concurrently: {report:?}");
}
