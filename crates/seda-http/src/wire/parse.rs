//! Reading a simple request head off a connection's buffer.
//!
//! "Simple" is what a static file server mostly meets: a GET or HEAD in origin form, HTTP/1.0
//! or 1.1, without a body and without a protocol change. Everything else (bodies, `Upgrade`,
//! `Expect`, other methods, malformed heads, too many headers) is [`Head::Other`]: the front
//! end hands those bytes to hyper, which answers them as it always did (a 400, a 431, the
//! request itself).

use bytes::{Bytes, BytesMut};
use http::header::{HeaderMap, HeaderName, HeaderValue};
use http::{Method, Uri, Version};

use super::{NameSet, RequestHead};

/// Most header fields the fast path parses (on the stack); more: [`Head::Other`].
pub const MAX_HEADERS: usize = 100;

/// A parsed simple request.
#[derive(Debug)]
pub struct Simple {
    /// Method, URI, version and headers; the URI (and the header map, if one is ever built)
    /// shares one buffer: the head's bytes, split off the connection's buffer (no copy).
    pub head: RequestHead,
    /// The connection stays open after the answer (HTTP/1.1 without `Connection: close`, or
    /// HTTP/1.0 with `Connection: keep-alive`).
    pub keep_alive: bool,
}

/// What the start of a connection's buffer holds.
// Returned by value once per request: boxing the large variant would cost an allocation.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Head {
    /// A simple request, split off the buffer.
    Simple(Simple),
    /// The head is not complete yet.
    Partial,
    /// Anything else: left in the buffer for hyper.
    Other,
}

/// What the head's headers say about the connection and the body.
#[derive(Default)]
struct Flags {
    close: bool,
    keep_alive: bool,
    /// A body, a protocol change or an expectation: not simple.
    other: bool,
}

fn offset(base: &[u8], part: &[u8]) -> (usize, usize) {
    let start = (part.as_ptr() as usize).saturating_sub(base.as_ptr() as usize);
    (start, start + part.len())
}

/// `Connection`'s tokens (a comma-separated list, any case).
fn connection_tokens(value: &[u8], flags: &mut Flags) {
    for token in value.split(|&b| b == b',') {
        let token = token.trim_ascii();
        if token.eq_ignore_ascii_case(b"close") {
            flags.close = true;
        } else if token.eq_ignore_ascii_case(b"keep-alive") {
            flags.keep_alive = true;
        } else if token.eq_ignore_ascii_case(b"upgrade") {
            flags.other = true;
        }
    }
}

fn inspect(name: &[u8], value: &[u8], flags: &mut Flags) {
    if name.eq_ignore_ascii_case(b"connection") {
        connection_tokens(value, flags);
    } else if name.eq_ignore_ascii_case(b"content-length") {
        // A zero length is no body; any other value (or a malformed one) is hyper's to judge.
        flags.other |= value.trim_ascii() != b"0";
    } else if name.eq_ignore_ascii_case(b"transfer-encoding")
        || name.eq_ignore_ascii_case(b"upgrade")
        || name.eq_ignore_ascii_case(b"expect")
        || name.eq_ignore_ascii_case(b"http2-settings")
    {
        flags.other = true;
    }
}

/// Whether a parsed head may hold a name `wanted` picks. Looking each name up hashes it
/// (about 2% of a static hit's instructions for two lookups); a head of a few headers, as most
/// are, is checked by comparing its names instead (a standard name differs at once), and a
/// longer one is assumed to, leaving the lookups to decide.
pub(crate) fn may_name(headers: &HeaderMap, wanted: impl Fn(&HeaderName) -> bool) -> bool {
    const FEW: usize = 16;
    headers.keys_len() > FEW || headers.keys().any(wanted)
}

