//! Ready responses and how one is answered: GET and HEAD, validators (304), single ranges.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http::header::{
    ACCEPT_RANGES, CONTENT_LENGTH, CONTENT_RANGE, CONTENT_TYPE, ETAG, HeaderMap, HeaderValue,
    IF_MODIFIED_SINCE, IF_NONE_MATCH, IF_RANGE, LAST_MODIFIED, RANGE,
};
use http::{Method, Response, StatusCode};
use http_body_util::Full;

use crate::body::Body;
use crate::request::{Answer, RequestHead};
use crate::wire::{self, Prepared, Watch};

/// A cached file: its body and the header values every response for it carries.
#[derive(Debug)]
pub struct Entry {
    /// The file's bytes.
    pub body: Bytes,
    /// `Content-Type`.
    pub content_type: HeaderValue,
    /// `ETag` (strong: size and modification time).
    pub etag: HeaderValue,
    /// `Last-Modified`.
    pub last_modified: HeaderValue,
    /// Modification time, whole seconds since the epoch.
    pub mtime_s: u64,
    /// `Content-Length` of the whole body.
    pub length: HeaderValue,
    /// The `200` for the whole file, prepared once with the entry: a cache hit answers it
    /// as it is (a reference count) instead of building and rendering a response per request.
    full: Arc<Prepared>,
}

impl Entry {
    /// An entry for a file read from disk.
    pub fn new(body: Bytes, name: &str, modified: SystemTime) -> Entry {
        let since = modified.duration_since(UNIX_EPOCH).unwrap_or_default();
        let mtime_s = since.as_secs();
        let etag = format!("\"{:x}-{:x}\"", body.len(), since.as_nanos());
        let last_modified = httpdate::fmt_http_date(UNIX_EPOCH + Duration::from_secs(mtime_s));
        let mut entry = Entry {
            content_type: HeaderValue::from_static(content_type(name)),
            etag: HeaderValue::from_str(&etag).unwrap_or(HeaderValue::from_static("\"0\"")),
            last_modified: HeaderValue::from_str(&last_modified)
                .unwrap_or(HeaderValue::from_static("Thu, 01 Jan 1970 00:00:00 GMT")),
            mtime_s,
            length: HeaderValue::from(body.len()),
            // Replaced below, once the header values it is made of are in the entry.
            full: Arc::new(Prepared::new(HeaderMap::new(), Bytes::new())),
            body,
        };
        let headers = entry.headers(entry.length.clone(), None);
        entry.full = Arc::new(Prepared::new(headers, entry.body.clone()));
        entry
    }

    /// The headers of an answer with the body (or the part of it) `length` long.
    fn headers(&self, length: HeaderValue, content_range: Option<HeaderValue>) -> HeaderMap {
        let mut h = HeaderMap::with_capacity(6);
        h.insert(CONTENT_TYPE, self.content_type.clone());
        h.insert(CONTENT_LENGTH, length);
        h.insert(ETAG, self.etag.clone());
        h.insert(LAST_MODIFIED, self.last_modified.clone());
        h.insert(ACCEPT_RANGES, HeaderValue::from_static("bytes"));
        if let Some(cr) = content_range {
            h.insert(CONTENT_RANGE, cr);
        }
        h
    }

    /// The response to a GET or HEAD request with `headers`.
    pub fn respond(&self, method: &Method, headers: &HeaderMap) -> Response<Body> {
        self.answer(method, headers).into_response()
    }

    /// The answer to `head`, a GET or HEAD: as [`answer`](Self::answer), without building the
    /// head's header map when its names show no validator and no range (most requests).
    pub fn answer_to(&self, head: &RequestHead) -> Answer {
        if !head.may_have(WATCHED_CONDITIONS) {
            return self.whole(&head.method);
        }
        self.answer(&head.method, head.headers())
    }

    /// The prepared `200` for the whole file.
    fn whole(&self, method: &Method) -> Answer {
        Answer::Prepared {
            prepared: self.full.clone(),
            head_only: method == Method::HEAD,
        }
    }

