//! Haboob: the static-file service as stages.
//!
//! ```text
//! front end --HttpRequest--> route (inline) --Lookup--> cache (inline) --hit--> reply
//!                                                          | miss (first one per file)
//!                                                          v
//!                                                 file_io (queued, blocking reads) --> reply
//! ```
//!
//! A hit is answered on the front end's thread without a queue hop (Welsh's retrospective: a
//! queue between every pair of stages costs more than it buys); only misses cross a queue, to
//! the file-I/O pool. Concurrent misses for one file wait on one read (Haboob's pending
//! entries). Replies are built from ready [`Entry`] values.

pub mod cache;
pub mod path;
pub mod respond;

use std::collections::HashMap;
use std::fs;
use std::io::{self, Read};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use http::header::{ALLOW, HeaderValue};
use http::{Method, StatusCode};
use parking_lot::Mutex;
use seda::{Event, Meta, RejectReason, Runtime, Sink, Stage, handler};

use crate::config::StaticConfig;
use crate::request::{HttpRequest, overloaded, text};
pub use cache::{Cache, CacheStats};
pub use respond::Entry;

/// Names of the service's stages (the keys of `[stages.*]` in a configuration file).
pub const STAGES: [&str; 3] = ["route", "cache", "file_io"];

/// A request whose path was confined to the root, on its way to the cache.
#[derive(Debug)]
pub struct Lookup {
    req: HttpRequest,
    key: Arc<str>,
}

impl Event for Lookup {
    fn meta(&self) -> Option<&Meta> {
        Some(&self.req.meta)
    }
}

/// A read of one file for every request waiting on it.
#[derive(Debug)]
pub struct ReadFile {
    meta: Meta,
    key: Arc<str>,
}

impl Event for ReadFile {
    fn meta(&self) -> Option<&Meta> {
        Some(&self.meta)
    }
}

struct State {
    cache: Cache<Arc<Entry>>,
    /// Files being read, with the requests waiting for them.
    pending: HashMap<Arc<str>, Vec<Lookup>>,
}

struct Files {
    root: PathBuf,
    max_file_bytes: u64,
    retry_after_s: u32,
    serve_hidden: bool,
    max_waiters: usize,
    state: Mutex<State>,
}

/// Handle on a running static-file service: its entry sink and its cache counters.
#[derive(Clone)]
pub struct StaticService {
    sink: Sink<HttpRequest>,
    files: Arc<Files>,
}

impl std::fmt::Debug for StaticService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StaticService")
            .field("root", &self.files.root)
            .finish_non_exhaustive()
    }
}

/// Why the service could not be built.
#[derive(Debug)]
pub enum StaticError {
    /// The root is missing or not a directory.
    Root(PathBuf, io::Error),
    /// A stage could not be added.
    Build(seda::BuildError),
}

impl std::fmt::Display for StaticError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StaticError::Root(p, e) => write!(
                f,
                "cannot serve {}: {e} (give an existing directory with --root)",
                p.display()
            ),
            StaticError::Build(e) => write!(f, "cannot build the static-file stages: {e}"),
        }
    }
}

impl std::error::Error for StaticError {}

impl From<seda::BuildError> for StaticError {
    fn from(e: seda::BuildError) -> Self {
        StaticError::Build(e)
    }
}

impl StaticService {
    /// Adds the stages `route`, `cache` and `file_io` to `rt`.
    pub fn build(rt: &Runtime, config: &StaticConfig) -> Result<StaticService, StaticError> {
        let root = fs::canonicalize(&config.root)
            .and_then(|p| {
                if p.is_dir() {
                    Ok(p)
                } else {
                    Err(io::Error::new(
                        io::ErrorKind::NotADirectory,
                        "not a directory",
                    ))
                }
            })
            .map_err(|e| StaticError::Root(config.root.clone(), e))?;
        let files = Arc::new(Files {
            root,
            max_file_bytes: config.max_file_bytes,
            retry_after_s: config.retry_after_s,
            serve_hidden: config.serve_hidden,
            max_waiters: config.max_waiters_per_file.max(1),
            state: Mutex::new(State {
                cache: Cache::new(config.policy, config.cache_bytes),
                pending: HashMap::new(),
            }),
        });

        let io_sink: Sink<ReadFile> = {
            let (f, f2) = (files.clone(), files.clone());
            rt.stage(
                Stage::builder("file_io")
                    .threads(config.io_threads.max(1))
                    .threshold(config.io_threshold.max(1))
                    .handler(handler::each(move |ev: ReadFile, _cx| f.read(ev)))
                    .on_drop(move |ev: ReadFile, reason| f2.read_dropped(ev, reason)),
            )?
        };
        let cache_sink: Sink<Lookup> = {
            let f = files.clone();
            rt.stage(Stage::builder("cache").inline().handler(handler::each(
                move |ev: Lookup, _cx| {
                    f.lookup(ev, &io_sink);
                },
            )))?
        };
        let sink: Sink<HttpRequest> = {
            let (retry, hidden) = (config.retry_after_s, config.serve_hidden);
            rt.stage(Stage::builder("route").inline().handler(handler::each(
                move |req: HttpRequest, _cx| {
                    route(req, &cache_sink, retry, hidden);
                },
            )))?
        };
        Ok(StaticService { sink, files })
    }

