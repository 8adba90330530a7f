//! The mail service's request parsing through its public functions: the query, the form body,
//! cookies and percent-decoding never panic and stay within the size limits.
#![no_main]

use libfuzzer_sys::fuzz_target;
use seda_mail::{MailRequest, parse_cookies, parse_urlencoded, percent_decode, percent_encode};

fuzz_target!(|data: &[u8]| {
    // Three fields separated by 0xff: target, cookie header, body.
    let mut parts = data.splitn(3, |&b| b == 0xff);
    let target = String::from_utf8_lossy(parts.next().unwrap_or_default());
    let cookie = String::from_utf8_lossy(parts.next().unwrap_or_default());
    let body = parts.next().unwrap_or_default();
    let _ = parse_cookies(&cookie);
    let _ = parse_urlencoded(&target);
    let decoded = percent_decode(&target);
    assert_eq!(percent_decode(&percent_encode(&decoded)), decoded);
    let now = std::time::Instant::now();
    if let Ok(r) = MailRequest::parse("post", &target, Some(&cookie), None, body, now) {
        assert_eq!(r.method, "POST");
        assert!(r.form.len() <= seda_mail::MAX_FIELDS && r.query.len() <= seda_mail::MAX_FIELDS);
    }
});
