//! The store's checkpoints, run by a thread of the service's own instead of inside a commit
//! (see `store/sqlite.rs`: a commit that checkpoints costs 80 times a median one, and under
//! the lab's former twentyfold CPU slowdown it made one write in a few hundred late by a sixth
//! of a second).

use std::sync::{Arc, Weak};
use std::time::Duration;

use crate::store::Store;

/// How often. At the lab's write rates (60-100 writes a second of a few pages each) the log
/// grows by about the 1,000 pages at which SQLite's own commits would have checkpointed.
pub(crate) const EVERY: Duration = Duration::from_secs(1);

/// Checkpoints `store` every [`EVERY`] until it is dropped. It does not hold the emulated
/// processor (`ServiceOptions::processor`): its real work is the real machine's. A failing checkpoint is reported once and tried again (the log then
/// grows until one succeeds; SQLite still checkpoints when the last connection closes).
pub(crate) fn start(store: &Arc<dyn Store>) {
    let store: Weak<dyn Store> = Arc::downgrade(store);
    let spawned = std::thread::Builder::new()
        .name("seda-mail-checkpoint".into())
        .spawn(move || {
            let mut reported = false;
            loop {
                std::thread::sleep(EVERY);
                let Some(store) = store.upgrade() else { return };
                if let Err(e) = store.checkpoint()
                    && !std::mem::replace(&mut reported, true)
                {
                    eprintln!("seda-mail: checkpoint failed (tried again every second): {e}");
                }
                drop(store);
            }
        });
    if let Err(e) = spawned {
        eprintln!(
            "seda-mail: cannot start the checkpoint thread ({e}); the log grows until the store closes"
        );
    }
}
