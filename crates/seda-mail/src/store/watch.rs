//! Interrupts blocking database calls whose request was cancelled or expired.
//!
//! A [`Meta`]'s cancellation token is a flag, not a notification, so one thread polls the
//! requests that are inside a database call every [`POLL`] and takes the abort action (SQLite's
//! interrupt, PostgreSQL's cancel request, MariaDB's `KILL QUERY`) of each one that expired.
//! It runs those actions *outside* the registry lock, each on a short-lived thread of its own:
//! a PostgreSQL cancel opens a connection and MariaDB's kill may have to, and a server that does
//! not answer (bounded by the backends' connect and read timeouts) or an action that panics must
//! neither hold up the database calls that take the lock nor kill the watch thread.
//!
//! An action may therefore still run after its call has ended. [`Guard::finish`] says whether
//! the action was taken; the store then drops that connection instead of pooling it, so a late
//! cancel never reaches the next statement run on it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use parking_lot::Mutex;
use seda::Meta;

/// How often the watch thread looks at the cancellation flags.
pub const POLL: Duration = Duration::from_millis(5);
/// Most abort actions running at once; past it an action is skipped (its statement then runs
/// to its end, and the request is answered as cancelled when it returns).
pub const MAX_RUNNING: usize = 64;

type Abort = Box<dyn FnOnce() + Send>;

struct Entry {
    meta: Meta,
    abort: Option<Abort>,
}

#[derive(Default)]
struct Registry {
    entries: Mutex<HashMap<u64, Entry>>,
    next: AtomicU64,
    running: Arc<AtomicUsize>,
}

fn registry() -> &'static Arc<Registry> {
    static REG: OnceLock<Arc<Registry>> = OnceLock::new();
    REG.get_or_init(|| {
        let reg = Arc::new(Registry::default());
        let r = reg.clone();
        // If the thread cannot start, cancellation still works at stage boundaries and between
        // statements; only interruption inside a statement is lost.
        let _ = std::thread::Builder::new()
            .name("seda-mail-watch".into())
            .spawn(move || {
                loop {
                    std::thread::sleep(POLL);
                    let due: Vec<Abort> = {
                        let mut entries = r.entries.lock();
                        entries
                            .values_mut()
                            .filter(|e| e.abort.is_some() && e.meta.is_expired_now())
                            .filter_map(|e| e.abort.take())
                            .collect()
                    };
                    for abort in due {
                        run_detached(&r.running, abort);
                    }
                }
            });
        reg
    })
}

/// Abort actions still running on their threads (a PostgreSQL cancel may outlive its call):
/// the early-termination soak waits for none before it counts open files.
pub fn aborts_running() -> usize {
    registry().running.load(Ordering::Acquire)
}

/// Runs `abort` on a thread of its own (or skips it past [`MAX_RUNNING`]); a panic in it ends
/// only that thread.
fn run_detached(running: &Arc<AtomicUsize>, abort: Abort) {
    if running.fetch_add(1, Ordering::AcqRel) >= MAX_RUNNING {
        running.fetch_sub(1, Ordering::AcqRel);
        return;
    }
    let done = running.clone();
    let spawned = std::thread::Builder::new()
        .name("seda-mail-cancel".into())
        .spawn(move || {
            struct Release(Arc<AtomicUsize>);
            impl Drop for Release {
                fn drop(&mut self) {
                    self.0.fetch_sub(1, Ordering::AcqRel);
                }
            }
            let _release = Release(done);
            abort();
        });
    if spawned.is_err() {
        running.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Watches one database call; dropping it (or [`finish`](Self::finish)) ends the watch.
pub struct Guard {
    key: u64,
    fired: bool,
}

impl Guard {
    /// Whether the abort action was taken (the call may fail because the request was
    /// cancelled).
    pub fn fired(&mut self) -> bool {
        if !self.fired {
            let entries = registry().entries.lock();
            self.fired = entries.get(&self.key).is_some_and(|e| e.abort.is_none());
        }
        self.fired
    }

    /// Ends the watch and says whether the abort action was taken: after `false` it never
    /// runs; after `true` it may still be running, so the connection must not be reused.
    pub fn finish(self) -> bool {
        let removed = registry().entries.lock().remove(&self.key);
        let fired = self.fired || removed.is_some_and(|e| e.abort.is_none());
        std::mem::forget(self);
        fired
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        registry().entries.lock().remove(&self.key);
    }
}

/// Runs `abort` once if `meta` is cancelled or expires before the guard is dropped.
pub fn watch(meta: &Meta, abort: impl FnOnce() + Send + 'static) -> Guard {
    let reg = registry();
    let key = reg.next.fetch_add(1, Ordering::Relaxed);
    reg.entries.lock().insert(
        key,
        Entry {
            meta: meta.clone(),
            abort: Some(Box::new(abort)),
        },
    );
    Guard { key, fired: false }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::sync::mpsc;

    #[test]
    fn fires_once_on_cancel_and_never_after_drop() {
        let meta = Meta::new();
        let hit = Arc::new(AtomicBool::new(false));
        let h = hit.clone();
        let mut g = watch(&meta, move || h.store(true, Ordering::SeqCst));
        meta.cancel_token().cancel();
        let t0 = std::time::Instant::now();
        while !hit.load(Ordering::SeqCst) && t0.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(hit.load(Ordering::SeqCst));
        assert!(g.fired());
        assert!(g.finish());

        let meta = Meta::new();
        let hit = Arc::new(AtomicBool::new(false));
        let h = hit.clone();
        let g = watch(&meta, move || h.store(true, Ordering::SeqCst));
        assert!(!g.finish());
        meta.cancel_token().cancel();
        std::thread::sleep(POLL * 4);
        assert!(!hit.load(Ordering::SeqCst));
    }

    /// Waits up to 10 s for `rx`; the test fails (rather than hangs) if nothing comes.
    fn within(rx: &mpsc::Receiver<()>, what: &str) {
        rx.recv_timeout(Duration::from_secs(10))
            .unwrap_or_else(|_| panic!("{what} did not happen within 10 s"));
    }

    #[test]
    fn a_hanging_or_panicking_abort_stalls_nothing_else() {
        // A cancel that hangs (a database that does not answer) until released...
        let (release_tx, release_rx) = mpsc::channel::<()>();
        let (started_tx, started_rx) = mpsc::channel();
        let stuck = Meta::new();
        let _g1 = watch(&stuck, move || {
            let _ = started_tx.send(());
            let _ = release_rx.recv_timeout(Duration::from_secs(60));
        });
        // ...and one that panics.
        let bad = Meta::new();
        let _g2 = watch(&bad, || panic!("a failing cancel"));
        stuck.cancel_token().cancel();
        bad.cancel_token().cancel();
        within(&started_rx, "the hanging abort starting");
        std::thread::sleep(POLL * 4);

        // A database call ending now must not wait for them (its guard takes the lock)...
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let g = watch(&Meta::new(), || {});
            let fired = g.finish();
            let _ = tx.send(fired);
        });
        let fired = rx.recv_timeout(Duration::from_secs(10));
        assert_eq!(fired, Ok(false), "a guard blocked behind a hanging abort");

        // ...and a later cancellation still fires: the watch thread is alive and free.
        let (hit_tx, hit_rx) = mpsc::channel();
        let later = Meta::new();
        let _g3 = watch(&later, move || {
            let _ = hit_tx.send(());
        });
        later.cancel_token().cancel();
        within(&hit_rx, "a later abort");
        let _ = release_tx.send(());
    }
}
