//! The cache and file-I/O stages' work: a hit answered from the cache, concurrent misses for
//! one file waiting on one read, and the read itself (confined, bounded, answered on panic).

use std::collections::HashMap;
use std::fs;
use std::io::{self, Read};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use http::StatusCode;
use parking_lot::Mutex;
use seda::{RejectReason, Sink};

use super::{Cache, Entry, Lookup, ReadFile, path};
use crate::request::{overloaded, text};

pub(super) struct State {
    pub(super) cache: Cache<Arc<Entry>>,
    /// Files being read, with the requests waiting for them.
    pub(super) pending: HashMap<Arc<str>, Vec<Lookup>>,
}

pub(super) struct Files {
    pub(super) root: PathBuf,
    pub(super) max_file_bytes: u64,
    pub(super) retry_after_s: u32,
    pub(super) serve_hidden: bool,
    pub(super) max_waiters: usize,
    pub(super) state: Mutex<State>,
}

/// What went wrong reading a file, as the answer it gets.
#[derive(Debug, Clone, Copy)]
pub(super) enum Failure {
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

    pub(super) fn answer(self) -> http::Response<crate::body::Body> {
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
    pub(super) fn lookup(&self, ev: Lookup, io: &Sink<ReadFile>) {
        let mut state = self.state.lock();
        if let Some(entry) = state.cache.get(ev.key()) {
            drop(state);
            let r = entry.answer_to(&ev.req.head);
            ev.req.respond(r);
            return;
        }
        if let Some(waiters) = state.pending.get_mut(ev.key()) {
            if waiters.len() >= self.max_waiters {
                // Reap the waiters whose clients left before refusing anyone.
                waiters.retain(|w| !w.req.meta.cancel_token().is_cancelled());
            }
            if waiters.len() >= self.max_waiters {
                drop(state);
                ev.req.respond(overloaded(self.retry_after_s));
                return;
            }
            waiters.push(ev);
            return;
        }
        let key = ev.shared_key();
        let read = ReadFile {
            meta: ev.req.meta.clone(),
            key: key.clone(),
        };
        state.pending.insert(key, vec![ev]);
        drop(state);
        if let Err(rejected) = io.enqueue(read) {
            self.fail_all(&rejected.event.key, None);
        }
    }

    /// Answers every request waiting on `key` with the failure (None: overloaded).
    pub(super) fn fail_all(&self, key: &str, failure: Option<Failure>) {
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
    pub(super) fn read_dropped(&self, ev: ReadFile, reason: RejectReason) {
        if reason == RejectReason::Closed {
            self.fail_all(&ev.key, None);
            return;
        }
        let mut state = self.state.lock();
        let Some(waiters) = state.pending.get_mut(&ev.key) else {
            return;
        };
        waiters.retain(|w| !w.req.meta.cancel_token().is_cancelled());
        let Some(meta) = waiters.first().map(|w| w.req.meta.clone()) else {
            state.pending.remove(&ev.key);
            return;
        };
        drop(state);
        self.read(ReadFile { meta, key: ev.key });
    }

    /// File-I/O stage: one blocking read, then every waiter is answered.
    pub(super) fn read(&self, ev: ReadFile) {
        self.read_with(ev, |key| self.load(key));
    }

    /// `read` with the loading step given, so a test can make it fail or panic.
    pub(super) fn read_with(
        &self,
        ev: ReadFile,
        load: impl FnOnce(&str) -> Result<Entry, Failure>,
    ) {
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
            if !w.req.meta.cancel_token().is_cancelled() {
                let r = entry.answer_to(&w.req.head);
                w.req.respond(r);
            }
        }
    }

    /// Reads the file `key` names, refusing anything that resolves outside the root (or, unless
    /// allowed, to a hidden name). The file is opened first and the opened file is checked (its
    /// real path and type), so a symlink swapped in between a check and the open cannot lead
    /// outside the root.
    pub(super) fn load(&self, key: &str) -> Result<Entry, Failure> {
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
    pub(super) fn open(&self, path: &Path) -> Result<(fs::File, PathBuf), Failure> {
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
pub(super) fn read_bounded(
    file: &mut impl Read,
    size: u64,
    limit: u64,
) -> Result<Vec<u8>, Failure> {
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
