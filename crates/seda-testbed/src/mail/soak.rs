//! The safe-release soak: many requests terminated while they hold every kind of resource, then
//! proof that termination released them all (SERT06's "resource accounting", shown rather than
//! intercepted: in Rust a terminated request's resources are owned values, dropped when its
//! handler gives it up at a safe point).
//!
//! Each request of a terminable stage (fixed threshold, 1 ms control tick) holds, until it is
//! cut: a buffer of [`SoakConfig::hold_bytes`] (touched, so it is resident), the guard of one of
//! [`STRIPES`] locks, an open file, and a pooled database connection running a body search (a
//! full scan of the user's messages) in a loop; one request in four first refiles a message (a
//! write transaction, committed whole or rolled back whole). The terminator cuts the search
//! through the store's cancel plumbing (SQLite's interrupt, PostgreSQL's cancel, MariaDB's
//! `KILL QUERY`).
//!
//! Before and after, with the pool emptied and no abort action running, the soak reads the
//! process's resident memory and open file count; after, it checks every lock is free, every
//! pooled connection answers with no transaction open, its own resource counters are back to
//! zero, and the store's audit is as clean as before (no message lost or doubled).

use std::fs::File;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use seda::{Config, Meta, Runtime, Stage, handler};
use seda_control::terminate::FixedThreshold;

use seda_mail::store::{
    Audit, IdleCheck, Page, SearchField, SearchQuery, Sort, Store, StoreError, watch,
};

/// Locks the requests take a guard of (request `i` takes lock `i % STRIPES`).
pub const STRIPES: usize = 64;
/// Longest a request runs if nobody cuts it; one that ends this way is counted completed.
const UNCUT: Duration = Duration::from_secs(10);
/// A pattern no body contains: the search scans every body of the user.
const MISSING: &str = "zq-soak-no-such-text-qz";

/// What the soak runs.
#[derive(Clone)]
pub struct SoakConfig {
    /// The store, loaded with a corpus.
    pub store: Arc<dyn Store>,
    /// The user whose messages each request scans (and refiles).
    pub user: i64,
    /// Requests to terminate in the measured run.
    pub requests: u64,
    /// Requests run first, unmeasured, so pools and the allocator reach their working size.
    pub warmup: u64,
    /// Worker threads of the terminable stage.
    pub workers: usize,
    /// The termination threshold.
    pub threshold: Duration,
    /// Bytes of memory each request holds.
    pub hold_bytes: usize,
    /// A file each request opens and holds.
    pub file: PathBuf,
}

/// What the soak measured.
#[derive(Debug, Clone)]
pub struct SoakReport {
    /// The store's backend.
    pub backend: &'static str,
    /// Requests terminated in the measured run.
    pub terminated: u64,
    /// Requests that completed instead (their handler finished before a safe point).
    pub completed: u64,
    /// Of the terminated, those that had refiled a message first (a write transaction).
    pub wrote: u64,
    /// Database calls that ended cancelled (interrupted in the statement, or refused on entry
    /// once the request was cut).
    pub cancelled_calls: u64,
    /// Resident memory before and after, KiB.
    pub rss_kib: (u64, u64),
    /// Open file descriptors before and after.
    pub fds: (u64, u64),
    /// Locks still held after the run (of [`STRIPES`]).
    pub locks_held: usize,
    /// The soak's own counts of live buffers, lock guards and open files after the run.
    pub live: [i64; 3],
    /// The pool's idle connections after the run.
    pub idle: IdleCheck,
    /// The store's audit before and after.
    pub audit: (Audit, Audit),
    /// Seconds the measured run took.
    pub elapsed_s: f64,
}

impl SoakReport {
    /// Resident memory may grow by at most this much: 16 MiB, or 1% of what the terminated
    /// requests held, whichever is more (an allocator keeps some of what it was given back).
    pub fn rss_slack_kib(&self, hold_bytes: usize) -> u64 {
        let passed = self.terminated.saturating_mul(hold_bytes as u64) / 1024;
        (passed / 100).max(16 * 1024)
    }

