//! A request's head: method, target and version parsed, header fields made into a map only
//! when something asks for the map.

use std::fmt;
use std::sync::OnceLock;

use bytes::Bytes;
use http::header::HeaderMap;
use http::{Extensions, Method, Request, Uri, Version};

use crate::wire::{self, NameSet, Watch};

/// The head of an [`HttpRequest`](crate::HttpRequest): what `http::request::Parts` holds, with
/// the header fields kept as they came until [`headers`](Self::headers) is first called.
///
/// A request read by the front end's fast path keeps its head's bytes and the set of names
/// they hold: a static hit, which only needs to know that no validator, range or budget came,
/// never builds a `HeaderMap` (two allocations and about 2,300 instructions of a 15,000
/// instruction request, issue 52). A request hyper read comes with its map.
pub struct RequestHead {
    /// The method.
    pub method: Method,
    /// The request target.
    pub uri: Uri,
    /// The protocol version.
    pub version: Version,
    /// What hyper attached (an upgrade, for one); empty on the fast path.
    pub extensions: Extensions,
    /// The head's bytes as read, request line included (empty when built from parts).
    raw: Bytes,
    /// The names `raw`'s header lines hold.
    names: NameSet,
    /// The fields as a map: given, or built from `raw` at the first call of `headers`.
    /// Boxed: a request moves through several stages, and most never build it.
    map: OnceLock<Box<HeaderMap>>,
}

impl RequestHead {
    /// A head read by the fast path: `raw` is the whole head (it parses, with at most
    /// [`wire::MAX_HEADERS`] fields, and every field is valid for `http`), `names` the names
    /// of its fields.
    pub(crate) fn from_wire(
        method: Method,
        uri: Uri,
        version: Version,
        raw: Bytes,
        names: NameSet,
    ) -> RequestHead {
        RequestHead {
            method,
            uri,
            version,
            extensions: Extensions::new(),
            raw,
            names,
            map: OnceLock::new(),
        }
    }

    /// The header fields.
    pub fn headers(&self) -> &HeaderMap {
        self.map
            .get_or_init(|| Box::new(wire::header_map(&self.raw)))
    }

    /// Whether the head may have a field named one of the names `watch` picks: false means
    /// surely not, and costs no map; true means look in [`headers`](Self::headers).
    pub fn may_have(&self, watch: Watch) -> bool {
        match self.map.get() {
            Some(map) => wire::may_name(map, |name| watch.contains(name)),
            None => self.names.holds_any(watch),
        }
    }

    /// The head as `http`'s parts.
    pub fn into_parts(self) -> http::request::Parts {
        let headers = match self.map.into_inner() {
            Some(map) => *map,
            None => wire::header_map(&self.raw),
        };
        let (mut parts, ()) = Request::new(()).into_parts();
        parts.method = self.method;
        parts.uri = self.uri;
        parts.version = self.version;
        parts.headers = headers;
        parts.extensions = self.extensions;
        parts
    }
}

impl From<http::request::Parts> for RequestHead {
    fn from(parts: http::request::Parts) -> RequestHead {
        RequestHead {
            method: parts.method,
            uri: parts.uri,
            version: parts.version,
            extensions: parts.extensions,
            raw: Bytes::new(),
            names: NameSet::default(),
            map: OnceLock::from(Box::new(parts.headers)),
        }
    }
}

impl fmt::Debug for RequestHead {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RequestHead")
            .field("method", &self.method)
            .field("uri", &self.uri)
            .field("version", &self.version)
            .field("headers", self.headers())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BytesMut;
    use http::header::{HOST, RANGE};

    const NONE_MATCH: Watch = Watch::of(&["if-none-match"]);
    const NONE_MATCH_OR_RANGE: Watch = Watch::of(&["if-none-match", "range"]);
    const RANGE_ONLY: Watch = Watch::of(&["range"]);

    fn read(text: &str) -> RequestHead {
        let mut buf = BytesMut::from(text);
        match wire::parse_head(&mut buf, 100) {
            wire::Head::Simple(s) => s.head,
            other => panic!("not simple: {other:?}"),
        }
    }

    #[test]
    fn the_map_is_the_fields_that_came() {
        let head =
            read("GET /a HTTP/1.1\r\nHost: h\r\nX-A: 1\r\nx-a: 2\r\nRange:  bytes=0-1 \r\n\r\n");
        assert!(!head.may_have(NONE_MATCH));
        assert!(head.may_have(NONE_MATCH_OR_RANGE));
        let h = head.headers();
        assert_eq!(h.len(), 4);
        assert_eq!(h[HOST], "h");
        let xa: Vec<_> = h.get_all("x-a").iter().collect();
        assert_eq!(xa, ["1", "2"]);
        assert_eq!(h[RANGE], "bytes=0-1");
        // Once built, the map answers.
        assert!(head.may_have(RANGE_ONLY));
        let parts = head.into_parts();
        assert_eq!(parts.uri, "/a");
        assert_eq!(parts.headers.len(), 4);
    }

    #[test]
    fn parts_go_through_unchanged() {
        let (parts, ()) = Request::get("/x")
            .header(RANGE, "bytes=1-2")
            .body(())
            .expect("request")
            .into_parts();
        let head = RequestHead::from(parts);
        assert!(head.may_have(RANGE_ONLY));
        assert!(!head.may_have(NONE_MATCH));
        let parts = head.into_parts();
        assert_eq!(parts.uri, "/x");
        assert_eq!(parts.headers[RANGE], "bytes=1-2");
    }
}
