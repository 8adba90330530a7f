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
            let retry = config.retry_after_s;
            rt.stage(Stage::builder("route").inline().handler(handler::each(
                move |req: HttpRequest, _cx| {
                    route(req, &cache_sink, retry);
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
fn route(req: HttpRequest, cache: &Sink<Lookup>, retry_after_s: u32) {
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
        let result = self.load(&ev.key);
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

    /// Reads the file `key` names, refusing anything that resolves outside the root.
    fn load(&self, key: &str) -> Result<Entry, Failure> {
        let mut path = self.resolve(&self.root.join(key))?;
        let mut kind = fs::metadata(&path).map_err(|e| Failure::of(&e))?;
        if kind.is_dir() {
            path = self.resolve(&path.join("index.html"))?;
            kind = fs::metadata(&path).map_err(|e| Failure::of(&e))?;
        }
        // Checked before opening: opening a FIFO or a device could block the worker.
        if !kind.is_file() {
            return Err(Failure::NotFound);
        }
        let mut file = fs::File::open(&path).map_err(|e| Failure::of(&e))?;
        let meta = file.metadata().map_err(|e| Failure::of(&e))?;
        if !meta.is_file() {
            return Err(Failure::NotFound);
        }
        if meta.len() > self.max_file_bytes {
            return Err(Failure::TooLarge);
        }
        let mut buf = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
        file.read_to_end(&mut buf).map_err(|e| Failure::of(&e))?;
        let modified = meta.modified().unwrap_or(std::time::UNIX_EPOCH);
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        Ok(Entry::new(Bytes::from(buf), name, modified))
    }

    /// Resolves symlinks; a path that ends up outside the root does not exist for us.
    fn resolve(&self, path: &Path) -> Result<PathBuf, Failure> {
        let real = fs::canonicalize(path).map_err(|e| Failure::of(&e))?;
        if real.starts_with(&self.root) {
            Ok(real)
        } else {
            Err(Failure::NotFound)
        }
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
}
