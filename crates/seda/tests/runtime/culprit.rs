//! Culprit-aware termination: the runtime cuts the request that holds a contended resource
//! far past its typical hold, not the requests waiting behind it.

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use seda::{CancelReason, Contended, CulpritPolicy, Meta, Runtime, Stage, handler};
use seda_control::terminate::FixedThreshold;

/// How long the rogue request would hold the lock if nobody cut it.
const ROGUE_HOLD: Duration = Duration::from_secs(20);
/// How long each short request holds it.
const SHORT_HOLD: Duration = Duration::from_millis(5);

/// One request: takes the lock through `lock`, holds it for `hold`, checking its token at
/// safe points every millisecond; returns how long it waited and how it ended.
fn request(
    lock: &Contended,
    folder: &Mutex<u64>,
    meta: &Meta,
    hold: Duration,
) -> (Duration, Result<(), CancelReason>) {
    let asked = Instant::now();
    let mut held = lock.acquire(meta.cancel_token(), || folder.lock().unwrap());
    let waited = asked.elapsed();
    let start = Instant::now();
    while start.elapsed() < hold {
        if let Err(reason) = meta.cancel_token().checkpoint() {
            return (waited, Err(reason));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    **held += 1;
    (waited, Ok(()))
}

/// A stage of 4 threads whose requests share one lock; `policy` decides whether the runtime
/// cuts culprits. Its terminator's threshold (10 s) is far above every short request's time,
/// so whatever is cut is cut as a culprit. Sends the rogue first, then 30 short requests.
/// Each request's answer (whether it was the rogue, how long it waited, how it ended), the
/// stage's terminated count and the resource's culprits cut.
type Outcome = (Vec<(bool, Duration, Result<(), CancelReason>)>, u64, u64);

fn run(policy: Option<CulpritPolicy>, rogue_hold: Duration) -> Outcome {
    let rt = Runtime::start().unwrap();
    let lock = Contended::new("folder lock");
    let lock = Arc::new(match policy {
        Some(p) => lock.with_policy(p),
        None => lock,
    });
    rt.watch(lock.clone());
    let folder = Arc::new(Mutex::new(0u64));
    let (tx, rx) = mpsc::channel();
    let tx = Mutex::new(tx);
    let in_stage = lock.clone();
    let sink = rt
        .stage(
            Stage::builder("refile")
                .threads(4)
                .batch(1)
                .terminate(Box::new(FixedThreshold(Duration::from_secs(10))))
                .handler(handler::each(move |(meta, rogue): (Meta, bool), _| {
                    let hold = if rogue { rogue_hold } else { SHORT_HOLD };
                    let (waited, r) = request(&in_stage, &folder, &meta, hold);
                    tx.lock().unwrap().send((rogue, waited, r)).unwrap();
                })),
        )
        .unwrap();
    sink.enqueue((Meta::new(), true)).unwrap();
    // The rogue holds the lock before the others ask for it.
    assert!(super::eventually(Duration::from_secs(5), || lock
        .snapshot()
        .holders
        == 1));
    let shorts = 30;
    for _ in 0..shorts {
        sink.enqueue((Meta::new(), false)).unwrap();
    }
    let answers: Vec<_> = (0..=shorts)
        .map(|_| rx.recv_timeout(rogue_hold * 2).expect("answered"))
        .collect();
    rt.shutdown();
    let terminated = rt.stats().stages[0].totals.counters.terminated;
    (answers, terminated, lock.snapshot().culprits_cut)
}

#[test]
fn the_holder_is_cut_and_its_victims_complete() {
    let started = Instant::now();
    let (answers, terminated, cut) = run(Some(CulpritPolicy::default()), ROGUE_HOLD);
    for (rogue, _, r) in &answers {
        if *rogue {
            assert_eq!(*r, Err(CancelReason::Terminated), "the culprit is cut");
        } else {
            assert_eq!(*r, Ok(()), "a victim completes");
        }
    }
    assert_eq!((terminated, cut), (1, 1));
    // Cut after its min_hold and a tick or so: far from its 20 s.
    assert!(
        started.elapsed() < ROGUE_HOLD / 2,
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn without_a_policy_the_victims_wait_for_the_holder() {
    // A watched lock without a policy cuts nothing: the short requests wait for the rogue's
    // whole hold (1 s here, to keep the test short).
    let hold = Duration::from_secs(1);
    let (answers, terminated, cut) = run(None, hold);
    assert_eq!((terminated, cut), (0, 0));
    assert!(answers.iter().all(|(_, _, r)| r.is_ok()));
    let waited_long = answers
        .iter()
        .filter(|(rogue, waited, _)| !rogue && *waited > hold / 2)
        .count();
    assert!(waited_long >= 3, "victims behind the holder: {waited_long}");
}