    /// What leaked or broke, if anything (empty: released and clean).
    pub fn problems(&self, hold_bytes: usize) -> Vec<String> {
        let mut out = Vec::new();
        let (rss0, rss1) = self.rss_kib;
        if rss1 > rss0 + self.rss_slack_kib(hold_bytes) {
            out.push(format!("RSS grew from {rss0} KiB to {rss1} KiB"));
        }
        if self.fds.1 != self.fds.0 {
            out.push(format!(
                "open files went from {} to {}",
                self.fds.0, self.fds.1
            ));
        }
        if self.locks_held > 0 {
            out.push(format!("{} locks still held", self.locks_held));
        }
        if self.live != [0, 0, 0] {
            out.push(format!("live buffers, guards, files: {:?}", self.live));
        }
        if self.idle.usable != self.idle.connections {
            out.push(format!("idle connections: {:?}", self.idle));
        }
        let (a, b) = self.audit;
        if a != b || b.bad_folders != 0 || b.messages != b.folder_counts {
            out.push(format!("audit before {a:?}, after {b:?}"));
        }
        out
    }
}

/// The soak's own count of what requests hold now.
#[derive(Default)]
struct Live {
    buffers: AtomicI64,
    guards: AtomicI64,
    files: AtomicI64,
}

/// Decrements its counter when dropped with whatever it holds.
struct Held<'a, T> {
    _value: T,
    count: &'a AtomicI64,
}

impl<'a, T> Held<'a, T> {
    fn new(value: T, count: &'a AtomicI64) -> Self {
        count.fetch_add(1, Ordering::Relaxed);
        Held {
            _value: value,
            count,
        }
    }
}

impl<T> Drop for Held<'_, T> {
    fn drop(&mut self) {
        self.count.fetch_sub(1, Ordering::Relaxed);
    }
}

struct Shared {
    store: Arc<dyn Store>,
    locks: Vec<Mutex<u64>>,
    live: Live,
    user: i64,
    messages: Vec<i64>,
    folders: Vec<i64>,
    hold_bytes: usize,
    file: PathBuf,
    wrote: AtomicU64,
    cancelled_calls: AtomicU64,
}