/// Parses the head at the start of `buf`, at most `max_headers` fields (capped at
/// [`MAX_HEADERS`]). A simple request's bytes are split off `buf`; otherwise `buf` is left
/// as it was.
pub fn parse_head(buf: &mut BytesMut, max_headers: usize) -> Head {
    // Uninitialised slots: a 100-header array of initialised ones was a 3.2 KB memset per
    // request (the largest item of the profile).
    let mut storage =
        [const { std::mem::MaybeUninit::<httparse::Header<'_>>::uninit() }; MAX_HEADERS];
    let n = max_headers.min(MAX_HEADERS);
    let mut flags = Flags::default();
    let mut names = NameSet::default();
    let (len, method, version, path) = {
        let base: &[u8] = buf;
        let mut req = httparse::Request::new(&mut []);
        let len = match req.parse_with_uninit_headers(base, &mut storage[..n]) {
            Ok(httparse::Status::Complete(len)) => len,
            Ok(httparse::Status::Partial) => return Head::Partial,
            Err(_) => return Head::Other,
        };
        let method = match req.method {
            Some("GET") => Method::GET,
            Some("HEAD") => Method::HEAD,
            _ => return Head::Other,
        };
        let version = match req.version {
            Some(1) => Version::HTTP_11,
            Some(0) => Version::HTTP_10,
            _ => return Head::Other,
        };
        let path = match req.path {
            Some(p) if p.starts_with('/') => offset(base, p.as_bytes()),
            _ => return Head::Other,
        };
        // The fields themselves stay in the head's bytes until a map is asked for
        // (`RequestHead::headers`): httparse admits exactly the names and values `http` does
        // (tokens; visible ASCII, tabs, spaces and obs-text), so none is lost then.
        for h in req.headers.iter() {
            inspect(h.name.as_bytes(), h.value, &mut flags);
            names.insert(h.name.as_bytes());
        }
        (len, method, version, path)
    };
    if flags.other {
        return Head::Other;
    }
    let raw = buf.split_to(len).freeze();
    let Ok(uri) = Uri::from_maybe_shared(raw.slice(path.0..path.1)) else {
        // Not a valid URI for `http`: give the bytes back, for hyper.
        let mut whole = BytesMut::with_capacity(raw.len() + buf.len());
        whole.extend_from_slice(&raw);
        whole.extend_from_slice(buf);
        *buf = whole;
        return Head::Other;
    };
    let keep_alive = match version {
        Version::HTTP_10 => flags.keep_alive && !flags.close,
        _ => !flags.close,
    };
    let head = RequestHead::from_wire(method, uri, version, raw, names);
    Head::Simple(Simple { head, keep_alive })
}

/// The header fields of a head [`parse_head`] took as simple (`head` is its bytes), as a map
/// whose values are views of `head`.
pub(crate) fn header_map(head: &Bytes) -> HeaderMap {
    let mut storage =
        [const { std::mem::MaybeUninit::<httparse::Header<'_>>::uninit() }; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut []);
    // It parsed before, with as many slots or fewer; an empty head (none was read) has none.
    if !matches!(
        req.parse_with_uninit_headers(head, &mut storage),
        Ok(httparse::Status::Complete(_))
    ) {
        return HeaderMap::new();
    }
    let mut map = HeaderMap::with_capacity(req.headers.len());
    for h in req.headers.iter() {
        // Both always convert (see `parse_head`; a test holds every field to it).
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(h.name.as_bytes()),
            HeaderValue::from_maybe_shared(head.slice_ref(h.value)),
        ) {
            map.append(name, value);
        }
    }
    map
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> (Head, BytesMut) {
        let mut buf = BytesMut::from(text);
        (parse_head(&mut buf, 100), buf)
    }

    #[test]
    fn a_simple_get_is_split_off_and_the_rest_stays() {
        let (head, rest) = parse("GET /a%20b?x=1 HTTP/1.1\r\nHost: h\r\nX-A: 1\r\n\r\nGET /");
        let Head::Simple(s) = head else {
            panic!("not simple: {head:?}")
        };
        assert_eq!(s.head.method, Method::GET);
        assert_eq!(s.head.uri.path(), "/a%20b");
        assert_eq!(s.head.uri.query(), Some("x=1"));
        assert_eq!(s.head.headers()["host"], "h");
        assert_eq!(s.head.headers()["x-a"], "1");
        assert!(s.keep_alive);
        assert_eq!(&rest[..], b"GET /");
    }

    #[test]
    fn keep_alive_follows_the_version_and_connection() {
        let cases = [
            ("GET / HTTP/1.1\r\nConnection: close\r\n\r\n", false),
            ("GET / HTTP/1.0\r\n\r\n", false),
            ("HEAD / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", true),
            (
                "GET / HTTP/1.1\r\nConnection: keep-alive, close\r\n\r\n",
                false,
            ),
        ];
        for (text, keep) in cases {
            let (Head::Simple(s), _) = parse(text) else {
                panic!("{text}")
            };
            assert_eq!(s.keep_alive, keep, "{text}");
        }
    }

    #[test]
    fn anything_else_is_left_whole_for_hyper() {
        for text in [
            "POST / HTTP/1.1\r\nContent-Length: 1\r\n\r\nx",
            "GET / HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello",
            "GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
            "GET / HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n",
            "GET / HTTP/1.1\r\nExpect: 100-continue\r\n\r\n",
            "GET http://example.com/ HTTP/1.1\r\n\r\n",
            "OPTIONS * HTTP/1.1\r\n\r\n",
            "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
            "GET / HTTP/1.1\r\nBad Header: x\r\n\r\n",
        ] {
            let (head, rest) = parse(text);
            assert!(matches!(head, Head::Other), "{text}: {head:?}");
            assert_eq!(&rest[..], text.as_bytes());
        }
    }

    #[test]
    fn a_partial_head_waits_and_too_many_headers_go_to_hyper() {
        assert!(matches!(
            parse("GET / HTTP/1.1\r\nHost: x\r\n").0,
            Head::Partial
        ));
        let mut many = String::from("GET / HTTP/1.1\r\n");
        for i in 0..101 {
            many.push_str(&format!("x-{i}: 1\r\n"));
        }
        many.push_str("\r\n");
        assert!(matches!(parse(&many).0, Head::Other));
        let mut buf = BytesMut::from("GET / HTTP/1.1\r\na: 1\r\nb: 2\r\n\r\n");
        assert!(matches!(parse_head(&mut buf, 1), Head::Other));
    }

    /// Every truncation and many single-byte changes of real heads: no panic, and the
    /// buffer is split only for a simple request (the fuzz target `h1_head` goes further).
    #[test]
    fn truncated_and_mutated_heads_keep_the_invariants() {
        let seeds = [
            "GET /a?b=c HTTP/1.1\r\nHost: x\r\nRange: bytes=0-1\r\n\r\nGET / HTTP/1.1\r\n\r\n",
            "HEAD / HTTP/1.0\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n",
            "GET / HTTP/1.1\r\na: \tb c\u{80}\r\n!: ~\r\n\r\n",
        ];
        let swaps = [0u8, b'\r', b'\n', b' ', b':', b'/', 0x7f, 0xff, b'\t', b'1'];
        for seed in seeds {
            let seed = seed.as_bytes();
            for cut in 0..=seed.len() {
                check(&seed[..cut]);
            }
            for i in 0..seed.len() {
                for &b in &swaps {
                    let mut m = seed.to_vec();
                    m[i] = b;
                    check(&m);
                }
            }
        }
    }

    fn check(input: &[u8]) {
        for max in [0, 1, 2, 100] {
            let mut buf = BytesMut::from(input);
            match parse_head(&mut buf, max) {
                Head::Simple(s) => {
                    let used = input.len() - buf.len();
                    assert!(used > 0);
                    assert_eq!(&buf[..], &input[used..]);
                    same_fields(&input[..used], s.head.headers());
                    assert!(s.head.headers().len() <= max);
                }
                Head::Partial | Head::Other => assert_eq!(&buf[..], input),
            }
        }
    }

    /// The map built later holds every field httparse read, in order: none is lost to a name
    /// or value `http` would refuse.
    fn same_fields(head: &[u8], map: &HeaderMap) {
        let mut storage = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut req = httparse::Request::new(&mut storage);
        assert!(matches!(req.parse(head), Ok(httparse::Status::Complete(_))));
        let mut read: Vec<(String, &[u8])> = req
            .headers
            .iter()
            .map(|h| (h.name.to_ascii_lowercase(), h.value))
            .collect();
        let mut mapped: Vec<(String, &[u8])> = map
            .iter()
            .map(|(n, v)| (n.as_str().to_string(), v.as_bytes()))
            .collect();
        read.sort();
        mapped.sort();
        assert_eq!(mapped, read, "{head:?}");
    }
}
