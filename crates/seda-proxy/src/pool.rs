//! The proxy's HTTP/1.1 connections to one upstream: hyper's `client::conn::http1`, pooled here.
//!
//! hyper_util's legacy `Client` did this before, at a cost a proxy pays on every request: its
//! checkout raced a pool wait against a boxed connect future, its request and response futures
//! were boxed and moved through several layers, and a connection went back to its pool from a
//! task spawned per request (memcpy alone was 4,946 instructions of a proxied request's 52,421,
//! callgrind, 2026-12-07). Here a request takes the most recently used idle connection, or
//! opens one, sends, and the connection comes back when the response's body has been read
//! through ([`Lease::release`]).
//!
//! What the legacy client did and this keeps: a request whose connection, taken from the pool,
//! turned out closed before the request was written is sent again on another (a request never
//! goes out twice); connections idle for [`IDLE_TIMEOUT`] are dropped (when the next connection
//! comes back: no timer runs for it, and an upstream's own idle limit, nginx's 75 s, mostly
//! closes them first, which ends their tasks at once); `Host` is set from the
//! upstream when the client sent none; the request line carries the origin form (path and
//! query). A connection is pooled only after a complete response: one given up mid-way (the
//! deadline passed, the client left) is closed, so no stale answer can reach the next request.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use http::header::{self, HeaderValue};
use http::{Request, Response, Uri};
use hyper::body::Incoming;
use hyper::client::conn::http1::{self, SendRequest};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

/// How long a connection may wait in the pool unused (hyper_util's legacy client's default).
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(90);

/// Connections to one upstream, shared by every route that forwards there.
#[derive(Clone)]
pub struct Pool {
    shared: Arc<Shared>,
}

struct Shared {
    /// The host to connect to (an IPv6 address without its brackets) and the port.
    host: String,
    port: u16,
    /// `Host` for requests that came without one.
    host_header: HeaderValue,
    /// Idle connections, the most recently used last.
    idle: Mutex<Vec<Idle>>,
}

struct Idle {
    sender: SendRequest<Incoming>,
    since: Instant,
}

/// Why a request got no response.
#[derive(Debug)]
pub enum PoolError {
    /// The upstream could not be connected to.
    Connect(std::io::Error),
    /// The connection failed before the response's head arrived.
    Http(hyper::Error),
}

impl std::fmt::Display for PoolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PoolError::Connect(e) => write!(f, "cannot connect to the upstream: {e}"),
            PoolError::Http(e) => write!(f, "the upstream connection failed: {e}"),
        }
    }
}

impl std::error::Error for PoolError {}

/// A connection lent to one request until its response has been read.
pub struct Lease {
    sender: SendRequest<Incoming>,
    pool: Pool,
}

impl Lease {
    /// Gives the connection back for the next request: call only once the response's body
    /// has been read to its end. A lease dropped instead closes its connection.
    pub fn release(self) {
        let now = Instant::now();
        let mut idle = self
            .pool
            .shared
            .idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        // The oldest are first: drop those idle too long (their connection tasks then end).
        let stale = idle
            .iter()
            .take_while(|c| now.duration_since(c.since) >= IDLE_TIMEOUT)
            .count();
        idle.drain(..stale);
        idle.push(Idle {
            sender: self.sender,
            since: now,
        });
    }
}

impl Pool {
    /// A pool for `upstream` (`http://host[:port][/base]`); `None` when it names no host.
    pub fn new(upstream: &Uri) -> Option<Pool> {
        let authority = upstream.authority()?;
        let host = authority.host();
        let port = authority.port_u16();
        // As the legacy client wrote it: the port only when it is not the default.
        let host_header = match port {
            Some(p) if p != 80 => HeaderValue::from_str(&format!("{host}:{p}")).ok()?,
            _ => HeaderValue::from_str(host).ok()?,
        };
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        Some(Pool {
            shared: Arc::new(Shared {
                host: bare.to_string(),
                port: port.unwrap_or(80),
                host_header,
                idle: Mutex::new(Vec::new()),
            }),
        })
    }

    /// Sends `request` (its URI in origin form) and waits for the response's head.
    ///
    /// # Errors
    /// The upstream cannot be connected to, or the connection failed before a response head.
    pub async fn send(
        &self,
        mut request: Request<Incoming>,
    ) -> Result<(Response<Incoming>, Lease), PoolError> {
        if !request.headers().contains_key(header::HOST) {
            request
                .headers_mut()
                .insert(header::HOST, self.shared.host_header.clone());
        }
        loop {
            let (mut sender, reused) = match self.take_idle().await {
                Some(sender) => (sender, true),
                None => (self.connect().await?, false),
            };
            match sender.try_send_request(request).await {
                Ok(response) => {
                    let lease = Lease {
                        sender,
                        pool: self.clone(),
                    };
                    return Ok((response, lease));
                }
                Err(mut e) => match e.take_message() {
                    // Not written: the pooled connection had closed meanwhile; try another.
                    Some(unsent) if reused => request = unsent,
                    _ => return Err(PoolError::Http(e.into_error())),
                },
            }
        }
    }

    /// The most recently used idle connection still open and ready for a request.
    async fn take_idle(&self) -> Option<SendRequest<Incoming>> {
        loop {
            let mut sender = {
                let mut idle = self
                    .shared
                    .idle
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner);
                idle.pop()?.sender
            };
            if !sender.is_closed() && sender.ready().await.is_ok() {
                return Some(sender);
            }
        }
    }

    /// A new connection, its task spawned.
    async fn connect(&self) -> Result<SendRequest<Incoming>, PoolError> {
        let stream = TcpStream::connect((self.shared.host.as_str(), self.shared.port))
            .await
            .map_err(PoolError::Connect)?;
        stream.set_nodelay(true).map_err(PoolError::Connect)?;
        // Written flat, as the server writes its responses: a request is mostly a head alone,
        // and queuing it for `writev` cost more than copying it (about 280 instructions a
        // proxied request, bench/proxy-callgrind.sh).
        let (sender, connection) = http1::Builder::new()
            .writev(false)
            .handshake(TokioIo::new(stream))
            .await
            .map_err(PoolError::Http)?;
        tokio::spawn(async move {
            // Its errors reach the request waiting on it, if any; an idle one just ends.
            let _ = connection.await;
        });
        Ok(sender)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_header_has_the_port_only_when_not_the_default() {
        let pool = |u: &str| Pool::new(&u.parse().unwrap()).unwrap();
        assert_eq!(
            pool("http://10.0.0.1:8080/base").shared.host_header,
            "10.0.0.1:8080"
        );
        assert_eq!(pool("http://example:80").shared.host_header, "example");
        let v6 = pool("http://[::1]:9000");
        assert_eq!(v6.shared.host_header, "[::1]:9000");
        assert_eq!((v6.shared.host.as_str(), v6.shared.port), ("::1", 9000));
        assert_eq!(pool("http://example").shared.port, 80);
    }
}