    /// The sink the front end feeds.
    pub fn sink(&self) -> Sink<HttpRequest> {
        self.sink.clone()
    }

    /// The page cache's counters.
    pub fn cache_stats(&self) -> CacheStats {
        self.files.state.lock().cache.stats()
    }

    /// The served root (canonical).
    pub fn root(&self) -> &Path {
        &self.files.root
    }
}

/// Route: method, path decoding and confinement; then on to the cache.
fn route(req: HttpRequest, cache: &Sink<Lookup>, retry_after_s: u32, serve_hidden: bool) {
    let method = &req.head.method;
    if method != Method::GET && method != Method::HEAD {
        let mut r = text(StatusCode::METHOD_NOT_ALLOWED, "405 Method Not Allowed\n");
        r.headers_mut()
            .insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
        req.respond(r);
        return;
    }
    let key = match path::confine(req.head.uri.path()) {
        Ok(k) => Arc::<str>::from(k),
        Err(_) => {
            req.respond(text(
                StatusCode::BAD_REQUEST,
                "400 Bad Request: invalid path\n",
            ));
            return;
        }
    };
    if !serve_hidden && path::is_hidden(&key) {
        // 404, not 403: a prober learns nothing, not even that `/.git/config` exists.
        req.respond(Failure::NotFound.answer());
        return;
    }
    if let Err(rejected) = cache.enqueue(Lookup { req, key }) {
        rejected.event.req.respond(overloaded(retry_after_s));
    }
}

/// What went wrong reading a file, as the answer it gets.
#[derive(Debug, Clone, Copy)]
enum Failure {
    NotFound,
    Forbidden,
    TooLarge,
    Io,
}

impl Failure {
    fn of(e: &io::Error) -> Failure {
        match e.kind() {
            io::ErrorKind::NotFound | io::ErrorKind::NotADirectory => Failure::NotFound,
            io::ErrorKind::PermissionDenied => Failure::Forbidden,
            _ => Failure::Io,
        }
    }

    fn answer(self) -> http::Response<crate::request::Body> {
        match self {
            Failure::NotFound => text(StatusCode::NOT_FOUND, "404 Not Found\n"),
            Failure::Forbidden => text(StatusCode::FORBIDDEN, "403 Forbidden\n"),
            Failure::TooLarge => text(StatusCode::PAYLOAD_TOO_LARGE, "413 File Too Large\n"),
            Failure::Io => text(StatusCode::INTERNAL_SERVER_ERROR, "500 Read Error\n"),
        }
    }
}

impl Files {
    /// Cache stage: a hit is answered here; the first miss for a file starts a read, later
    /// ones wait for it.
    fn lookup(&self, ev: Lookup, io: &Sink<ReadFile>) {
        let mut state = self.state.lock();
        if let Some(entry) = state.cache.get(&ev.key) {
            drop(state);
            let r = entry.respond(&ev.req.head.method, &ev.req.head.headers);
            ev.req.respond(r);
            return;
        }
        if let Some(waiters) = state.pending.get_mut(&ev.key) {
            if waiters.len() >= self.max_waiters {
                // Reap the waiters whose clients left before refusing anyone.
                waiters.retain(|w| !w.req.meta.cancel.is_cancelled());
            }
            if waiters.len() >= self.max_waiters {
                drop(state);
                ev.req.respond(overloaded(self.retry_after_s));
                return;
            }
            waiters.push(ev);
            return;
        }
        let read = ReadFile {
            meta: ev.req.meta.clone(),
            key: ev.key.clone(),
        };
        state.pending.insert(ev.key.clone(), vec![ev]);
        drop(state);
        if let Err(rejected) = io.enqueue(read) {
            self.fail_all(&rejected.event.key, None);
        }
    }

