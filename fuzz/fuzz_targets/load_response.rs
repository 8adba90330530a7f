//! The load generator's HTTP/1.1 response parser, fed in pieces of every size the first byte
//! picks: never a panic, and a response it accepts whole it accepts the same in any split.
//!
//! Not the converse: bytes after a complete response are an error when they arrive in the same
//! read (the client does not pipeline) and are left for the next exchange when they arrive
//! later, so a split may turn that error into a response (the first finding, a property of the
//! design rather than a bug).
#![no_main]

use libfuzzer_sys::fuzz_target;
use seda_load::parse_response_in_pieces;

fuzz_target!(|data: &[u8]| {
    let Some((&step, input)) = data.split_first() else {
        return;
    };
    let step = usize::from(step % 16) + 1;
    if let Some(whole) = parse_response_in_pieces(input, input.len().max(1)) {
        let pieces = parse_response_in_pieces(input, step);
        assert_eq!(Some(whole), pieces, "split into pieces of {step}");
    } else {
        let _ = parse_response_in_pieces(input, step);
    }
});