    /// The answer to a GET or HEAD request with `headers`: the prepared `200` for the whole
    /// file, or a response (304, 206, 416).
    pub fn answer(&self, method: &Method, headers: &HeaderMap) -> Answer {
        let head = method == Method::HEAD;
        if !wire::may_name(headers, |name| WATCHED_CONDITIONS.contains(name)) {
            return self.whole(method);
        }
        if self.not_modified(headers) {
            let mut r = Response::new(Full::new(Bytes::new()));
            *r.status_mut() = StatusCode::NOT_MODIFIED;
            let h = r.headers_mut();
            h.insert(ETAG, self.etag.clone());
            h.insert(LAST_MODIFIED, self.last_modified.clone());
            return r.into();
        }
        let len = self.body.len() as u64;
        let range = match headers.get(RANGE) {
            Some(v) if self.if_range_holds(headers) => parse_range(v.as_bytes(), len),
            _ => RangeSpec::Full,
        };
        let (status, body, length, content_range) = match range {
            RangeSpec::Full => return self.whole(method),
            RangeSpec::Part(start, end) => {
                // `end` is inclusive and below `len`; `start <= end`.
                let (s, e) = (start as usize, end as usize + 1);
                let cr = format!("bytes {start}-{end}/{len}");
                (
                    StatusCode::PARTIAL_CONTENT,
                    self.body.slice(s..e),
                    HeaderValue::from(e - s),
                    HeaderValue::from_str(&cr).ok(),
                )
            }
            RangeSpec::Unsatisfiable => {
                let mut r = Response::new(Full::new(Bytes::new()));
                *r.status_mut() = StatusCode::RANGE_NOT_SATISFIABLE;
                if let Ok(v) = HeaderValue::from_str(&format!("bytes */{len}")) {
                    r.headers_mut().insert(CONTENT_RANGE, v);
                }
                return r.into();
            }
        };
        let mut r = Response::new(Full::new(if head { Bytes::new() } else { body }));
        *r.status_mut() = status;
        *r.headers_mut() = self.headers(length, content_range);
        r.into()
    }

    /// RFC 9110 13.2.2: If-None-Match first; If-Modified-Since only without it.
    fn not_modified(&self, headers: &HeaderMap) -> bool {
        if let Some(inm) = headers.get(IF_NONE_MATCH) {
            return etag_list_matches(inm.as_bytes(), self.etag.as_bytes());
        }
        headers
            .get(IF_MODIFIED_SINCE)
            .and_then(|v| v.to_str().ok())
            .and_then(|s| httpdate::parse_http_date(s).ok())
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .is_some_and(|since| self.mtime_s <= since.as_secs())
    }

    /// If-Range: the range applies only if the validator still matches.
    fn if_range_holds(&self, headers: &HeaderMap) -> bool {
        match headers.get(IF_RANGE) {
            None => true,
            Some(v) if v.as_bytes().starts_with(b"\"") => v.as_bytes() == self.etag.as_bytes(),
            Some(v) => v.as_bytes() == self.last_modified.as_bytes(),
        }
    }
}

/// The headers that may make a request's answer other than the whole file.
const WATCHED_CONDITIONS: Watch = Watch::of(&["if-none-match", "if-modified-since", "range"]);

/// Weak comparison of an If-None-Match list against our tag.
fn etag_list_matches(list: &[u8], ours: &[u8]) -> bool {
    list.split(|&b| b == b',').any(|t| {
        let t = t.trim_ascii();
        let t = t.strip_prefix(b"W/").unwrap_or(t);
        t == b"*" || t == ours
    })
}

/// A parsed `Range` header.
#[derive(Debug, PartialEq, Eq)]
enum RangeSpec {
    /// Ignore it: serve the whole body (absent, malformed, or several ranges).
    Full,
    /// One satisfiable range, inclusive bounds.
    Part(u64, u64),
    /// A single range that lies past the end.
    Unsatisfiable,
}

fn parse_u64(b: &[u8]) -> Option<u64> {
    if b.is_empty() || b.len() > 19 || !b.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(b).ok()?.parse().ok()
}

/// RFC 9110 14.2: `bytes=a-b`, `bytes=a-`, `bytes=-n`. Several ranges are answered with the
/// whole body, which the RFC allows.
fn parse_range(v: &[u8], len: u64) -> RangeSpec {
    let Some(spec) = v.trim_ascii().strip_prefix(b"bytes=") else {
        return RangeSpec::Full;
    };
    if spec.contains(&b',') {
        return RangeSpec::Full;
    }
    let Some(dash) = spec.iter().position(|&b| b == b'-') else {
        return RangeSpec::Full;
    };
    let (a, b) = (spec[..dash].trim_ascii(), spec[dash + 1..].trim_ascii());
    if a.is_empty() {
        return match parse_u64(b) {
            Some(0) => RangeSpec::Unsatisfiable,
            Some(_) if len == 0 => RangeSpec::Unsatisfiable,
            Some(n) => RangeSpec::Part(len.saturating_sub(n), len - 1),
            None => RangeSpec::Full,
        };
    }
    let Some(start) = parse_u64(a) else {
        return RangeSpec::Full;
    };
    let end = if b.is_empty() {
        None
    } else {
        match parse_u64(b) {
            Some(e) if e >= start => Some(e),
            _ => return RangeSpec::Full,
        }
    };
    if start >= len {
        return RangeSpec::Unsatisfiable;
    }
    RangeSpec::Part(start, end.map_or(len - 1, |e| e.min(len - 1)))
}

