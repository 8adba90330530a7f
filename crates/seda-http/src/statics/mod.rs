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
mod files;
pub mod path;
pub mod respond;
#[cfg(test)]
mod tests;

use std::borrow::Cow;
use std::collections::HashMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use http::header::{ALLOW, HeaderValue};
use http::{Method, StatusCode};
use parking_lot::Mutex;
use seda::{Event, Meta, Runtime, Sink, Stage, handler};

use crate::config::StaticConfig;
use crate::request::{HttpRequest, overloaded, text};
pub use cache::{Cache, CacheStats};
use files::{Failure, Files, State};
pub use respond::Entry;

/// Names of the service's stages (the keys of `[stages.*]` in a configuration file).
pub const STAGES: [&str; 3] = ["route", "cache", "file_io"];

/// A request whose path was confined to the root, on its way to the cache.
#[derive(Debug)]
pub struct Lookup {
    req: HttpRequest,
    key: Key,
}

/// The cache key of a [`Lookup`]: the confined path.
#[derive(Debug)]
enum Key {
    /// The request's URI path without its leading `/`, which most paths already are once
    /// confined: read from the request rather than copied into a new string per request.
    Path,
    /// A path that decoding or clean-up changed.
    Owned(Arc<str>),
}

impl Lookup {
    /// The confined path, the cache key.
    fn key(&self) -> &str {
        match &self.key {
            Key::Path => self.req.head.uri.path().get(1..).unwrap_or(""),
            Key::Owned(k) => k,
        }
    }

    /// The key as a shared string, for the pending reads (a miss: copied once per read).
    fn shared_key(&self) -> Arc<str> {
        match &self.key {
            Key::Path => Arc::from(self.key()),
            Key::Owned(k) => k.clone(),
        }
    }
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
    let raw = req.head.uri.path();
    let key = match path::confine(raw) {
        Ok(Cow::Borrowed(k)) if raw.get(1..) == Some(k) => Key::Path,
        Ok(k) => Key::Owned(Arc::from(&*k)),
        Err(_) => {
            req.respond(text(
                StatusCode::BAD_REQUEST,
                "400 Bad Request: invalid path\n",
            ));
            return;
        }
    };
    let lookup = Lookup { req, key };
    if !serve_hidden && path::is_hidden(lookup.key()) {
        // 404, not 403: a prober learns nothing, not even that `/.git/config` exists.
        lookup.req.respond(Failure::NotFound.answer());
        return;
    }
    if let Err(rejected) = cache.enqueue(lookup) {
        rejected.event.req.respond(overloaded(retry_after_s));
    }
}