impl Shared {
    /// One request: take everything, then search until cut.
    fn run(&self, meta: &Meta, i: u64) {
        let mut buf = vec![0u8; self.hold_bytes];
        // Touch every page, so the buffer is resident memory, not a promise.
        for b in buf.iter_mut().step_by(4096) {
            *b = i as u8;
        }
        let _buf = Held::new(buf, &self.live.buffers);
        let lock = &self.locks[i as usize % STRIPES];
        let guard = Held::new(lock.lock(), &self.live.guards);
        let _file = File::open(&self.file).map(|f| Held::new(f, &self.live.files));
        let wrote = i.is_multiple_of(4) && !self.messages.is_empty() && self.folders.len() >= 2;
        if wrote {
            let id = self.messages[(i / 4) as usize % self.messages.len()];
            let to = self.folders[(i / 4) as usize % 2];
            if let Err(StoreError::Cancelled) = self.store.refile(self.user, id, to, meta) {
                self.cancelled_calls.fetch_add(1, Ordering::Relaxed);
            }
        }
        let start = Instant::now();
        while start.elapsed() < UNCUT {
            if meta.cancel_token().checkpoint().is_err() {
                if wrote {
                    self.wrote.fetch_add(1, Ordering::Relaxed);
                }
                break;
            }
            match self.store.search(
                self.user,
                SearchQuery {
                    text: MISSING,
                    field: SearchField::Body,
                    limit: 10,
                },
                meta,
            ) {
                Ok(_) => {}
                Err(StoreError::Cancelled) => {
                    self.cancelled_calls.fetch_add(1, Ordering::Relaxed);
                }
                Err(e) => {
                    eprintln!("soak: search failed: {e}");
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
        }
        drop(guard);
    }
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

fn open_fds() -> u64 {
    std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count() as u64)
}

/// Empties the pool and waits (up to 30 s) for abort actions to end, so the counts that
/// follow see only what requests left behind.
fn quiesce(store: &dyn Store) -> Result<IdleCheck, StoreError> {
    let deadline = Instant::now() + Duration::from_secs(30);
    while watch::aborts_running() > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    store.check_idle()
}

/// Runs the soak (see the module docs).
pub fn run(config: &SoakConfig) -> Result<SoakReport, String> {
    let store = config.store.clone();
    let fail = |what: &str, e: StoreError| format!("soak: {what}: {e}");
    let meta = Meta::new();
    let user = config.user;
    let folders = store.folders(user, &meta).map_err(|e| fail("folders", e))?;
    let mut ids: Vec<i64> = folders.iter().map(|f| f.id).collect();
    ids.truncate(2);
    let messages = match folders.first() {
        Some(f) => store
            .messages(user, f.id, Sort::Date, Page::Offset(0), 50, &meta)
            .map_err(|e| fail("messages", e))?
            .map(|(_, m)| m.into_iter().map(|s| s.id).collect())
            .unwrap_or_default(),
        None => Vec::new(),
    };
    let audit_before = store.audit().map_err(|e| fail("audit", e))?;
    let shared = Arc::new(Shared {
        store: store.clone(),
        locks: (0..STRIPES).map(|_| Mutex::new(0)).collect(),
        live: Live::default(),
        user,
        messages,
        folders: ids,
        hold_bytes: config.hold_bytes,
        file: config.file.clone(),
        wrote: AtomicU64::new(0),
        cancelled_calls: AtomicU64::new(0),
    });
    let rt_config = Config::from_toml("[runtime]\ntick_ms = 1\n").map_err(|e| e.to_string())?;
    let rt = Runtime::builder()
        .config(rt_config)
        .start()
        .map_err(|e| e.to_string())?;
    let s = shared.clone();
    let sink = rt
        .stage(
            Stage::builder("soak")
                .threads(config.workers.max(1))
                .thread_bounds(config.workers.max(1), config.workers.max(1))
                .batch(1)
                .threshold(config.workers.max(1) * 4)
                .terminate(Box::new(FixedThreshold(config.threshold)))
                .handler(handler::each(move |(meta, i): (Meta, u64), _| {
                    s.run(&meta, i);
                })),
        )
        .map_err(|e| e.to_string())?;
    let drive = |from: u64, n: u64| -> Result<(), String> {
        for i in from..from + n {
            let mut event = (Meta::new(), i);
            loop {
                match sink.enqueue_timeout(event, Duration::from_secs(1)) {
                    Ok(()) => break,
                    Err(r) if r.reason == seda::RejectReason::TimedOut => event = r.event,
                    Err(r) => return Err(format!("soak: request refused: {:?}", r.reason)),
                }
            }
        }
        // Quiet: every request handled.
        let deadline = Instant::now() + UNCUT * 2;
        while rt.stats().in_flight > 0 {
            if Instant::now() > deadline {
                return Err("soak: requests still running after 20 s".into());
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        Ok(())
    };
    drive(0, config.warmup)?;
    quiesce(store.as_ref()).map_err(|e| fail("pool", e))?;
    let counts = |rt: &Runtime| {
        let c = &rt.stats().stages[0].totals.counters;
        (c.terminated, c.completed)
    };
    let (t0, c0) = counts(&rt);
    let wrote0 = shared.wrote.load(Ordering::Relaxed);
    let cancelled0 = shared.cancelled_calls.load(Ordering::Relaxed);
    let (rss0, fds0) = (rss_kib(), open_fds());
    let start = Instant::now();
    drive(config.warmup, config.requests)?;
    let elapsed_s = start.elapsed().as_secs_f64();
    let (t1, c1) = counts(&rt);
    rt.shutdown();
    drop(sink);
    let idle = quiesce(store.as_ref()).map_err(|e| fail("pool", e))?;
    let (rss1, fds1) = (rss_kib(), open_fds());
    let locks_held = shared
        .locks
        .iter()
        .filter(|l| l.try_lock().is_none())
        .count();
    let l = &shared.live;
    let audit_after = store.audit().map_err(|e| fail("audit", e))?;
    // The audit's connection goes back to the pool: close it too.
    let _ = store.check_idle();
    Ok(SoakReport {
        backend: store.backend(),
        terminated: t1 - t0,
        completed: c1 - c0,
        wrote: shared.wrote.load(Ordering::Relaxed) - wrote0,
        cancelled_calls: shared.cancelled_calls.load(Ordering::Relaxed) - cancelled0,
        rss_kib: (rss0, rss1),
        fds: (fds0, fds1),
        locks_held,
        live: [
            l.buffers.load(Ordering::Relaxed),
            l.guards.load(Ordering::Relaxed),
            l.files.load(Ordering::Relaxed),
        ],
        idle,
        audit: (audit_before, audit_after),
        elapsed_s,
    })
}
