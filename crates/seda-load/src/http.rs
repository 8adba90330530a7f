//! A small HTTP/1.1 client connection on tokio: one request at a time (no pipelining),
//! keep-alive, bounded header and body sizes, bodies discarded as they arrive.
//!
//! Reads go through one scratch buffer per thread (`readable()` then `try_read()`, so no buffer
//! is held across an `.await`): an idle connection owns no buffer at all, which is what lets one
//! process hold 10,000 of them in a few tens of megabytes.

use std::cell::RefCell;
use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use crate::workload::Request;

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

/// What went wrong with one exchange. The connection is unusable afterwards.
#[derive(Debug)]
pub(crate) enum HttpError {
    Connect(io::Error),
    ConnectTimeout,
    Io(io::Error),
    /// The server closed the connection before the response was complete.
    Closed,
    /// A reused keep-alive connection was closed or reset by the server before any byte of the
    /// response arrived (it timed the idle connection out); safe to retry on a new connection.
    Stale,
    Protocol(String),
}

impl HttpError {
    /// A short name for the error table.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            HttpError::Connect(_) => "connect",
            HttpError::ConnectTimeout => "connect-timeout",
            HttpError::Io(_) => "io",
            HttpError::Closed => "closed",
            HttpError::Stale => "stale",
            HttpError::Protocol(_) => "protocol",
        }
    }
}

impl fmt::Display for HttpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HttpError::Connect(e) => write!(f, "connect failed: {e}"),
            HttpError::ConnectTimeout => write!(f, "connect timed out"),
            HttpError::Io(e) => write!(f, "i/o error: {e}"),
            HttpError::Closed => write!(f, "server closed the connection mid-response"),
            HttpError::Stale => write!(f, "server closed an idle keep-alive connection"),
            HttpError::Protocol(s) => write!(f, "bad response: {s}"),
        }
    }
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
    /// ([`server_cpu_us`]), read whatever `headers_on` says.
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

/// The `dur` (milliseconds) of the metric named `cpu` in a `Server-Timing` header value (W3C
/// Server Timing: `cpu;dur=2.4, db;dur=1`), in microseconds: what the server says the
/// request cost it, so that goodput can be priced in the server's work request by request.
/// `None` where there is no such metric or its duration is not a finite, non-negative number.
pub(crate) fn server_cpu_us(value: &[u8]) -> Option<u64> {
    let value = std::str::from_utf8(value).ok()?;
    value.split(',').find_map(|metric| {
        let mut parts = metric.split(';');
        if !parts.next()?.trim().eq_ignore_ascii_case("cpu") {
            return None;
        }
        parts.find_map(|param| {
            let (name, v) = param.split_once('=')?;
            if !name.trim().eq_ignore_ascii_case("dur") {
                return None;
            }
            let ms: f64 = v.trim().trim_matches('"').parse().ok()?;
            (ms.is_finite() && ms >= 0.0).then(|| (ms * 1e3).round().min(u64::MAX as f64) as u64)
        })
    })
}

