use std::sync::Mutex;
use std::sync::mpsc;
use std::time::Duration;

use seda::{RejectReason, Runtime, Stage, handler};

use crate::{Counter, eventually};

#[test]
fn shutdown_drains_every_queue_and_stops_outside_admission() {
    let rt = Runtime::start().unwrap();
    let done = Counter::default();
    let d = done.clone();
    let last = rt
        .stage(
            Stage::builder("last")
                .threshold(0)
                .handler(handler::each(move |_: u64, _| {
                    std::thread::sleep(Duration::from_micros(20));
                    d.add(1);
                })),
        )
        .unwrap();
    let first = rt
        .stage(
            Stage::builder("first")
                .threshold(0)
                .handler(handler::each(move |n: u64, _| {
                    // Hand-offs between stages continue while draining.
                    last.enqueue(n).unwrap();
                })),
        )
        .unwrap();
    for i in 0..2000 {
        first.enqueue(i).unwrap();
    }
    let report = rt.shutdown();
    assert!(report.drained);
    assert_eq!((report.abandoned, report.threads_left_running), (0, 0));
    assert_eq!(done.get(), 2000);
    assert_eq!(first.enqueue(1).unwrap_err().reason, RejectReason::Closed);
    assert_eq!(rt.stats().in_flight, 0);
    // No worker thread is left: every pool reports zero threads.
    assert!(
        rt.stats().pools.iter().all(|p| p.threads == 0),
        "{:?}",
        rt.stats().pools
    );
    assert!(
        rt.stage(Stage::builder("late").handler(handler::each(|_: u64, _| {})))
            .is_err()
    );
}

#[test]
fn bounded_shutdown_reports_what_it_left() {
    let rt = Runtime::start().unwrap();
    let (gate_tx, gate_rx) = mpsc::channel::<()>();
    let gate_rx = Mutex::new(gate_rx);
    let dropped = Counter::default();
    let dr = dropped.clone();
    let sink = rt
        .stage(
            Stage::builder("stuck")
                .batch(1)
                .handler(handler::each(move |_: u64, _| {
                    let _ = gate_rx.lock().unwrap().recv();
                }))
                .on_drop(move |_, reason| {
                    assert_eq!(reason, RejectReason::Closed);
                    dr.add(1);
                }),
        )
        .unwrap();
    for i in 0..5 {
        sink.enqueue(i).unwrap();
    }
    let report = rt.shutdown_timeout(Duration::from_millis(100));
    assert!(!report.drained);
    assert_eq!(
        report.abandoned, 4,
        "one event is in the blocked handler, four were queued"
    );
    assert_eq!(report.threads_left_running, 1);
    assert_eq!(dropped.get(), 4);
    drop(gate_tx); // lets the detached worker finish
}

#[test]
fn dropping_the_last_clone_shuts_down_and_a_second_shutdown_is_harmless() {
    let rt = Runtime::start().unwrap();
    let done = Counter::default();
    let d = done.clone();
    let sink = rt
        .stage(
            Stage::builder("dropped")
                .threshold(0)
                .handler(handler::each(move |_: u64, _| {
                    std::thread::sleep(Duration::from_micros(50));
                    d.add(1);
                })),
        )
        .unwrap();
    for i in 0..500 {
        sink.enqueue(i).unwrap();
    }
    let clone = rt.clone();
    drop(rt);
    // A clone keeps the runtime running.
    sink.enqueue(500).unwrap();
    drop(clone);
    // The drop drained every queue before it returned, and admits nothing more.
    assert_eq!(done.get(), 501);
    assert_eq!(sink.enqueue(1).unwrap_err().reason, RejectReason::Closed);

    let rt = Runtime::start().unwrap();
    let first = rt.shutdown();
    let second = rt.shutdown_timeout(Duration::ZERO);
    assert_eq!(first, second);
    drop(rt);
}

#[test]
fn a_dropped_runtime_releases_what_its_handlers_hold() {
    // A handler's captures (a database store and its connections, say) must close with the
    // runtime, or a process that starts runtimes in turn leaks them: each stage holds its
    // pool, and the pool held its stages.
    for bounded in [false, true] {
        let held = std::sync::Arc::new(());
        let rt = Runtime::start().unwrap();
        let h = held.clone();
        let sink = rt
            .stage(
                Stage::builder("holder")
                    .threads(4)
                    .batch(1)
                    .handler(handler::each(move |_: u64, _| {
                        let _ = &h;
                        std::thread::sleep(Duration::from_millis(2));
                    })),
            )
            .unwrap();
        for i in 0..100 {
            sink.enqueue(i).unwrap();
        }
        if bounded {
            // Leaves workers inside the handler, detached: they let go when they return.
            rt.shutdown_timeout(Duration::from_millis(1));
        }
        drop(sink);
        drop(rt);
        eventually(Duration::from_secs(5), || {
            std::sync::Arc::strong_count(&held) == 1
        });
        assert_eq!(std::sync::Arc::strong_count(&held), 1, "bounded: {bounded}");
    }
}
