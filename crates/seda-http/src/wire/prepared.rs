//! A `200 OK` rendered once and answered many times: the static cache's hits.
//!
//! Building a response per hit cost a header map (two allocations, five inserts), rendering
//! it again and dropping it: about 2,300 of a hit's 17,700 instructions in issue 52's
//! profile. A [`Prepared`] keeps its header lines rendered once, beside the same headers as a
//! map for hyper's path; the fast path writes the status line, those lines, the per-second
//! `Date` and the body, and a hit costs a reference count.

use bytes::Bytes;
use http::header::HeaderMap;
use http::{Response, StatusCode};
use http_body_util::Full;

use super::render::{self, Framing, Seen};
use crate::body::Body;

/// A ready `200 OK`: its headers (as lines and as a map) and its body.
#[derive(Debug)]
pub struct Prepared {
    /// `name: value\r\n` for each header, as [`super::render_head`] writes them.
    lines: Vec<u8>,
    /// Which of the front end's own headers the lines hold already.
    seen: Seen,
    headers: HeaderMap,
    body: Bytes,
}

impl Prepared {
    /// A `200 OK` with `headers` and `body`.
    pub fn new(headers: HeaderMap, body: Bytes) -> Prepared {
        let mut lines = Vec::new();
        let seen = render::header_lines(&mut lines, &headers);
        Prepared {
            lines,
            seen,
            headers,
            body,
        }
    }

    /// The body (all of it, also for a HEAD request).
    pub fn body(&self) -> &Bytes {
        &self.body
    }

    /// The same answer as a response (hyper's path, tests); without the body for HEAD.
    pub fn response(&self, head_only: bool) -> Response<Body> {
        let body = if head_only {
            Bytes::new()
        } else {
            self.body.clone()
        };
        let mut r = Response::new(Full::new(body));
        *r.headers_mut() = self.headers.clone();
        r
    }

    /// Appends the head, the same bytes [`super::render_head`] writes for [`Self::response`].
    pub fn render_head(&self, out: &mut Vec<u8>, framing: Framing) {
        render::status_line(out, framing.version, StatusCode::OK);
        out.extend_from_slice(&self.lines);
        render::closing(out, StatusCode::OK, self.seen, framing);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::Version;
    use http::header::{CONTENT_LENGTH, CONTENT_TYPE, HeaderValue};

    #[test]
    fn the_prepared_head_is_the_rendered_response_head() {
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/plain"));
        headers.insert(CONTENT_LENGTH, HeaderValue::from(5));
        let p = Prepared::new(headers, Bytes::from_static(b"hello"));
        for version in [Version::HTTP_10, Version::HTTP_11] {
            for keep_alive in [false, true] {
                let framing = Framing {
                    version,
                    keep_alive,
                    body_len: 5,
                };
                let (mut ours, mut theirs) = (Vec::new(), Vec::new());
                p.render_head(&mut ours, framing);
                super::super::render_head(&mut theirs, &p.response(false), framing);
                assert_eq!(ours, theirs, "{version:?} keep-alive {keep_alive}");
            }
        }
        use hyper::body::Body as _;
        assert_eq!(p.response(true).body().size_hint().exact(), Some(0));
        assert_eq!(p.response(false).body().size_hint().exact(), Some(5));
    }
}