    /// Answers every request waiting on `key` with the failure (None: overloaded).
    fn fail_all(&self, key: &str, failure: Option<Failure>) {
        let waiters = self.state.lock().pending.remove(key).unwrap_or_default();
        for w in waiters {
            let r = match failure {
                Some(f) => f.answer(),
                None => overloaded(self.retry_after_s),
            };
            w.req.respond(r);
        }
    }

    /// The read's own request was dropped at dequeue (its client left, or it expired): the
    /// other requests waiting on the file still get it. The hook runs on the file-I/O worker
    /// that dequeued the read, so the read happens right here, on the I/O pool, carrying a live
    /// waiter's metadata. At shutdown (`Closed`) every waiter is answered 503 instead.
    fn read_dropped(&self, ev: ReadFile, reason: RejectReason) {
        if reason == RejectReason::Closed {
            self.fail_all(&ev.key, None);
            return;
        }
        let mut state = self.state.lock();
        let Some(waiters) = state.pending.get_mut(&ev.key) else {
            return;
        };
        waiters.retain(|w| !w.req.meta.cancel.is_cancelled());
        let Some(meta) = waiters.first().map(|w| w.req.meta.clone()) else {
            state.pending.remove(&ev.key);
            return;
        };
        drop(state);
        self.read(ReadFile { meta, key: ev.key });
    }

    /// File-I/O stage: one blocking read, then every waiter is answered.
    fn read(&self, ev: ReadFile) {
        self.read_with(ev, |key| self.load(key));
    }

    /// `read` with the loading step given, so a test can make it fail or panic.
    fn read_with(&self, ev: ReadFile, load: impl FnOnce(&str) -> Result<Entry, Failure>) {
        let guard = AnswerOnUnwind(self, &ev.key);
        let result = load(&ev.key);
        std::mem::forget(guard);
        let mut state = self.state.lock();
        let waiters = state.pending.remove(&ev.key).unwrap_or_default();
        let entry = match result {
            Ok(entry) => {
                let entry = Arc::new(entry);
                let weight = entry.body.len().max(1);
                state.cache.insert(ev.key.clone(), entry.clone(), weight);
                entry
            }
            Err(f) => {
                drop(state);
                for w in waiters {
                    w.req.respond(f.answer());
                }
                return;
            }
        };
        drop(state);
        for w in waiters {
            if !w.req.meta.cancel.is_cancelled() {
                let r = entry.respond(&w.req.head.method, &w.req.head.headers);
                w.req.respond(r);
            }
        }
    }

    /// Reads the file `key` names, refusing anything that resolves outside the root (or, unless
    /// allowed, to a hidden name). The file is opened first and the opened file is checked (its
    /// real path and type), so a symlink swapped in between a check and the open cannot lead
    /// outside the root.
    fn load(&self, key: &str) -> Result<Entry, Failure> {
        let (mut file, mut path) = self.open(&self.root.join(key))?;
        let mut meta = file.metadata().map_err(|e| Failure::of(&e))?;
        if meta.is_dir() {
            (file, path) = self.open(&path.join("index.html"))?;
            meta = file.metadata().map_err(|e| Failure::of(&e))?;
        }
        if !meta.is_file() {
            return Err(Failure::NotFound);
        }
        if meta.len() > self.max_file_bytes {
            return Err(Failure::TooLarge);
        }
        let buf = read_bounded(&mut file, meta.len(), self.max_file_bytes)?;
        let modified = meta.modified().unwrap_or(std::time::UNIX_EPOCH);
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        Ok(Entry::new(Bytes::from(buf), name, modified))
    }