/// `Content-Type` by file extension.
pub fn content_type(name: &str) -> &'static str {
    let ext = name.rsplit_once('.').map_or("", |(_, e)| e);
    match ext.to_ascii_lowercase().as_str() {
        "html" | "htm" => "text/html; charset=utf-8",
        "txt" => "text/plain; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "json" => "application/json",
        "xml" => "application/xml",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "ico" => "image/x-icon",
        "pdf" => "application/pdf",
        "wasm" => "application/wasm",
        "woff2" => "font/woff2",
        "gz" => "application/gzip",
        "zip" => "application/zip",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges() {
        assert_eq!(parse_range(b"bytes=0-9", 100), RangeSpec::Part(0, 9));
        assert_eq!(parse_range(b"bytes=90-", 100), RangeSpec::Part(90, 99));
        assert_eq!(parse_range(b"bytes=-10", 100), RangeSpec::Part(90, 99));
        assert_eq!(parse_range(b"bytes=-1000", 100), RangeSpec::Part(0, 99));
        assert_eq!(parse_range(b"bytes=50-1000", 100), RangeSpec::Part(50, 99));
        assert_eq!(parse_range(b"bytes=100-", 100), RangeSpec::Unsatisfiable);
        assert_eq!(parse_range(b"bytes=-0", 100), RangeSpec::Unsatisfiable);
        assert_eq!(parse_range(b"bytes=0-1,5-6", 100), RangeSpec::Full);
        assert_eq!(parse_range(b"bytes=9-1", 100), RangeSpec::Full);
        assert_eq!(parse_range(b"items=0-1", 100), RangeSpec::Full);
        assert_eq!(parse_range(b"bytes=x-1", 100), RangeSpec::Full);
    }

    /// The shortcut to the whole file is taken only without validators or a range, in short
    /// and long heads.
    #[test]
    fn only_plain_requests_skip_the_conditions() {
        let entry = Entry::new(Bytes::from_static(b"0123456789"), "a.txt", UNIX_EPOCH);
        let mut headers = HeaderMap::new();
        for i in 0..40 {
            let status = entry.answer(&Method::GET, &headers).status();
            assert_eq!(status, StatusCode::OK, "{i} other headers");
            let mut h = headers.clone();
            h.insert(RANGE, HeaderValue::from_static("bytes=0-1"));
            let status = entry.answer(&Method::GET, &h).status();
            assert_eq!(status, StatusCode::PARTIAL_CONTENT, "{i}");
            let mut h = headers.clone();
            h.insert(IF_NONE_MATCH, entry.etag.clone());
            let status = entry.answer(&Method::GET, &h).status();
            assert_eq!(status, StatusCode::NOT_MODIFIED, "{i}");
            let mut h = headers.clone();
            h.insert(IF_MODIFIED_SINCE, entry.last_modified.clone());
            let status = entry.answer(&Method::GET, &h).status();
            assert_eq!(status, StatusCode::NOT_MODIFIED, "{i}");
            let name = http::HeaderName::from_bytes(format!("x-h{i}").as_bytes()).expect("name");
            headers.insert(name, HeaderValue::from_static("1"));
        }
    }

    /// The conditional headers, as `http`'s names.
    const CONDITIONS: [http::HeaderName; 3] = [IF_NONE_MATCH, IF_MODIFIED_SINCE, RANGE];

    #[test]
    fn the_watched_conditions_are_the_conditions() {
        for name in &CONDITIONS {
            assert!(WATCHED_CONDITIONS.contains(name), "{name}");
        }
        assert_eq!(
            WATCHED_CONDITIONS,
            Watch::of(&[
                IF_NONE_MATCH.as_str(),
                IF_MODIFIED_SINCE.as_str(),
                RANGE.as_str()
            ])
        );
    }

    #[test]
    fn etag_lists() {
        assert!(etag_list_matches(b"\"a\", W/\"b\"", b"\"b\""));
        assert!(etag_list_matches(b"*", b"\"b\""));
        assert!(!etag_list_matches(b"\"a\"", b"\"b\""));
    }
}
