//! The static server's request-path decoding and confinement: never a panic, and what it
//! accepts stays inside the root (no `..` segment, no NUL, no leading slash).
#![no_main]

use libfuzzer_sys::fuzz_target;
use seda_http::statics::path::{confine, is_hidden, percent_decode};

fuzz_target!(|data: &[u8]| {
    let Ok(raw) = std::str::from_utf8(data) else {
        return;
    };
    let _ = percent_decode(raw);
    if let Ok(p) = confine(raw) {
        assert!(!p.starts_with('/'), "{p:?}");
        assert!(!p.contains('\0'), "{p:?}");
        assert!(p.split('/').all(|s| s != ".." && s != "."), "{p:?}");
        let _ = is_hidden(&p);
    }
});