    /// Opens `path` (following symlinks) without blocking on a FIFO or becoming a controlling
    /// terminal, then confines the opened file by its real path, read back from
    /// `/proc/self/fd` (Linux).
    fn open(&self, path: &Path) -> Result<(fs::File, PathBuf), Failure> {
        use rustix::fs::{Mode, OFlags};
        let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
        let fd = rustix::fs::open(path, flags, Mode::empty())
            .map_err(|e| Failure::of(&io::Error::from(e)))?;
        let file = fs::File::from(fd);
        let real = fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd()))
            .map_err(|e| Failure::of(&e))?;
        let inside = real
            .strip_prefix(&self.root)
            .map_err(|_| Failure::NotFound)?;
        if !self.serve_hidden && inside.to_str().is_none_or(path::is_hidden) {
            return Err(Failure::NotFound);
        }
        Ok((file, real))
    }
}

/// Reads at most `limit` bytes; a file that turns out longer than that (it grew, or it is one
/// of the files whose size says 0, such as those under `/proc`) is too large.
fn read_bounded(file: &mut impl Read, size: u64, limit: u64) -> Result<Vec<u8>, Failure> {
    let mut buf = Vec::with_capacity(usize::try_from(size.min(limit)).unwrap_or(0));
    file.take(limit.saturating_add(1))
        .read_to_end(&mut buf)
        .map_err(|e| Failure::of(&e))?;
    if buf.len() as u64 > limit {
        return Err(Failure::TooLarge);
    }
    Ok(buf)
}

/// Answers every waiter on a file 500 if its read panics (dropped while unwinding; forgotten
/// once the read returned).
struct AnswerOnUnwind<'a>(&'a Files, &'a str);

