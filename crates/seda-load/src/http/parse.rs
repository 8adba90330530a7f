//! An incremental HTTP/1.1 response parser: the status line and headers, then a body framed
//! by length, by chunks or by the server's close, within the size limits.

use super::{Capture, HttpError, Limits, MAX_HEADERS, Response};

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
pub(super) struct Parser {
    limits: Limits,
    head: Option<(u16, bool)>,
    framing: Framing,
    body_bytes: u64,
    trailer_bytes: usize,
}

impl Parser {
    pub(super) fn new(limits: Limits) -> Parser {
        Parser {
            limits,
            head: None,
            framing: Framing::UntilClose,
            body_bytes: 0,
            trailer_bytes: 0,
        }
    }

    /// The server closed its end.
    pub(super) fn eof(&mut self) -> Result<Option<Response>, HttpError> {
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
    pub(super) fn feed(
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
