//! What users ask for: the [`Workload`] and [`Session`] traits and the built-in workloads.
//!
//! A [`Workload`] is shared by the whole run and makes one [`Session`] per user (closed model),
//! per session (partly-open model) or one for the whole run (open model). A session is stateful
//! and sees the previous reply before it picks the next request, which is the hook a Markov user
//! model (the e-mail user of Arashi: log in, list, read, ...) plugs into: it may ask for up to
//! [`Session::capture_bytes`] of each reply's body to find, say, message ids in a listing.

mod specweb;
mod synthetic;
mod urls;

pub use specweb::SpecWeb;
pub use synthetic::{ServiceTime, Synthetic};
pub use urls::UrlList;

use std::sync::Arc;
use std::time::Duration;

/// One request to send. The host comes from the run's target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// `GET`, `POST`, ...
    pub method: &'static str,
    /// Path and query, starting with `/`.
    pub path: Arc<str>,
    /// Extra headers (`Host`, `Content-Length` and `Connection` are written by the client).
    pub headers: Vec<(String, String)>,
    /// The request body (empty for `GET`).
    pub body: Vec<u8>,
    /// Index into [`Workload::classes`], for the per-class table.
    pub class: usize,
}

impl Request {
    /// A `GET` of `path` counted under class `class`.
    pub fn get(path: impl Into<Arc<str>>, class: usize) -> Request {
        Request {
            method: "GET",
            path: path.into(),
            headers: Vec::new(),
            body: Vec::new(),
            class,
        }
    }
}

/// What a session sees of the previous reply.
#[derive(Debug, Clone, Copy)]
pub struct Reply<'a> {
    /// The HTTP status.
    pub status: u16,
    /// Body length in bytes.
    pub body_bytes: u64,
    /// The first [`Session::capture_bytes`] bytes of the body (empty by default).
    pub body: &'a [u8],
    /// The header fields, if [`Session::capture_headers`] (empty by default).
    pub headers: &'a [(String, String)],
}

impl<'a> Reply<'a> {
    /// A reply whose body was captured whole (`body_bytes` is its length), as a test or a
    /// session's own check builds one.
    pub fn whole(status: u16, body: &'a [u8], headers: &'a [(String, String)]) -> Reply<'a> {
        Reply {
            status,
            body_bytes: body.len() as u64,
            body,
            headers,
        }
    }

    /// The first header field named `name` (case-insensitive), if headers were captured.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// A shared description of what users ask for.
pub trait Workload: Send + Sync {
    /// Names of the request classes (URL types) reported in the per-class table.
    fn classes(&self) -> Vec<String>;
    /// A new session; `seed` makes it reproducible.
    fn session(&self, seed: u64) -> Box<dyn Session>;
}

/// One user's stateful stream of requests.
pub trait Session {
    /// The next request, given the reply to the previous one (`None` at the start, after a
    /// restart, and always in the open model, where requests are independent).
    fn next_request(&mut self, last: Option<&Reply<'_>>) -> Request;

    /// Called after a rejection and its backoff, before the next request is asked for with no
    /// reply (the e-mail user keeps its session and retries; a stateless workload does nothing).
    fn restart(&mut self) {}

    /// How many leading body bytes of each reply the session wants to see (default none).
    fn capture_bytes(&self) -> usize {
        0
    }

    /// Whether the session wants the replies' header fields, such as `Set-Cookie` (default no).
    fn capture_headers(&self) -> bool {
        false
    }

    /// The think time before the next request, overriding the model's (default: the model's).
    /// Called after each reply; a Markov user model can think differently in each state.
    fn think_time(&mut self) -> Option<Duration> {
        None
    }
}

/// Builds a cumulative distribution from weights, for sampling by binary search.
pub(crate) fn cumulative(weights: impl IntoIterator<Item = f64>) -> Vec<f64> {
    let mut acc = 0.0;
    let mut cdf: Vec<f64> = weights
        .into_iter()
        .map(|w| {
            acc += w;
            acc
        })
        .collect();
    if acc > 0.0 {
        cdf.iter_mut().for_each(|c| *c /= acc);
    }
    cdf
}

/// Samples an index from a cumulative distribution built by [`cumulative`].
pub(crate) fn sample(cdf: &[f64], u: f64) -> usize {
    cdf.partition_point(|&c| c <= u)
        .min(cdf.len().saturating_sub(1))
}
