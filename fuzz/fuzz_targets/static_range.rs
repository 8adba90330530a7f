//! A cached file answering arbitrary `Range`, `If-None-Match`, `If-Modified-Since` and
//! `If-Range` headers: never a panic, and a 206 always carries bytes of the file.
#![no_main]

use http::header::{HeaderMap, HeaderName, HeaderValue};
use http::{Method, StatusCode};
use libfuzzer_sys::fuzz_target;
use seda_http::statics::Entry;

const NAMES: [&str; 4] = ["range", "if-none-match", "if-modified-since", "if-range"];

fuzz_target!(|data: &[u8]| {
    // First byte: the file's length (0..=255); then header values split on '\n'.
    let Some((&len, rest)) = data.split_first() else {
        return;
    };
    let body: Vec<u8> = (0..len).collect();
    let entry = Entry::new(body.clone().into(), "f.bin", std::time::UNIX_EPOCH);
    let mut headers = HeaderMap::new();
    for (name, value) in NAMES.iter().zip(rest.split(|&b| b == b'\n')) {
        if let Ok(v) = HeaderValue::from_bytes(value) {
            headers.insert(HeaderName::from_static(name), v);
        }
    }
    for method in [Method::GET, Method::HEAD] {
        let r = entry.respond(&method, &headers);
        if r.status() == StatusCode::PARTIAL_CONTENT {
            assert!(r.headers().contains_key(http::header::CONTENT_RANGE));
        }
    }
});
