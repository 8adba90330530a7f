//! Writing a response head: status line, the response's headers, `Date` from a per-second
//! cache, `Content-Length` when the response has none, and what keep-alive needs.

use std::cell::RefCell;
use std::time::{SystemTime, UNIX_EPOCH};

use http::header::{CONNECTION, CONTENT_LENGTH, DATE, HeaderMap};
use http::{Response, StatusCode, Version};

/// How the head is written for the request it answers.
#[derive(Debug, Clone, Copy)]
pub struct Framing {
    /// The request's version: an HTTP/1.0 client gets an HTTP/1.0 status line.
    pub version: Version,
    /// The connection stays open after this response.
    pub keep_alive: bool,
    /// The length of the body the response would carry (for HEAD, the body a GET would get).
    pub body_len: usize,
}

/// Whether a response with `status` never carries a body (nor a `Content-Length` we add).
pub fn bodiless(status: StatusCode) -> bool {
    status.is_informational()
        || status == StatusCode::NO_CONTENT
        || status == StatusCode::NOT_MODIFIED
}

/// Whether the response itself asks to close the connection (`Connection: close`).
pub fn says_close<B>(response: &Response<B>) -> bool {
    response
        .headers()
        .get_all(CONNECTION)
        .iter()
        .any(|v| v.as_bytes().eq_ignore_ascii_case(b"close"))
}

/// Which of the headers the front end may add a response already has.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Seen {
    length: bool,
    date: bool,
    connection: bool,
}

/// Appends the head of `response` to `out`.
pub fn render_head<B>(out: &mut Vec<u8>, response: &Response<B>, framing: Framing) {
    let status = response.status();
    status_line(out, framing.version, status);
    let seen = header_lines(out, response.headers());
    closing(out, status, seen, framing);
}

/// The status line for `version` (an HTTP/1.0 client gets an HTTP/1.0 one).
pub(super) fn status_line(out: &mut Vec<u8>, version: Version, status: StatusCode) {
    out.extend_from_slice(match version {
        Version::HTTP_10 => b"HTTP/1.0 ",
        _ => b"HTTP/1.1 ",
    });
    out.extend_from_slice(status.as_str().as_bytes());
    out.push(b' ');
    out.extend_from_slice(status.canonical_reason().unwrap_or("").as_bytes());
    out.extend_from_slice(b"\r\n");
}

/// One `name: value` line per header, in the map's order.
pub(super) fn header_lines(out: &mut Vec<u8>, headers: &HeaderMap) -> Seen {
    // Which of the headers we may add the response already has, noted on the way through
    // (a comparison of known names) rather than by three lookups, each hashing its name.
    let mut seen = Seen::default();
    for (name, value) in headers {
        seen.length |= name == CONTENT_LENGTH;
        seen.date |= name == DATE;
        seen.connection |= name == CONNECTION;
        out.extend_from_slice(name.as_str().as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    seen
}

/// What the front end adds after the response's own headers (`Content-Length`, `Date`,
/// keep-alive as the version needs), and the blank line that ends the head.
pub(super) fn closing(out: &mut Vec<u8>, status: StatusCode, seen: Seen, framing: Framing) {
    if !bodiless(status) && !seen.length {
        out.extend_from_slice(b"content-length: ");
        push_decimal(out, framing.body_len);
        out.extend_from_slice(b"\r\n");
    }
    if !seen.date {
        out.extend_from_slice(b"date: ");
        with_date(|d| out.extend_from_slice(d));
        out.extend_from_slice(b"\r\n");
    }
    if !seen.connection {
        match (framing.version, framing.keep_alive) {
            (Version::HTTP_10, true) => out.extend_from_slice(b"connection: keep-alive\r\n"),
            (Version::HTTP_10, false) => {}
            (_, false) => out.extend_from_slice(b"connection: close\r\n"),
            (_, true) => {}
        }
    }
    out.extend_from_slice(b"\r\n");
}

/// Appends `n` in decimal.
fn push_decimal(out: &mut Vec<u8>, mut n: usize) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[i..]);
}

thread_local! {
    /// The `Date` value of the current second, rendered once per second per thread.
    static DATE_NOW: RefCell<(u64, Vec<u8>)> = const { RefCell::new((u64::MAX, Vec::new())) };
}

/// Calls `f` with the current `Date` value (RFC 9110 IMF-fixdate).
fn with_date(f: impl FnOnce(&[u8])) {
    let now = SystemTime::now();
    let second = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    DATE_NOW.with(|cell| {
        let mut cached = cell.borrow_mut();
        if cached.0 != second {
            cached.1 = httpdate::fmt_http_date(now).into_bytes();
            cached.0 = second;
        }
        f(&cached.1);
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(response: &Response<()>, version: Version, keep_alive: bool, len: usize) -> String {
        let mut out = Vec::new();
        let framing = Framing {
            version,
            keep_alive,
            body_len: len,
        };
        render_head(&mut out, response, framing);
        String::from_utf8(out).expect("ascii")
    }

    #[test]
    fn a_head_has_status_headers_length_and_date() {
        let mut r = Response::new(());
        r.headers_mut()
            .insert("content-type", "text/plain".parse().expect("value"));
        let text = render(&r, Version::HTTP_11, true, 1234);
        assert!(text.starts_with("HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n"));
        assert!(text.contains("\r\ncontent-length: 1234\r\n"));
        assert!(text.contains("\r\ndate: ") && text.ends_with(" GMT\r\n\r\n"));
        assert!(!text.contains("connection"));
    }

    #[test]
    fn keep_alive_is_said_as_the_version_needs() {
        let r = Response::new(());
        assert!(render(&r, Version::HTTP_10, true, 0).contains("connection: keep-alive\r\n"));
        assert!(render(&r, Version::HTTP_10, true, 0).starts_with("HTTP/1.0 200 OK"));
        assert!(!render(&r, Version::HTTP_10, false, 0).contains("connection"));
        assert!(render(&r, Version::HTTP_11, false, 0).contains("connection: close\r\n"));
    }

    #[test]
    fn a_304_gets_no_length() {
        let mut r = Response::new(());
        *r.status_mut() = StatusCode::NOT_MODIFIED;
        let text = render(&r, Version::HTTP_11, true, 0);
        assert!(text.starts_with("HTTP/1.1 304 Not Modified\r\n"));
        assert!(!text.contains("content-length"));
    }

    #[test]
    fn headers_the_response_has_are_not_added_again() {
        let mut r = Response::new(());
        let h = r.headers_mut();
        h.insert(CONTENT_LENGTH, "7".parse().expect("value"));
        h.insert(
            DATE,
            "Thu, 01 Jan 1970 00:00:00 GMT".parse().expect("value"),
        );
        h.insert(CONNECTION, "close".parse().expect("value"));
        let text = render(&r, Version::HTTP_11, false, 1234);
        assert_eq!(text.matches("content-length").count(), 1, "{text}");
        assert!(text.contains("content-length: 7\r\n"), "{text}");
        assert_eq!(text.matches("date").count(), 1, "{text}");
        assert_eq!(text.matches("connection").count(), 1, "{text}");
    }
}
