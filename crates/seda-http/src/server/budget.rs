//! A request's deadline at the front end: the budget an upstream tier sent (`grpc-timeout` or
//! `x-seda-deadline-ms`, read by `seda_tower`'s parser so every tier reads it alike) becomes
//! the request's [`Meta::deadline`](seda::Meta), so the stages drop it, unserved, if it is
//! still queued when nobody waits for it any more ([WC03]'s runtime drops expired events at
//! enqueue and at dequeue). A budget already spent is answered at once, before the body is
//! read or any stage sees it.
//!
//! A malformed value is ignored (the request has no deadline), as the tower layer does.

use std::time::Instant;

use http::{HeaderValue, StatusCode};
use seda_tower::{DEADLINE, DEADLINE_HEADER, GRPC_TIMEOUT, budget_from_headers};

use crate::body::Body;
use crate::request::{REASON_HEADER, RequestHead, text};
use crate::wire::Watch;

/// What the headers say of a request's deadline.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Door {
    /// No budget came (or only a malformed one).
    Open,
    /// The request must be answered by then, or dropped.
    Until(Instant),
    /// The budget is spent: answer [`missed`] now.
    Spent,
}

/// Reads the deadline of a request born at `born`.
pub(crate) fn read(head: &RequestHead, born: Instant) -> Door {
    if !head.may_have(BUDGET_HEADERS) {
        return Door::Open;
    }
    match budget_from_headers(head.headers()).0 {
        None => Door::Open,
        Some(b) if b.is_zero() => Door::Spent,
        Some(b) => Door::Until(born + b),
    }
}

/// The headers a budget comes in (`budget_from_headers` reads them).
const BUDGET_HEADERS: Watch = Watch::of(&[GRPC_TIMEOUT, DEADLINE_HEADER]);

/// Whether `deadline` has passed: the reason a request went unanswered.
pub(crate) fn passed(deadline: Option<Instant>) -> bool {
    deadline.is_some_and(|d| Instant::now() >= d)
}

/// The answer to a request whose deadline passed before it was served: `504` with
/// `x-seda-reject: deadline`, as the tower layer answers, and no `Retry-After` (the same
/// request retried has even less time).
pub(crate) fn missed() -> http::Response<Body> {
    let mut r = text(
        StatusCode::GATEWAY_TIMEOUT,
        "504 Gateway Timeout: the request's deadline passed before it could be served.\n",
    );
    r.headers_mut()
        .insert(REASON_HEADER, HeaderValue::from_static(DEADLINE));
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire;
    use bytes::BytesMut;
    use std::time::Duration;

    /// The door of a request with `headers`, read as the fast path reads it and as hyper's
    /// parts come.
    fn door(headers: &[(&str, &str)]) -> Door {
        let mut text = String::from("GET / HTTP/1.1\r\n");
        let mut parts = http::Request::get("/")
            .body(())
            .expect("request")
            .into_parts()
            .0;
        for (name, value) in headers {
            text.push_str(&format!("{name}: {value}\r\n"));
            let name = http::HeaderName::from_bytes(name.as_bytes()).expect("name");
            parts
                .headers
                .append(name, HeaderValue::from_str(value).expect("value"));
        }
        text.push_str("\r\n");
        let wire::Head::Simple(s) = wire::parse_head(&mut BytesMut::from(&text[..]), 100) else {
            panic!("not simple: {text}")
        };
        let born = Instant::now();
        let (fast, hyper) = (read(&s.head, born), read(&RequestHead::from(parts), born));
        assert_eq!(fast, hyper, "{text}");
        fast
    }

    /// The shortcut by names finds a budget wherever the lookups would, in short and long heads.
    #[test]
    fn a_budget_is_read_among_few_or_many_headers() {
        let many: Vec<(String, &str)> = (0..40).map(|i| (format!("x-h{i}"), "1")).collect();
        for filler in [&many[..0], &many[..3], &many[..]] {
            let mut h: Vec<(&str, &str)> = filler.iter().map(|(n, v)| (n.as_str(), *v)).collect();
            assert!(matches!(door(&h), Door::Open));
            h.push(("X-Seda-Deadline-Ms", "5000"));
            assert!(matches!(door(&h), Door::Until(_)));
            h.pop();
            h.push(("grpc-timeout", "0m"));
            assert!(matches!(door(&h), Door::Spent));
        }
        let until = door(&[("host", "h"), ("x-seda-deadline-ms", "1000")]);
        assert!(matches!(until, Door::Until(d) if d <= Instant::now() + Duration::from_secs(1)));
    }
}
