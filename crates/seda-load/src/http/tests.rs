//! The parser fed in pieces, the `Server-Timing` reader and the request encoder.

use super::parse::{Parser, server_cpu_us};
use super::*;
use crate::workload::Request;

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
