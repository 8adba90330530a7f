//! Arbitrary bytes as the start of an HTTP/1 connection, to the front end's fast path
//! (`seda_http::wire::parse_head`), with every header count: never a panic; a simple request
//! is a GET or HEAD split off the front and the rest is left as it was; anything else leaves
//! the buffer whole (for hyper). Then the head of an answer to it is written.
#![no_main]

use bytes::BytesMut;
use http::{Method, Response};
use libfuzzer_sys::fuzz_target;
use seda_http::wire::{Framing, Head, parse_head, render_head};

fuzz_target!(|data: &[u8]| {
    let Some((&max, input)) = data.split_first() else {
        return;
    };
    let mut buf = BytesMut::from(input);
    match parse_head(&mut buf, usize::from(max)) {
        Head::Simple(s) => {
            assert!(s.head.method == Method::GET || s.head.method == Method::HEAD);
            assert!(s.head.uri.path().starts_with('/'));
            assert!(s.head.headers().len() <= usize::from(max));
            let used = input.len() - buf.len();
            assert!(used > 0);
            assert_eq!(&buf[..], &input[used..]);
            let mut out = Vec::new();
            let framing = Framing {
                version: s.head.version,
                keep_alive: s.keep_alive,
                body_len: input.len(),
            };
            render_head(&mut out, &Response::new(()), framing);
            assert!(out.ends_with(b"\r\n\r\n"));
        }
        Head::Partial | Head::Other => assert_eq!(&buf[..], input),
    }
});
