//! Early termination (SERT06): a terminable stage cuts requests running past its threshold; a
//! handler that gives up at a safe point makes the request terminated (never a latency
//! sample); one that finishes first makes it completed.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use seda::{CancelReason, Config, Meta, Runtime, Stage, handler};
use seda_control::terminate::FixedThreshold;

/// Longest a "long" request runs if nobody cuts it: far past the threshold, so a request
/// that ends this way shows the terminator did not act.
const UNCUT: Duration = Duration::from_secs(30);

/// Runs until cut (checking the token at safe points) when `long`, else returns at once.
fn work(meta: &Meta, long: bool) -> Result<(), CancelReason> {
    let start = Instant::now();
    while long && start.elapsed() < UNCUT {
        meta.cancel_token().checkpoint()?;
        std::thread::sleep(Duration::from_millis(1));
    }
    Ok(())
}

#[test]
fn long_requests_are_terminated_short_ones_complete() {
    let rt = Runtime::start().unwrap();
    let (tx, rx) = mpsc::channel();
    let tx = std::sync::Mutex::new(tx);
    let sink = rt
        .stage(
            Stage::builder("work")
                .threads(4)
                .batch(1)
                .terminate(Box::new(FixedThreshold(Duration::from_millis(50))))
                .handler(handler::each(move |(meta, long): (Meta, bool), cx| {
                    let r = work(&meta, long);
                    let seen = cx.termination_threshold();
                    tx.lock().unwrap().send((long, r, seen)).unwrap();
                })),
        )
        .unwrap();
    let (longs, shorts) = (4u64, 20u64);
    for i in 0..longs + shorts {
        sink.enqueue((Meta::new(), i < longs)).expect("admitted");
    }
    for _ in 0..longs + shorts {
        let (long, r, seen) = rx.recv_timeout(UNCUT * 2).expect("answered");
        // The handler sees the threshold in force, to refuse work it can tell would be cut.
        assert_eq!(seen, Some(Duration::from_millis(50)));
        if long {
            assert_eq!(r, Err(CancelReason::Terminated));
        } else {
            assert_eq!(r, Ok(()));
        }
    }
    rt.shutdown();
    let s = &rt.stats().stages[0];
    let c = &s.totals.counters;
    assert_eq!((c.terminated, c.completed), (longs, shorts));
    assert_eq!(c.admitted, c.completed + c.terminated);
    // Only completed requests are response-time samples.
    assert_eq!(s.totals.response.count, shorts);
    let t = s.termination.as_ref().expect("terminable");
    assert_eq!((t.kind.as_ref(), t.running), ("fixed", 0));
    assert!(t.requested >= longs);
}

#[test]
fn a_stage_without_a_terminator_shows_its_handler_no_threshold() {
    let rt = Runtime::start().unwrap();
    let (tx, rx) = mpsc::channel();
    let tx = std::sync::Mutex::new(tx);
    let sink = rt
        .stage(
            Stage::builder("plain").handler(handler::each(move |(): (), cx| {
                tx.lock().unwrap().send(cx.termination_threshold()).unwrap();
            })),
        )
        .unwrap();
    sink.enqueue(()).expect("admitted");
    assert_eq!(rx.recv_timeout(UNCUT).expect("answered"), None);
    rt.shutdown();
}

#[test]
fn a_handler_that_finishes_first_completes() {
    let rt = Runtime::start().unwrap();
    let (tx, rx) = mpsc::channel();
    let tx = std::sync::Mutex::new(tx);
    let sink = rt
        .stage(
            Stage::builder("stubborn")
                .terminate(Box::new(FixedThreshold(Duration::ZERO)))
                .handler(handler::each(move |(meta, ()): (Meta, ()), _| {
                    // Never at a safe point: waits to be asked, then finishes anyway.
                    while !meta.cancel_token().is_cancelled() {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    tx.lock()
                        .unwrap()
                        .send(meta.cancel_token().reason())
                        .unwrap();
                })),
        )
        .unwrap();
    sink.enqueue((Meta::new(), ())).unwrap();
    assert_eq!(rx.recv().unwrap(), Some(CancelReason::Terminated));
    rt.shutdown();
    let c = &rt.stats().stages[0].totals.counters;
    assert_eq!((c.completed, c.terminated), (1, 0));
}

#[test]
fn the_terminator_comes_from_the_configuration_file() {
    let config = Config::from_toml(
        "[stages.search.terminate]\nkind = \"sert\"\nlower_s = 0.02\nupper_s = 0.05\n",
    )
    .unwrap();
    let rt = Runtime::builder().config(config).start().unwrap();
    let (tx, rx) = mpsc::channel();
    let tx = std::sync::Mutex::new(tx);
    let sink = rt
        .stage(
            Stage::builder("search").handler(handler::each(move |(meta, ()): (Meta, ()), _| {
                tx.lock().unwrap().send(work(&meta, true)).unwrap();
            })),
        )
        .unwrap();
    let t = rt.stats().stages[0]
        .termination
        .clone()
        .expect("terminable");
    assert_eq!(t.kind, "sert");
    // No loss yet: the threshold is the upper bound.
    assert_eq!(t.threshold_s, 0.05);
    sink.enqueue((Meta::new(), ())).unwrap();
    assert_eq!(rx.recv().unwrap(), Err(CancelReason::Terminated));
    rt.shutdown();

    let bad =
        Config::from_toml("[stages.search.terminate]\nkind = \"sert\"\nupper = 1.0\n").unwrap();
    let rt = Runtime::builder().config(bad).start().unwrap();
    let err = rt
        .stage(Stage::builder("search").handler(handler::each(|_: (Meta, ()), _| {})))
        .unwrap_err();
    assert!(err.to_string().contains("terminate"), "{err}");
}
