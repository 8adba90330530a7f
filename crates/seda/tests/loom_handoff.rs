//! A loom model of the hand-off between a producer and a parking worker (`pool.rs`).
//!
//! The protocol: the producer makes the event ready, issues a `SeqCst` fence, then looks for
//! parked workers and, if there is one, notifies under the park lock. The worker, holding the
//! park lock, announces itself as a sleeper, issues a `SeqCst` fence, looks for ready work once
//! more, and only then waits. The two fences make it impossible for both sides to miss each
//! other. (Loom models `SeqCst` fences but not `SeqCst` loads and stores, which is why the
//! runtime uses the fence form too: the model checks the same orderings the code relies on.) Loom explores every interleaving; a lost wake-up would leave the worker
//! waiting forever, which loom reports as a deadlock. The runtime's worker also wakes on a
//! timeout, which would hide a lost wake-up as latency; the model waits without one so it cannot.
//! A second model drops the re-check and must fail, showing the model can catch the bug.

use loom::sync::atomic::{AtomicUsize, Ordering::SeqCst, fence};
use loom::sync::{Arc, Condvar, Mutex};
use loom::thread;

struct Pool {
    ready: AtomicUsize,
    sleepers: AtomicUsize,
    park: Mutex<()>,
    wake: Condvar,
}

impl Pool {
    fn new() -> Arc<Pool> {
        Arc::new(Pool {
            ready: AtomicUsize::new(0),
            sleepers: AtomicUsize::new(0),
            park: Mutex::new(()),
            wake: Condvar::new(),
        })
    }

    fn push(&self) {
        self.ready.fetch_add(1, SeqCst);
        fence(SeqCst);
        if self.sleepers.load(SeqCst) > 0 {
            let _guard = self.park.lock().unwrap();
            self.wake.notify_one();
        }
    }

    fn try_pop(&self) -> bool {
        self.ready
            .fetch_update(SeqCst, SeqCst, |r| r.checked_sub(1))
            .is_ok()
    }

    /// Takes `n` events, parking between them as the runtime's worker does.
    fn work(&self, n: usize, recheck: bool) {
        let mut taken = 0;
        while taken < n {
            if self.try_pop() {
                taken += 1;
                continue;
            }
            let guard = self.park.lock().unwrap();
            self.sleepers.fetch_add(1, SeqCst);
            fence(SeqCst);
            if recheck && self.ready.load(SeqCst) > 0 {
                self.sleepers.fetch_sub(1, SeqCst);
                continue;
            }
            let guard = self.wake.wait(guard).unwrap();
            self.sleepers.fetch_sub(1, SeqCst);
            drop(guard);
        }
    }
}

fn model(recheck: bool) {
    loom::model(move || {
        let pool = Pool::new();
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
