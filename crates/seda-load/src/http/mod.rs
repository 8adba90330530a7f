//! A small HTTP/1.1 client connection on tokio: one request at a time (no pipelining),
//! keep-alive, bounded header and body sizes, bodies discarded as they arrive.
//!
//! Reads go through one scratch buffer per thread (`readable()` then `try_read()`, so no buffer
//! is held across an `.await`): an idle connection owns no buffer at all, which is what lets one
//! process hold 10,000 of them in a few tens of megabytes.

mod error;
mod parse;
mod request;
#[cfg(test)]
mod tests;

use std::cell::RefCell;
use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use parse::Parser;

pub(crate) use error::HttpError;
pub(crate) use request::encode_request;

const SCRATCH_BYTES: usize = 64 * 1024;
const MAX_HEADERS: usize = 64;

thread_local! {
    static SCRATCH: RefCell<Vec<u8>> = RefCell::new(vec![0; SCRATCH_BYTES]);
}

/// Size limits on what a server may send.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub max_header_bytes: usize,
    pub max_body_bytes: u64,
}

/// What of a response a session wants to see: the first `body_max` body bytes and, if
/// `headers_on`, the header fields.
#[derive(Debug, Default)]
pub(crate) struct Capture {
    pub body_max: usize,
    pub body: Vec<u8>,
    pub headers_on: bool,
    pub headers: Vec<(String, String)>,
    /// The response's `Retry-After` in delay-seconds, read whatever `headers_on` says (an
    /// HTTP-date is not read).
    pub retry_after_s: Option<u32>,
    /// The server's CPU time for the request, from a `Server-Timing` metric named `cpu`
    /// ([`server_cpu_us`](parse::server_cpu_us)), read whatever `headers_on` says.
    pub server_cpu_us: Option<u64>,
}

impl Capture {
    fn clear(&mut self) {
        self.body.clear();
        self.headers.clear();
        self.retry_after_s = None;
        self.server_cpu_us = None;
    }
}

/// A complete response: its status, how many body bytes it had, and whether the connection may
/// be reused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Response {
    pub status: u16,
    pub body_bytes: u64,
    pub keep_alive: bool,
}

/// One client connection.
pub(crate) struct Conn {
    stream: TcpStream,
    /// Header bytes of a response whose head arrived in several reads (empty otherwise).
    pending: Vec<u8>,
    /// Requests sent on this connection.
    pub requests: u32,
}

impl Conn {
    pub(crate) async fn connect(addr: SocketAddr, timeout: Duration) -> Result<Conn, HttpError> {
        let stream = match tokio::time::timeout(timeout, TcpStream::connect(addr)).await {
            Err(_) => return Err(HttpError::ConnectTimeout),
            Ok(Err(e)) => return Err(HttpError::Connect(e)),
            Ok(Ok(s)) => s,
        };
        // Latency of small requests matters more than packet count here.
        stream.set_nodelay(true).map_err(HttpError::Connect)?;
        Ok(Conn {
            stream,
            pending: Vec::new(),
            requests: 0,
        })
    }

    /// Sends `request` (already encoded) and reads the whole response, keeping what `capture`
    /// asks for.
    pub(crate) async fn exchange(
        &mut self,
        request: &[u8],
        capture: &mut Capture,
        limits: Limits,
    ) -> Result<Response, HttpError> {
        self.requests += 1;
        let reused = self.requests > 1;
        let stale = |e: io::Error| match e.kind() {
            io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionReset if reused => {
                HttpError::Stale
            }
            _ => HttpError::Io(e),
        };
        self.stream.write_all(request).await.map_err(stale)?;
        let mut parser = Parser::new(limits);
        capture.clear();
        let mut received = false;
        self.pending.clear();
        loop {
            self.stream.readable().await.map_err(HttpError::Io)?;
            let stream = &self.stream;
            let pending = &mut self.pending;
            let step = SCRATCH.with(|cell| {
                let mut buf = cell.borrow_mut();
                match stream.try_read(&mut buf[..]) {
                    Ok(0) if !received && reused => Err(HttpError::Stale),
                    Ok(0) => parser.eof(),
                    Ok(n) => {
                        received = true;
                        parser.feed(&buf[..n], pending, capture)
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(None),
                    Err(e) if !received => Err(stale(e)),
                    Err(e) => Err(HttpError::Io(e)),
                }
            })?;
            if let Some(resp) = step {
                if self.pending.capacity() > 4096 {
                    self.pending = Vec::new();
                }
                return Ok(resp);
            }
        }
    }
}

/// Parses `input` as one HTTP/1.1 response fed in pieces of `step` bytes (then the server's
/// close), with the limits the load generator uses: the status and body length, or `None` for
/// a refused response. For the fuzz targets (feature `fuzzing`).
#[cfg(feature = "fuzzing")]
pub fn parse_response_in_pieces(input: &[u8], step: usize) -> Option<(u16, u64)> {
    let mut parser = Parser::new(Limits {
        max_header_bytes: 16 * 1024,
        max_body_bytes: 1 << 20,
    });
    let (mut pending, mut capture) = (Vec::new(), Capture::default());
    capture.body_max = 1 << 10;
    capture.headers_on = true;
    for piece in input.chunks(step.max(1)) {
        match parser.feed(piece, &mut pending, &mut capture) {
            Ok(Some(r)) => return Some((r.status, r.body_bytes)),
            Ok(None) => {}
            Err(_) => return None,
        }
    }
    parser
        .eof()
        .ok()
        .flatten()
        .map(|r| (r.status, r.body_bytes))
}
