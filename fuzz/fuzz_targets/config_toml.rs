//! Configuration files: the runtime's `seda::Config` and `seda serve static`'s `ServeConfig`
//! refuse bad input with an error, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = seda::Config::from_toml(text);
    let _ = seda_http::ServeConfig::from_toml(text);
});
