use std::sync::Mutex;
use std::sync::mpsc;
use std::time::Duration;

use seda::{Runtime, Stage, handler};

struct Job {
    n: u64,
    reply: mpsc::Sender<u64>,
}

impl seda::Event for Job {}

#[test]
fn a_panicking_handler_fails_its_event_and_the_stage_keeps_running() {
    let rt = Runtime::start().unwrap();
    // Each request carries its reply channel; a panic drops it, which the waiter sees.
    let sink = rt
        .stage(
            Stage::builder("fragile").handler(handler::each(|job: Job, _| {
                if job.n.is_multiple_of(3) {
                    panic!("bad input {}", job.n);
                }
                job.reply.send(job.n * 2).unwrap();
            })),
        )
        .unwrap();
    let mut outcomes = Vec::new();
    for n in 1..=9u64 {
        let (tx, rx) = mpsc::channel();
        sink.enqueue(Job { n, reply: tx }).unwrap();
        outcomes.push(rx.recv_timeout(Duration::from_secs(5)).ok());
    }
    let failed: Vec<usize> = outcomes
        .iter()
        .enumerate()
        .filter(|(_, o)| o.is_none())
        .map(|(i, _)| i + 1)
        .collect();
    assert_eq!(failed, vec![3, 6, 9]);
    assert_eq!(outcomes[0], Some(2));
    rt.shutdown();
    let c = &rt.stats().stages[0].totals.counters;
    assert_eq!((c.completed, c.failed, c.panics), (6, 3, 3));
}

#[test]
fn a_panicking_batch_handler_loses_only_its_batch() {
    let rt = Runtime::start().unwrap();
    let (tx, rx) = mpsc::channel();
    let tx = Mutex::new(tx);
    let sink = rt
        .stage(Stage::builder("batchy").batch(1).handler(
            move |batch: &mut Vec<u64>, _: &seda::Cx<'_>| {
                for n in batch.drain(..) {
                    assert!(n != 2, "poison");
                    tx.lock().unwrap().send(n).unwrap();
                }
            },
        ))
        .unwrap();
    for n in 1..=3 {
        sink.enqueue(n).unwrap();
    }
    rt.shutdown();
    let got: Vec<u64> = rx.try_iter().collect();
    assert_eq!(got, vec![1, 3]);
    let c = &rt.stats().stages[0].totals.counters;
    assert_eq!((c.completed, c.failed, c.panics), (2, 1, 1));
}
