//! A gRPC request's deadline, read from its `grpc-timeout` header.
//!
//! The wire format (gRPC over HTTP/2, "Timeout"): at most 8 ASCII digits and one unit, `H`
//! hours, `M` minutes, `S` seconds, `m` milliseconds, `u` microseconds, `n` nanoseconds. The
//! client sends the time it has left, so the deadline is the moment the server read it plus
//! that much.
//!
//! A malformed value (no digits, more than 8, an unknown unit, non-ASCII) is ignored, as
//! tonic's own server ignores it: the request then has no deadline of ours, and a client that
//! meant one still enforces it on its side. The 8-digit limit keeps every value in range
//! (99,999,999 hours fits a `Duration`); a deadline past what the clock can represent is no
//! deadline.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use http::HeaderMap;
use pin_project_lite::pin_project;

use crate::budget::BudgetTimer;

/// The header a gRPC client sends its remaining time in (the one constant the HTTP form's
/// deadlines read too).
pub use crate::budget::GRPC_TIMEOUT;

/// The time `headers` give the request, `None` without a readable `grpc-timeout`.
pub(crate) fn grpc_timeout(headers: &HeaderMap) -> Option<Duration> {
    parse(headers.get(GRPC_TIMEOUT)?.as_bytes())
}

pin_project! {
    /// The timer of one request's `grpc-timeout` (the HTTP form's deadline timer). Armed on the
    /// first poll inside a tokio runtime (tonic's server runs in one); outside one, or without a
    /// readable header, it never fires.
    pub(crate) struct ClientDeadline {
        at: Option<Instant>,
        timeout: Duration,
        #[pin]
        timer: BudgetTimer,
    }
}

impl ClientDeadline {
    /// The deadline of a request that arrived at `now` with `headers`.
    pub(crate) fn new(headers: &HeaderMap, now: Instant) -> Self {
        let timeout = grpc_timeout(headers);
        let at = timeout.and_then(|t| now.checked_add(t));
        ClientDeadline {
            at,
            timeout: timeout.unwrap_or_default(),
            timer: BudgetTimer::at(at),
        }
    }

    /// The time the client gave the request.
    pub(crate) fn timeout(&self) -> Duration {
        self.timeout
    }

    /// `Ready` once the deadline has passed.
    pub(crate) fn poll_passed(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.project().timer.poll_passed(cx)
    }
}

/// Parses one `grpc-timeout` value with the parser the HTTP form's deadlines use (a value past
/// [`MAX_BUDGET`](crate::MAX_BUDGET), a day, is clamped to it).
fn parse(value: &[u8]) -> Option<Duration> {
    crate::budget::parse_grpc_timeout(value).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    #[test]
    fn every_unit_of_the_wire_format() {
        let cases: [(&[u8], Duration); 6] = [
            (b"2H", Duration::from_secs(7200)),
            (b"3M", Duration::from_secs(180)),
            (b"4S", Duration::from_secs(4)),
            (b"250m", Duration::from_millis(250)),
            (b"7u", Duration::from_micros(7)),
            (b"99999999n", Duration::from_nanos(99_999_999)),
        ];
        for (value, expected) in cases {
            assert_eq!(parse(value), Some(expected), "{value:?}");
        }
        // The largest value the format allows is clamped to a day.
        assert_eq!(parse(b"99999999H"), Some(crate::MAX_BUDGET));
    }

    #[test]
    fn malformed_values_are_ignored() {
        for (value, _) in crate::budget::MALFORMED_GRPC_TIMEOUTS {
            assert_eq!(parse(value), None, "{value:?}");
        }
    }

    #[test]
    fn the_deadline_is_the_arrival_plus_the_timeout() {
        let now = Instant::now();
        let mut headers = HeaderMap::new();
        assert_eq!(ClientDeadline::new(&headers, now).at, None);
        headers.insert(GRPC_TIMEOUT, HeaderValue::from_static("150m"));
        let d = ClientDeadline::new(&headers, now);
        assert_eq!(d.at, Some(now + Duration::from_millis(150)));
        assert_eq!(d.timeout(), Duration::from_millis(150));
        headers.insert(GRPC_TIMEOUT, HeaderValue::from_static("soon"));
        assert_eq!(ClientDeadline::new(&headers, now).at, None);
    }

    #[tokio::test]
    async fn the_timer_fires_at_the_deadline_and_not_before() {
        let mut headers = HeaderMap::new();
        headers.insert(GRPC_TIMEOUT, HeaderValue::from_static("200m"));
        let start = Instant::now();
        let d = ClientDeadline::new(&headers, start);
        tokio::pin!(d);
        let mut passed = std::future::poll_fn(|cx| d.as_mut().poll_passed(cx));
        // A tokio timer never fires early, so this cannot pass by luck.
        let early = tokio::time::timeout(Duration::from_millis(150), &mut passed).await;
        assert!(early.is_err(), "fired before the deadline");
        passed.await;
        assert!(start.elapsed() >= Duration::from_millis(200));
    }
}
