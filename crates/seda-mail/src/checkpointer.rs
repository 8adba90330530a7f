//! The store's checkpoints, run by a thread of the service's own instead of inside a commit
//! (see `store/sqlite.rs`: a commit that checkpoints costs 80 times a median one, and under
//! the lab's slowdown it made one write in a few hundred late by a sixth of a second).

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use crate::service::spin_until;
use crate::store::Store;

/// How often. At the lab's write rates (60-100 writes a second of a few pages each) the log
/// grows by about the 1,000 pages at which SQLite's own commits would have checkpointed.
pub(crate) const EVERY: Duration = Duration::from_secs(1);

/// Checkpoints `store` every [`EVERY`] until it is dropped. The thread keeps the core busy
/// `slowdown` times the checkpoint's CPU time, as the handlers do: an emulated slower machine
/// checkpoints slower too. A failing checkpoint is reported once and tried again (the log then
/// grows until one succeeds; SQLite still checkpoints when the last connection closes).
pub(crate) fn start(store: &Arc<dyn Store>, slowdown: Arc<AtomicU32>) {
    let store: Weak<dyn Store> = Arc::downgrade(store);
    let spawned = std::thread::Builder::new()
        .name("seda-mail-checkpoint".into())
        .spawn(move || {
            let mut reported = false;
            loop {
                std::thread::sleep(EVERY);
                let Some(store) = store.upgrade() else { return };
                let start = seda::thread_cpu_time();
                if let Err(e) = store.checkpoint()
                    && !std::mem::replace(&mut reported, true)
                {
                    eprintln!("seda-mail: checkpoint failed (tried again every second): {e}");
                }
                drop(store);
                let now = seda::thread_cpu_time();
                let slowdown = slowdown.load(Ordering::Relaxed).max(1);
                spin_until(now, start + now.saturating_sub(start) * slowdown, || false);
            }
        });
    if let Err(e) = spawned {
        eprintln!(
            "seda-mail: cannot start the checkpoint thread ({e}); the log grows until the store closes"
        );
    }
}