/// Appends the encoding of `req` to `out`.
pub(crate) fn encode_request(out: &mut Vec<u8>, req: &Request, host: &str, close: bool) {
    out.extend_from_slice(req.method.as_bytes());
    out.push(b' ');
    out.extend_from_slice(req.path.as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\nHost: ");
    out.extend_from_slice(host.as_bytes());
    out.extend_from_slice(b"\r\n");
    for (name, value) in &req.headers {
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    if !req.body.is_empty() || req.method != "GET" {
        out.extend_from_slice(format!("Content-Length: {}\r\n", req.body.len()).as_bytes());
    }
    if close {
        out.extend_from_slice(b"Connection: close\r\n");
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(&req.body);
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Framing {
    Length(u64),
    Chunked(Chunk),
    UntilClose,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Chunk {
    Size {
        value: u64,
        digits: u8,
        in_ext: bool,
    },
    SizeLf {
        value: u64,
    },
    Data(u64),
    DataCr,
    DataLf,
    TrailerStart,
    TrailerLine,
    EndLf,
    Done,
}

/// An incremental response parser.
struct Parser {
    limits: Limits,
    head: Option<(u16, bool)>,
    framing: Framing,
    body_bytes: u64,
    trailer_bytes: usize,
}

impl Parser {
    fn new(limits: Limits) -> Parser {
        Parser {
            limits,
            head: None,
            framing: Framing::UntilClose,
            body_bytes: 0,
            trailer_bytes: 0,
        }
    }

    /// The server closed its end.
    fn eof(&mut self) -> Result<Option<Response>, HttpError> {
        match (self.head, self.framing) {
            (Some((status, _)), Framing::UntilClose) => Ok(Some(Response {
                status,
                body_bytes: self.body_bytes,
                keep_alive: false,
            })),
            _ => Err(HttpError::Closed),
        }
    }

    /// Feeds bytes; returns the response when it is complete.
    fn feed(
        &mut self,
        data: &[u8],
        pending: &mut Vec<u8>,
        capture: &mut Capture,
    ) -> Result<Option<Response>, HttpError> {
        if self.head.is_some() {
            return self.body(data, capture);
        }
        let owned;
        let buf: &[u8] = if pending.is_empty() {
            data
        } else {
            pending.extend_from_slice(data);
            owned = std::mem::take(pending);
            &owned
        };
        let mut start = 0;
        loop {
            match self.parse_head(&buf[start..], capture)? {
                None => {
                    let rest = &buf[start..];
                    if rest.len() > self.limits.max_header_bytes {
                        return Err(HttpError::Protocol(format!(
                            "response head longer than {} bytes",
                            self.limits.max_header_bytes
                        )));
                    }
                    pending.clear();
                    pending.extend_from_slice(rest);
                    return Ok(None);
                }
                Some((len, true)) => start += len, // an interim 1xx response: skip it
                Some((len, false)) => return self.body(&buf[start + len..], capture),
            }
        }
    }

    /// Parses a response head; `Some((len, interim))` when complete.
    fn parse_head(
        &mut self,
        buf: &[u8],
        capture: &mut Capture,
    ) -> Result<Option<(usize, bool)>, HttpError> {
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut resp = httparse::Response::new(&mut headers);
        let len = match resp.parse(buf) {
            Ok(httparse::Status::Complete(n)) => n,
            Ok(httparse::Status::Partial) => return Ok(None),
            Err(e) => {
                return Err(HttpError::Protocol(format!(
                    "unparsable response head: {e}"
                )));
            }
        };
        let status = resp.code.unwrap_or(0);
        if (100..200).contains(&status) && status != 101 {
            return Ok(Some((len, true)));
        }
        let http11 = resp.version == Some(1);
        let mut keep_alive = http11;
        let mut length: Option<u64> = None;
        let mut chunked = false;
        for h in resp.headers.iter() {
            if capture.headers_on {
                let value = String::from_utf8_lossy(h.value).into_owned();
                capture.headers.push((h.name.to_string(), value));
            }
            if h.name.eq_ignore_ascii_case("content-length") {
                let v = std::str::from_utf8(h.value)
                    .ok()
                    .and_then(|s| s.trim().parse::<u64>().ok())
                    .ok_or_else(|| HttpError::Protocol("invalid Content-Length".into()))?;
                if length.is_some_and(|l| l != v) {
                    return Err(HttpError::Protocol(
                        "conflicting Content-Length headers".into(),
                    ));
                }
                length = Some(v);
            } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
                chunked = h
                    .value
                    .rsplit(|&b| b == b',')
                    .next()
                    .is_some_and(|last| last.trim_ascii().eq_ignore_ascii_case(b"chunked"));
            } else if h.name.eq_ignore_ascii_case("retry-after") {
                capture.retry_after_s = std::str::from_utf8(h.value)
                    .ok()
                    .and_then(|v| v.trim().parse().ok());
            } else if h.name.eq_ignore_ascii_case("server-timing") {
                capture.server_cpu_us = capture.server_cpu_us.or_else(|| server_cpu_us(h.value));
            } else if h.name.eq_ignore_ascii_case("connection") {
                for token in h.value.split(|&b| b == b',') {
                    let token = token.trim_ascii();
                    if token.eq_ignore_ascii_case(b"close") {
                        keep_alive = false;
                    } else if token.eq_ignore_ascii_case(b"keep-alive") {
                        keep_alive = true;
                    }
                }
            }
        }
        self.framing = if status == 204 || status == 304 {
            Framing::Length(0)
        } else if chunked {
            Framing::Chunked(Chunk::Size {
                value: 0,
                digits: 0,
                in_ext: false,
            })
        } else if let Some(l) = length {
            if l > self.limits.max_body_bytes {
                return Err(too_large(self.limits.max_body_bytes));
            }
            Framing::Length(l)
        } else {
            keep_alive = false;
            Framing::UntilClose
        };
        self.head = Some((status, keep_alive));
        Ok(Some((len, false)))
    }

    fn take_body(&mut self, bytes: &[u8], capture: &mut Capture) -> Result<(), HttpError> {
        self.body_bytes += bytes.len() as u64;
        if self.body_bytes > self.limits.max_body_bytes {
            return Err(too_large(self.limits.max_body_bytes));
        }
        let room = capture.body_max.saturating_sub(capture.body.len());
        if room > 0 {
            capture
                .body
                .extend_from_slice(&bytes[..room.min(bytes.len())]);
        }
        Ok(())
    }

    fn done(&self) -> Option<Response> {
        self.head.map(|(status, keep_alive)| Response {
            status,
            body_bytes: self.body_bytes,
            keep_alive,
        })
    }

    fn body(&mut self, data: &[u8], capture: &mut Capture) -> Result<Option<Response>, HttpError> {
        match self.framing {
            Framing::UntilClose => {
                self.take_body(data, capture)?;
                Ok(None)
            }
            Framing::Length(rem) => {
                if data.len() as u64 > rem {
                    return Err(extra_bytes());
                }
                self.take_body(data, capture)?;
                let rem = rem - data.len() as u64;
                self.framing = Framing::Length(rem);
                Ok(if rem == 0 { self.done() } else { None })
            }
            Framing::Chunked(state) => {
                let state = self.chunked(state, data, capture)?;
                self.framing = Framing::Chunked(state);
                Ok(if state == Chunk::Done {
                    self.done()
                } else {
                    None
                })
            }
        }
    }

    fn chunked(
        &mut self,
        mut st: Chunk,
        mut data: &[u8],
        capture: &mut Capture,
    ) -> Result<Chunk, HttpError> {
        let bad = |what: &str| HttpError::Protocol(format!("bad chunked encoding: {what}"));
        while let Some((&b, rest)) = data.split_first() {
            if let Chunk::Data(rem) = st {
                let take = (rem.min(data.len() as u64)) as usize;
                self.take_body(&data[..take], capture)?;
                data = &data[take..];
                st = if rem == take as u64 {
                    Chunk::DataCr
                } else {
                    Chunk::Data(rem - take as u64)
                };
                continue;
            }
            data = rest;
            st = match st {
                Chunk::Size {
                    value,
                    digits,
                    in_ext,
                } => match b {
                    b'\r' if digits > 0 => Chunk::SizeLf { value },
                    b'\n' if digits > 0 => after_size(value),
                    _ if in_ext => Chunk::Size {
                        value,
                        digits,
                        in_ext,
                    },
                    b';' | b' ' | b'\t' if digits > 0 => Chunk::Size {
                        value,
                        digits,
                        in_ext: true,
                    },
                    _ => {
                        let d = (b as char)
                            .to_digit(16)
                            .ok_or_else(|| bad("size is not hex"))?;
                        if digits >= 15 {
                            return Err(bad("chunk size too large"));
                        }
                        Chunk::Size {
                            value: value * 16 + u64::from(d),
                            digits: digits + 1,
                            in_ext,
                        }
                    }
                },
                Chunk::SizeLf { value } if b == b'\n' => after_size(value),
                Chunk::DataCr if b == b'\r' => Chunk::DataLf,
                Chunk::DataCr | Chunk::DataLf if b == b'\n' => Chunk::Size {
                    value: 0,
                    digits: 0,
                    in_ext: false,
                },
                Chunk::TrailerStart if b == b'\r' => Chunk::EndLf,
                Chunk::TrailerStart if b == b'\n' => Chunk::Done,
                Chunk::TrailerStart | Chunk::TrailerLine => {
                    self.trailer_bytes += 1;
                    if self.trailer_bytes > self.limits.max_header_bytes {
                        return Err(bad("trailer too long"));
                    }
                    if b == b'\n' {
                        Chunk::TrailerStart
                    } else {
                        Chunk::TrailerLine
                    }
                }
                Chunk::EndLf if b == b'\n' => Chunk::Done,
                Chunk::Done => return Err(extra_bytes()),
                _ => return Err(bad("missing CRLF")),
            };
        }
        Ok(st)
    }
}

fn after_size(value: u64) -> Chunk {
    if value == 0 {
        Chunk::TrailerStart
    } else {
        Chunk::Data(value)
    }
}

fn too_large(max: u64) -> HttpError {
    HttpError::Protocol(format!(
        "response body larger than the limit of {max} bytes"
    ))
}

fn extra_bytes() -> HttpError {
    HttpError::Protocol("bytes after the end of the response (the client does not pipeline)".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: Limits = Limits {
        max_header_bytes: 1024,
        max_body_bytes: 1 << 20,
    };

    /// Feeds `input` in pieces of `step` bytes; returns the response and the captured body.
    fn parse_in_steps(input: &[u8], step: usize) -> Result<Option<(Response, Vec<u8>)>, HttpError> {
        let mut p = Parser::new(LIMITS);
        let mut pending = Vec::new();
        let mut capture = Capture {
            body_max: 1 << 20,
            headers_on: true,
            ..Capture::default()
        };
        for piece in input.chunks(step) {
            if let Some(r) = p.feed(piece, &mut pending, &mut capture)? {
                return Ok(Some((r, capture.body)));
            }
        }
        Ok(p.eof()?.map(|r| (r, capture.body)))
    }

    #[test]
    fn content_length_in_any_split() {
        let input = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
        for step in 1..input.len() {
            let (r, body) = parse_in_steps(input, step).unwrap().unwrap();
            assert_eq!(
                r,
                Response {
                    status: 200,
                    body_bytes: 5,
                    keep_alive: true
                }
            );
            assert_eq!(body, b"hello");
        }
    }

    #[test]
    fn chunked_with_extensions_and_trailers_in_any_split() {
        let input = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\
                      5;x=y\r\nhello\r\n1\r\n!\r\n0\r\nX-T: 1\r\n\r\n";
        for step in 1..input.len() {
            let (r, body) = parse_in_steps(input, step).unwrap().unwrap();
            assert_eq!(r.body_bytes, 6);
            assert_eq!(body, b"hello!");
        }
    }

    #[test]
    fn interim_responses_are_skipped_and_close_is_honoured() {
        let input = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 503 Busy\r\nConnection: close\r\nContent-Length: 0\r\n\r\n";
        let (r, _) = parse_in_steps(input, 7).unwrap().unwrap();
        assert_eq!(
            r,
            Response {
                status: 503,
                body_bytes: 0,
                keep_alive: false
            }
        );
    }

    #[test]
    fn body_until_close() {
        let input = b"HTTP/1.0 200 OK\r\n\r\nabc";
        let (r, body) = parse_in_steps(input, 4).unwrap().unwrap();
        assert_eq!(
            r,
            Response {
                status: 200,
                body_bytes: 3,
                keep_alive: false
            }
        );
        assert_eq!(body, b"abc");
    }

    #[test]
    fn bytes_after_a_complete_response_are_an_error_only_in_the_same_read() {
        // Found by fuzzing (fuzz/regressions/load_response-extra-bytes-after-304): LF-only
        // line ends, a 304 (no body), then bytes the client did not ask for.
        let input = b"HTTP/1.0 304\nvv:vvv\n\r\n\nvvvvvv";
        assert!(parse_in_steps(input, input.len()).is_err());
        let (r, body) = parse_in_steps(input, 1)
            .expect("a response")
            .expect("complete");
        assert_eq!((r.status, r.body_bytes, body.len()), (304, 0, 0));
    }

    #[test]
    fn garbage_and_oversize_are_errors_not_panics() {
        let cases: &[&[u8]] = &[
            b"garbage garbage\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: 99999999\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nab",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffffffffff\r\n",
        ];
        for case in cases {
            assert!(
                parse_in_steps(case, 1000).is_err(),
                "{:?}",
                String::from_utf8_lossy(case)
            );
        }
        let long = [b"HTTP/1.1 200 OK\r\nX: ".as_slice(), &[b'a'; 2000]].concat();
        assert!(parse_in_steps(&long, 100).is_err());
        // Truncated: the server closed early.
        assert!(matches!(
            parse_in_steps(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nab", 5),
            Err(HttpError::Closed)
        ));
    }

    #[test]
    fn reads_the_cpu_metric_of_server_timing() {
        assert_eq!(server_cpu_us(b"cpu;dur=2.4"), Some(2_400));
        assert_eq!(
            server_cpu_us(b"db;dur=9, CPU ; desc=\"x\" ; dur=\"0.5\""),
            Some(500)
        );
        assert_eq!(server_cpu_us(b"db;dur=9"), None);
        assert_eq!(server_cpu_us(b"cpu"), None);
        assert_eq!(server_cpu_us(b"cpu;dur=-1"), None);
        assert_eq!(server_cpu_us(b"cpu;dur=NaN"), None);
        assert_eq!(server_cpu_us(b"cpu;dur=1e400"), None);
        assert_eq!(server_cpu_us(&[0xff, 0xfe]), None);
    }

    #[test]
    fn encodes_requests() {
        let mut out = Vec::new();
        encode_request(&mut out, &Request::get("/x", 0), "h:1", true);
        assert_eq!(
            out,
            b"GET /x HTTP/1.1\r\nHost: h:1\r\nConnection: close\r\n\r\n"
        );
    }
}
