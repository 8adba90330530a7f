//! Interrupts blocking database calls whose request was cancelled or expired.
//!
//! A [`Meta`]'s cancellation token is a flag, not a notification, so one thread polls the
//! requests that are inside a database call every [`POLL`] and runs their abort action (SQLite's
//! interrupt, PostgreSQL's cancel request, MariaDB's `KILL QUERY`) once. The action runs under
//! the registry lock, and [`Guard`]'s drop takes that lock, so an abort never reaches the next
//! statement a connection runs for another request.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use parking_lot::Mutex;
use seda::Meta;

/// How often the watch thread looks at the cancellation flags.
pub const POLL: Duration = Duration::from_millis(5);

type Abort = Box<dyn FnOnce() + Send>;

struct Entry {
    meta: Meta,
    abort: Option<Abort>,
}

#[derive(Default)]
struct Registry {
    entries: Mutex<HashMap<u64, Entry>>,
    next: AtomicU64,
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
                    let mut entries = r.entries.lock();
                    for e in entries.values_mut() {
                        if e.abort.is_some()
                            && e.meta.is_expired_now()
                            && let Some(abort) = e.abort.take()
                        {
                            abort();
                        }
                    }
                }
            });
        reg
    })
}

/// Watches one database call; dropping it ends the watch.
pub struct Guard {
    key: u64,
    fired: bool,
}

impl Guard {
    /// Whether the abort action ran (the call failed because the request was cancelled).
    pub fn fired(&mut self) -> bool {
        if !self.fired {
            let entries = registry().entries.lock();
            self.fired = entries.get(&self.key).is_some_and(|e| e.abort.is_none());
        }
        self.fired
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

    #[test]
    fn fires_once_on_cancel_and_never_after_drop() {
        let meta = Meta::new();
        let hit = Arc::new(AtomicBool::new(false));
        let h = hit.clone();
        let mut g = watch(&meta, move || h.store(true, Ordering::SeqCst));
        meta.cancel.cancel();
        let t0 = std::time::Instant::now();
        while !g.fired() && t0.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(hit.load(Ordering::SeqCst));
        drop(g);

        let meta = Meta::new();
        let hit = Arc::new(AtomicBool::new(false));
        let h = hit.clone();
        let g = watch(&meta, move || h.store(true, Ordering::SeqCst));
        drop(g);
        meta.cancel.cancel();
        std::thread::sleep(POLL * 4);
        assert!(!hit.load(Ordering::SeqCst));
    }
}
