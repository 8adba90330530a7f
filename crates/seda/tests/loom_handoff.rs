//! A loom model of the hand-off between a producer and a parking worker: the runtime's own
//! `src/handoff.rs`, compiled here against loom's types (`src/sync/loom_impl.rs`, the shim the
//! crate itself uses under `cfg(loom)`), so the model checks the code that runs, not a copy.
//!
//! `handoff.rs` describes the protocol. Loom explores every interleaving; a lost wake-up would
//! leave the worker waiting forever, which loom reports as a deadlock (loom's timed wait never
//! times out, so the runtime's idle timeout cannot hide a lost wake-up as latency). A second
//! model gives the worker a re-check that never sees the work, and must fail, showing the model
//! can catch the bug.

#[path = "../src/sync/loom_impl.rs"]
#[allow(dead_code)]
mod sync;

#[path = "../src/handoff.rs"]
#[allow(dead_code)]
mod handoff;

use std::time::Duration;

use handoff::{Handoff, Parked};
use loom::sync::Arc;
use loom::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use loom::thread;

/// A queue reduced to its count of ready events, and the real hand-off.
struct Pool {
    ready: AtomicUsize,
    handoff: Handoff,
}

impl Pool {
    fn push(&self) {
        self.ready.fetch_add(1, SeqCst);
        self.handoff.notify();
    }

    fn try_pop(&self) -> bool {
        self.ready
            .fetch_update(SeqCst, SeqCst, |r| r.checked_sub(1))
            .is_ok()
    }

    /// Takes `n` events, parking between them as the runtime's worker does; with `recheck`
    /// off, the worker's look for work after announcing itself never sees any.
    fn work(&self, n: usize, recheck: bool) {
        let mut taken = 0;
        while taken < n {
            if self.try_pop() {
                taken += 1;
                continue;
            }
            let ready = || recheck && self.ready.load(SeqCst) > 0;
            if self.handoff.park(ready, Duration::from_secs(1)) == Parked::TimedOut {
                unreachable!("loom's timed wait does not time out");
            }
        }
    }
}

fn model(recheck: bool) {
    loom::model(move || {
        let pool = Arc::new(Pool {
            ready: AtomicUsize::new(0),
            handoff: Handoff::new(),
        });
        let producer = {
            let pool = pool.clone();
            thread::spawn(move || {
                pool.push();
                pool.push();
            })
        };
        pool.work(2, recheck);
        producer.join().unwrap();
    });
}

#[test]
fn no_lost_wakeup() {
    model(true);
}

#[test]
#[ignore = "run by `the_model_catches_a_missing_recheck` in a child process (loom aborts on deadlock)"]
fn lost_wakeup_without_recheck() {
    model(false);
}

#[test]
fn the_model_catches_a_missing_recheck() {
    let exe = std::env::current_exe().expect("test binary path");
    let out = std::process::Command::new(exe)
        .args([
            "--ignored",
            "--exact",
            "lost_wakeup_without_recheck",
            "--test-threads",
            "1",
        ])
        .output()
        .expect("run the broken model");
    let text = String::from_utf8_lossy(&out.stderr) + String::from_utf8_lossy(&out.stdout);
    assert!(
        !out.status.success(),
        "the broken protocol passed the model:\n{text}"
    );
    assert!(
        text.contains("deadlock"),
        "failed for another reason:\n{text}"
    );
}