impl Drop for AnswerOnUnwind<'_> {
    fn drop(&mut self) {
        self.0.fail_all(self.1, Some(Failure::Io));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::Reply;
    use std::sync::mpsc;
    use std::time::Duration;
    use tokio::sync::oneshot;

    type Answer = oneshot::Receiver<http::Response<crate::request::Body>>;

    fn files(root: &Path) -> Files {
        Files {
            root: fs::canonicalize(root).expect("root"),
            max_file_bytes: 1 << 20,
            retry_after_s: 1,
            serve_hidden: false,
            max_waiters: 3,
            state: Mutex::new(State {
                cache: Cache::new(crate::Policy::S3fifo, 1 << 20),
                pending: HashMap::new(),
            }),
        }
    }

    fn lookup(key: &str) -> (Lookup, Answer, Meta) {
        let (head, ()) = http::Request::get(format!("/{key}"))
            .body(())
            .expect("request")
            .into_parts();
        let meta = Meta::new();
        let (reply, rx) = Reply::channel();
        let req = HttpRequest::new(meta.clone(), head, Bytes::new(), reply);
        (
            Lookup {
                req,
                key: Arc::from(key),
            },
            rx,
            meta,
        )
    }

    /// A stand-in for the file-I/O stage that hands each read to the test.
    fn capture(rt: &Runtime) -> (Sink<ReadFile>, mpsc::Receiver<ReadFile>) {
        let (tx, rx) = mpsc::channel();
        let tx = std::sync::Mutex::new(tx);
        let sink = rt
            .stage(Stage::builder("file_io").threads(1).handler(handler::each(
                move |ev: ReadFile, _cx| {
                    let _ = tx.lock().map(|t| t.send(ev));
                },
            )))
            .expect("stage");
        (sink, rx)
    }

    #[test]
    fn concurrent_misses_for_one_file_share_one_read() {
        let dir = std::env::temp_dir().join(format!("seda-http-coalesce-{}", std::process::id()));
        fs::create_dir_all(&dir).expect("dir");
        fs::write(dir.join("f"), "shared").expect("write");
        let rt = Runtime::start().expect("runtime");
        let (io, reads) = capture(&rt);
        let files = files(&dir);
        let mut answers = Vec::new();
        for _ in 0..3 {
            let (ev, rx, _) = lookup("f");
            files.lookup(ev, &io);
            answers.push(rx);
        }
        let read = reads
            .recv_timeout(Duration::from_secs(5))
            .expect("one read");
        assert!(
            reads.recv_timeout(Duration::from_millis(50)).is_err(),
            "a second read was started"
        );
        assert_eq!(files.state.lock().pending["f"].len(), 3);
        files.read(read);
        for rx in answers {
            let r = rx.blocking_recv().expect("answered");
            assert_eq!(r.status(), 200);
            assert_eq!(r.headers()[http::header::CONTENT_LENGTH], "6");
        }
        // Now cached: a lookup is answered without a read.
        let (ev, rx, _) = lookup("f");
        files.lookup(ev, &io);
        assert_eq!(rx.blocking_recv().expect("hit").status(), 200);
        assert!(reads.recv_timeout(Duration::from_millis(50)).is_err());
        rt.shutdown_timeout(Duration::from_secs(5));
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_read_whose_client_left_is_done_for_the_other_waiters() {
        let dir = std::env::temp_dir().join(format!("seda-http-reassign-{}", std::process::id()));
        fs::create_dir_all(&dir).expect("dir");
        fs::write(dir.join("g"), "gee").expect("write");
        let rt = Runtime::start().expect("runtime");
        let (io, reads) = capture(&rt);
        let files = files(&dir);
        let (first, rx1, meta1) = lookup("g");
        let (second, rx2, _) = lookup("g");
        files.lookup(first, &io);
        files.lookup(second, &io);
        let read = reads.recv_timeout(Duration::from_secs(5)).expect("read");
        assert_eq!(read.meta.id, meta1.id);
        meta1.cancel.cancel();
        files.read_dropped(read, RejectReason::Expired);
        assert!(files.state.lock().pending.is_empty());
        assert_eq!(rx2.blocking_recv().expect("second answered").status(), 200);
        assert!(
            rx1.blocking_recv().is_err(),
            "the cancelled request gets no answer"
        );
        // When every waiter is gone, nothing is read and the pending entry goes.
        let (only, _rx, meta) = lookup("h");
        files.lookup(only, &io);
        let read = reads.recv_timeout(Duration::from_secs(5)).expect("read");
        meta.cancel.cancel();
        files.read_dropped(read, RejectReason::Expired);
        assert!(files.state.lock().pending.is_empty());
        rt.shutdown_timeout(Duration::from_secs(5));
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_miss_the_file_io_queue_cannot_take_is_answered_503_with_retry_after() {
        let dir = std::env::temp_dir().join(format!("seda-http-full-{}", std::process::id()));
        fs::create_dir_all(&dir).expect("dir");
        let rt = Runtime::start().expect("runtime");
        let (started_tx, started) = mpsc::channel();
        let (release, release_rx) = mpsc::channel::<()>();
        let (started_tx, release_rx) = (
            std::sync::Mutex::new(started_tx),
            std::sync::Mutex::new(release_rx),
        );
        // A file-I/O stage with one busy worker and room for one more read.
        let io = rt
            .stage(
                Stage::builder("file_io")
                    .threads(1)
                    .threshold(1)
                    .handler(handler::each(move |ev: ReadFile, _cx| {
                        let _ = started_tx.lock().map(|t| t.send(ev.key.clone()));
                        let _ = release_rx.lock().map(|r| r.recv());
                    })),
            )
            .expect("stage");
        let files = files(&dir);
        let (a, _ra, _) = lookup("a");
        files.lookup(a, &io);
        assert_eq!(
            &*started.recv_timeout(Duration::from_secs(5)).expect("a"),
            "a"
        );
        let (b, _rb, _) = lookup("b");
        files.lookup(b, &io);
        assert_eq!(io.len(), 1, "b waits in the queue");
        let (c, rc, _) = lookup("c");
        files.lookup(c, &io);
        let r = rc.blocking_recv().expect("c answered at once");
        assert_eq!(r.status(), 503);
        assert_eq!(r.headers()[http::header::RETRY_AFTER], "1");
        assert!(!files.state.lock().pending.contains_key("c"));
        release.send(()).expect("release a");
        release.send(()).expect("release b");
        rt.shutdown_timeout(Duration::from_secs(5));
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn waiters_on_one_file_are_capped_and_cancelled_ones_make_room() {
        let dir = std::env::temp_dir().join(format!("seda-http-cap-{}", std::process::id()));
        fs::create_dir_all(&dir).expect("dir");
        fs::write(dir.join("f"), "capped").expect("write");
        let rt = Runtime::start().expect("runtime");
        let (io, reads) = capture(&rt);
        let files = files(&dir); // at most 3 waiters per file
        let mut answers = Vec::new();
        let mut metas = Vec::new();
        for _ in 0..3 {
            let (ev, rx, meta) = lookup("f");
            files.lookup(ev, &io);
            answers.push(rx);
            metas.push(meta);
        }
        // A fourth is refused at once, like a full queue.
        let (ev, mut rx4, _) = lookup("f");
        files.lookup(ev, &io);
        let r = rx4.try_recv().expect("the fourth is answered at once");
        assert_eq!(r.status(), 503);
        assert_eq!(r.headers()[http::header::RETRY_AFTER], "1");
        // A waiter whose client left is dropped, which makes room for a new one.
        metas[1].cancel.cancel();
        let (ev, rx5, _) = lookup("f");
        files.lookup(ev, &io);
        assert_eq!(files.state.lock().pending["f"].len(), 3);
        let read = reads.recv_timeout(Duration::from_secs(5)).expect("read");
        files.read(read);
        let mut answers = answers.into_iter();
        assert_eq!(
            answers
                .next()
                .map(|rx| rx.blocking_recv().map(|r| r.status())),
            Some(Ok(StatusCode::OK))
        );
        assert!(
            answers
                .next()
                .map(|rx| rx.blocking_recv())
                .is_some_and(|r| r.is_err()),
            "the cancelled one is not answered"
        );
        assert_eq!(
            answers
                .next()
                .map(|rx| rx.blocking_recv().map(|r| r.status())),
            Some(Ok(StatusCode::OK))
        );
        assert_eq!(rx5.blocking_recv().expect("fifth").status(), 200);
        rt.shutdown_timeout(Duration::from_secs(5));
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_read_that_panics_still_answers_every_waiter() {
        let dir = std::env::temp_dir().join(format!("seda-http-panic-{}", std::process::id()));
        fs::create_dir_all(&dir).expect("dir");
        let rt = Runtime::start().expect("runtime");
        let (io, reads) = capture(&rt);
        let files = files(&dir);
        let (a, ra, _) = lookup("p");
        let (b, rb, _) = lookup("p");
        files.lookup(a, &io);
        files.lookup(b, &io);
        let read = reads.recv_timeout(Duration::from_secs(5)).expect("read");
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            files.read_with(read, |_| panic!("a read that panics"));
        }));
        assert!(outcome.is_err());
        for rx in [ra, rb] {
            assert_eq!(rx.blocking_recv().expect("answered").status(), 500);
        }
        assert!(files.state.lock().pending.is_empty());
        rt.shutdown_timeout(Duration::from_secs(5));
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_file_longer_than_its_size_said_is_not_read_past_the_limit() {
        // Files under /proc report a size of 0 and then give more: the read must stop at the
        // limit, not trust the size.
        let mut files = files(Path::new("/proc/self"));
        files.max_file_bytes = 64;
        let status = fs::metadata(files.root.join("status")).expect("/proc/self/status");
        assert_eq!(status.len(), 0);
        match files.load("status") {
            Err(Failure::TooLarge) => {}
            Ok(e) => panic!("served {} bytes past a limit of 64", e.body.len()),
            Err(f) => panic!("{f:?}"),
        }
    }

    #[test]
    fn a_directory_swapped_for_a_symlink_between_check_and_open_leaks_nothing() {
        let top = std::env::temp_dir().join(format!("seda-http-race-{}", std::process::id()));
        let root = top.join("www");
        fs::create_dir_all(root.join("in")).expect("dir");
        fs::create_dir_all(top.join("out")).expect("dir");
        fs::write(root.join("in/f"), "inside").expect("write");
        fs::write(top.join("out/f"), "OUTSIDE").expect("write");
        std::os::unix::fs::symlink(top.join("out"), root.join("swap")).expect("ln");
        let files = files(&root);
        let stop = std::sync::atomic::AtomicBool::new(false);
        let (served, leaked) = std::thread::scope(|s| {
            s.spawn(|| {
                // Atomically exchange `www/in` (a directory) and `www/swap` (a symlink to a
                // directory outside the root), over and over.
                use rustix::fs::{CWD, RenameFlags, renameat_with};
                let (a, b) = (root.join("in"), root.join("swap"));
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let _ = renameat_with(CWD, &a, CWD, &b, RenameFlags::EXCHANGE);
                }
            });
            let (mut served, mut leaked) = (0, 0);
            for _ in 0..20_000 {
                if let Ok(e) = files.load("in/f") {
                    served += 1;
                    if &e.body[..] == b"OUTSIDE" {
                        leaked += 1;
                    }
                }
            }
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            (served, leaked)
        });
        assert_eq!(leaked, 0, "a file outside the root was read {leaked} times");
        assert!(served > 0, "the file inside was never served");
        let _ = fs::remove_dir_all(&top);
    }
}
