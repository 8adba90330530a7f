//! Several producers into a graph of stages with small thresholds: every event must end exactly
//! once, as rejected at some stage's door or completed at the last stage.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use seda::{Runtime, Stage, handler};

const PRODUCERS: usize = 4;
const PER_PRODUCER: usize = 20_000;
const EVENTS: usize = PRODUCERS * PER_PRODUCER;

#[test]
fn every_event_is_completed_or_rejected_exactly_once() {
    let rt = Runtime::start().unwrap();
    // outcome[i]: 0 unseen, 1 completed, 2 rejected; any second outcome is a bug.
    let outcome: Arc<Vec<AtomicU8>> = Arc::new((0..EVENTS).map(|_| AtomicU8::new(0)).collect());
    let doubled = Arc::new(Mutex::new(Vec::new()));
    let settle = {
        let outcome = outcome.clone();
        let doubled = doubled.clone();
        move |id: u64, how: u8| {
            if outcome[id as usize].swap(how, Ordering::SeqCst) != 0 {
                doubled.lock().unwrap().push(id);
            }
        }
    };
    let s = settle.clone();
    let last = rt
        .stage(
            Stage::builder("last")
                .threshold(64)
                .threads(2)
                .handler(handler::each(move |id: u64, _| s(id, 1))),
        )
        .unwrap();
    let s = settle.clone();
    let middle = rt
        .stage(Stage::builder("middle").threshold(64).batch(16).handler(
            move |batch: &mut Vec<u64>, _: &seda::Cx<'_>| {
                // Alternate between batch hand-offs (all or none) and single ones.
                if batch.len().is_multiple_of(2) {
                    if let Err(r) = last.enqueue_many(std::mem::take(batch)) {
                        r.event.into_iter().for_each(|id| s(id, 2));
                    }
                } else {
                    for id in batch.drain(..) {
                        if let Err(r) = last.enqueue(id) {
                            s(r.event, 2);
                        }
                    }
                }
            },
        ))
        .unwrap();
    let producers: Vec<_> = (0..PRODUCERS)
        .map(|p| {
            let middle = middle.clone();
            let s = settle.clone();
            std::thread::spawn(move || {
                for k in 0..PER_PRODUCER {
                    let id = (p * PER_PRODUCER + k) as u64;
                    if let Err(r) = middle.enqueue(id) {
                        s(r.event, 2);
                    }
                    if k % 1000 == 0 {
                        std::thread::sleep(Duration::from_micros(100));
                    }
                }
            })
        })
        .collect();
    for p in producers {
        p.join().unwrap();
    }
    let report = rt.shutdown();
    assert!(report.drained);
    assert!(
        doubled.lock().unwrap().is_empty(),
        "events settled twice: {:?}",
        doubled.lock().unwrap()
    );
    let unseen = outcome
        .iter()
        .filter(|o| o.load(Ordering::SeqCst) == 0)
        .count();
    assert_eq!(unseen, 0, "events lost");
    let completed = outcome
        .iter()
        .filter(|o| o.load(Ordering::SeqCst) == 1)
        .count() as u64;
    let stats = rt.stats();
    let last = &stats.stages[0].totals.counters;
    let middle = &stats.stages[1].totals.counters;
    assert_eq!(
        last.completed, completed,
        "stats agree with what the handler saw"
    );
    assert_eq!(middle.admitted + middle.rejected_total, EVENTS as u64);
    assert_eq!(middle.admitted, middle.completed);
    assert_eq!(last.admitted + last.rejected_total, middle.completed);
    assert!(
        completed > 0
            && stats
                .stages
                .iter()
                .any(|s| s.totals.counters.rejected_total > 0),
        "the thresholds were exercised: {completed} completed"
    );
}

#[test]
fn enqueue_many_stays_atomic_under_concurrency() {
    const BATCH: u64 = 7;
    let rt = Runtime::start().unwrap();
    let seen: Arc<Vec<AtomicU8>> = Arc::new((0..4000).map(|_| AtomicU8::new(0)).collect());
    let sv = seen.clone();
    let sink = rt
        .stage(
            Stage::builder("atomic")
                .threshold(20)
                .handler(handler::each(move |id: u64, _| {
                    sv[(id / BATCH) as usize].fetch_add(1, Ordering::SeqCst);
                    std::thread::sleep(Duration::from_micros(5));
                })),
        )
        .unwrap();
    let admitted: Arc<Vec<AtomicU8>> = Arc::new((0..4000).map(|_| AtomicU8::new(0)).collect());
    let threads: Vec<_> = (0..4u64)
        .map(|t| {
            let sink = sink.clone();
            let admitted = admitted.clone();
            std::thread::spawn(move || {
                for b in (t * 1000)..(t * 1000 + 1000) {
                    let batch: Vec<u64> = (0..BATCH).map(|k| b * BATCH + k).collect();
                    if sink.enqueue_many(batch).is_ok() {
                        admitted[b as usize].store(1, Ordering::SeqCst);
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    rt.shutdown();
    let mut admitted_batches = 0;
    for b in 0..4000 {
        let count = seen[b].load(Ordering::SeqCst) as u64;
        let expected = if admitted[b].load(Ordering::SeqCst) == 1 {
            BATCH
        } else {
            0
        };
        assert_eq!(count, expected, "batch {b} partly admitted");
        admitted_batches += (expected > 0) as u32;
    }
    assert!(
        admitted_batches > 0 && admitted_batches < 4000,
        "{admitted_batches} admitted: contention was real"
    );
}
