//! The load generator's HTTP/1.1 response parser, fed in pieces of every size the first byte
//! picks: never a panic, and the answer does not depend on how the bytes were split.
#![no_main]

use libfuzzer_sys::fuzz_target;
use seda_load::parse_response_in_pieces;

fuzz_target!(|data: &[u8]| {
    let Some((&step, input)) = data.split_first() else {
        return;
    };
    let whole = parse_response_in_pieces(input, input.len().max(1));
    let pieces = parse_response_in_pieces(input, usize::from(step % 16) + 1);
    assert_eq!(whole, pieces, "split into pieces of {}", step % 16 + 1);
});
