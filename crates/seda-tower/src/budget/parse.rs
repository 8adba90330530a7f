//! Reading a request's time budget from its headers: gRPC's `grpc-timeout` and our
//! [`DEADLINE_HEADER`].
//!
//! Both carry a *remaining budget*, not a point in time: hosts' clocks differ by more than a
//! short request lasts, so an absolute deadline read on another host would be wrong by the
//! clock skew, while a budget needs only each host's own monotonic clock (gRPC chose
//! `grpc-timeout` for the same reason). Each tier turns the budget it receives into a deadline
//! on its own clock and sends the next tier what is left.

use std::fmt;
use std::time::Duration;

use http::HeaderMap;
use http::header::HeaderName;

/// Our deadline header: the request's remaining budget in whole milliseconds, as ASCII digits
/// (`x-seda-deadline-ms: 250`). Milliseconds because a budget shorter than one is below what a
/// network hop costs; one unit, unlike `grpc-timeout`, so a shell script or a load generator
/// can write it without a table of units.
pub const DEADLINE_HEADER: &str = "x-seda-deadline-ms";

/// gRPC's deadline header (the gRPC over HTTP/2 protocol: at most 8 digits and a unit).
pub const GRPC_TIMEOUT: &str = "grpc-timeout";

/// The longest budget the layer keeps. A longer one (gRPC allows 99,999,999 hours) is cut to
/// this: no request lasts a day, so clamping changes nothing a client can see, and it keeps
/// `now + budget` from overflowing a clock.
pub const MAX_BUDGET: Duration = Duration::from_secs(24 * 60 * 60);

/// Most digits [`DEADLINE_HEADER`] may have (13 digits of milliseconds is over 300 years;
/// anything longer is a malformed value, not a long budget).
const MAX_MS_DIGITS: usize = 13;

/// Most digits of a `grpc-timeout` value (the gRPC specification's `TimeoutValue`).
const MAX_GRPC_DIGITS: usize = 8;

/// Why a deadline header could not be read. The layer ignores such a header (the request
/// keeps the route's default budget) and counts it in
/// [`DeadlineStats::malformed`](crate::DeadlineStats::malformed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BudgetError {
    header: &'static str,
    problem: &'static str,
}

impl BudgetError {
    fn new(header: &'static str, problem: &'static str) -> Self {
        BudgetError { header, problem }
    }

    /// The header that was malformed.
    pub fn header(&self) -> &'static str {
        self.header
    }
}

impl fmt::Display for BudgetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "malformed `{}` header: {}", self.header, self.problem)
    }
}

impl std::error::Error for BudgetError {}

/// Reads a `grpc-timeout` value: 1 to 8 ASCII digits and a unit, `H` (hours), `M` (minutes),
/// `S` (seconds), `m` (milliseconds), `u` (microseconds) or `n` (nanoseconds). A value past
/// [`MAX_BUDGET`] is clamped to it.
///
/// # Errors
/// The value is empty, has no unit, an unknown unit, a non-digit, or more than 8 digits.
pub fn parse_grpc_timeout(value: &[u8]) -> Result<Duration, BudgetError> {
    let bad = |problem| Err(BudgetError::new(GRPC_TIMEOUT, problem));
    let Some((&unit, digits)) = value.split_last() else {
        return bad("empty value; expected digits and a unit such as `100m`");
    };
    if digits.is_empty() {
        return bad("no digits before the unit; expected e.g. `100m`");
    }
    if digits.len() > MAX_GRPC_DIGITS {
        return bad("more than 8 digits");
    }
    let Some(n) = digits_value(digits) else {
        return bad("the value must be ASCII digits followed by one of H M S m u n");
    };
    let budget = match unit {
        b'H' => Duration::from_secs(n.saturating_mul(3600)),
        b'M' => Duration::from_secs(n.saturating_mul(60)),
        b'S' => Duration::from_secs(n),
        b'm' => Duration::from_millis(n),
        b'u' => Duration::from_micros(n),
        b'n' => Duration::from_nanos(n),
        _ => return bad("unknown unit; expected one of H M S m u n"),
    };
    Ok(budget.min(MAX_BUDGET))
}

/// Reads a [`DEADLINE_HEADER`] value: ASCII digits, milliseconds of budget left. A value past
/// [`MAX_BUDGET`] is clamped to it; `0` is a deadline already passed.
///
/// # Errors
/// The value is empty, has a non-digit (a sign, a unit, a fraction), or more than 13 digits.
pub fn parse_deadline_ms(value: &[u8]) -> Result<Duration, BudgetError> {
    let bad = |problem| Err(BudgetError::new(DEADLINE_HEADER, problem));
    if value.is_empty() {
        return bad("empty value; expected whole milliseconds such as `250`");
    }
    if value.len() > MAX_MS_DIGITS {
        return bad("more than 13 digits");
    }
    match digits_value(value) {
        Some(ms) => Ok(Duration::from_millis(ms).min(MAX_BUDGET)),
        None => bad("the value must be whole milliseconds in ASCII digits, no sign or unit"),
    }
}

// The two names built once: looking a header up by `&str` parses and lower-cases the name on
// every call, which was most of the 760 instructions a request spent here (callgrind, the
// static server's fast path, 2026-12-07).
static GRPC_TIMEOUT_NAME: HeaderName = HeaderName::from_static(GRPC_TIMEOUT);
static DEADLINE_NAME: HeaderName = HeaderName::from_static(DEADLINE_HEADER);

/// The budget `headers` give, if any: the smaller of `grpc-timeout` and [`DEADLINE_HEADER`]
/// when both are present (a caller that sends two means the stricter one), each malformed or
/// repeated header ignored and returned as an error beside the budget of the others.
pub fn budget_from_headers(headers: &HeaderMap) -> (Option<Duration>, Option<BudgetError>) {
    let read = read_headers(headers);
    (read.budget, read.error)
}

/// What [`read_headers`] found.
pub(crate) struct HeaderBudget {
    /// As [`budget_from_headers`] gives it.
    pub(crate) budget: Option<Duration>,
    /// As [`budget_from_headers`] gives it.
    pub(crate) error: Option<BudgetError>,
    /// Whether the request carries a `grpc-timeout` (readable or not).
    pub(crate) grpc: bool,
}

/// [`budget_from_headers`], and whether `grpc-timeout` was there: one lookup per header name.
pub(crate) fn read_headers(headers: &HeaderMap) -> HeaderBudget {
    let mut read = HeaderBudget {
        budget: None,
        error: None,
        grpc: false,
    };
    for (key, name, parse) in [
        (
            &GRPC_TIMEOUT_NAME,
            GRPC_TIMEOUT,
            parse_grpc_timeout as fn(&[u8]) -> _,
        ),
        (&DEADLINE_NAME, DEADLINE_HEADER, parse_deadline_ms),
    ] {
        let mut values = headers.get_all(key).iter();
        let Some(first) = values.next() else { continue };
        read.grpc |= name == GRPC_TIMEOUT;
        let parsed = if values.next().is_some() {
            // Two values could be an intermediary's and the client's: neither is trusted.
            Err(BudgetError::new(name, "given more than once"))
        } else {
            parse(first.as_bytes())
        };
        match parsed {
            Ok(b) => read.budget = Some(read.budget.map_or(b, |o| o.min(b))),
            Err(e) => read.error = Some(e),
        }
    }
    read
}

/// The number `digits` spell, if they are all ASCII digits (at most 13, so no overflow).
fn digits_value(digits: &[u8]) -> Option<u64> {
    digits.iter().try_fold(0u64, |n, &d| {
        d.is_ascii_digit()
            .then(|| n.saturating_mul(10).saturating_add(u64::from(d - b'0')))
    })
}

/// Malformed `grpc-timeout` values, each with a word its error must contain (the gRPC form's
/// tests check that it ignores every one of them).
#[cfg(test)]
pub(crate) const MALFORMED_GRPC_TIMEOUTS: [(&[u8], &str); 10] = [
    (b"", "empty"),
    (b"m", "no digits"),
    (b"100", "unknown unit"),
    (b"100x", "unknown unit"),
    (b"123456789m", "more than 8 digits"),
    (b"-1m", "ASCII digits"),
    (b"1.5S", "ASCII digits"),
    (b" 1S", "ASCII digits"),
    ("\u{661}S".as_bytes(), "ASCII digits"),
    (b"\xff5S", "ASCII digits"),
];

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    #[test]
    fn grpc_timeout_units() {
        let ms = Duration::from_millis;
        assert_eq!(parse_grpc_timeout(b"2H"), Ok(Duration::from_secs(7200)));
        assert_eq!(parse_grpc_timeout(b"3M"), Ok(Duration::from_secs(180)));
        assert_eq!(parse_grpc_timeout(b"5S"), Ok(Duration::from_secs(5)));
        assert_eq!(parse_grpc_timeout(b"100m"), Ok(ms(100)));
        assert_eq!(
            parse_grpc_timeout(b"2500u"),
            Ok(Duration::from_micros(2500))
        );
        assert_eq!(parse_grpc_timeout(b"7n"), Ok(Duration::from_nanos(7)));
        assert_eq!(parse_grpc_timeout(b"0m"), Ok(Duration::ZERO));
        assert_eq!(parse_grpc_timeout(b"00000001S"), Ok(Duration::from_secs(1)));
    }

    #[test]
    fn huge_values_are_clamped() {
        assert_eq!(parse_grpc_timeout(b"99999999H"), Ok(MAX_BUDGET));
        assert_eq!(parse_deadline_ms(b"9999999999999"), Ok(MAX_BUDGET));
        assert_eq!(parse_deadline_ms(b"86400000"), Ok(MAX_BUDGET));
        assert_eq!(
            parse_deadline_ms(b"86399999"),
            Ok(MAX_BUDGET - Duration::from_millis(1))
        );
    }

    #[test]
    fn malformed_values_say_what_is_wrong() {
        for (value, expect) in MALFORMED_GRPC_TIMEOUTS {
            let err = parse_grpc_timeout(value).unwrap_err();
            assert!(err.to_string().contains(expect), "{value:?}: {err}");
            assert_eq!(err.header(), GRPC_TIMEOUT);
        }
        for value in [
            &b""[..],
            b"-5",
            b"5ms",
            b"1.5",
            b"+5",
            b"12345678901234",
            b" 5",
        ] {
            let err = parse_deadline_ms(value).unwrap_err();
            assert_eq!(err.header(), DEADLINE_HEADER, "{value:?}");
        }
        assert_eq!(parse_deadline_ms(b"0"), Ok(Duration::ZERO));
        assert_eq!(parse_deadline_ms(b"250"), Ok(Duration::from_millis(250)));
    }

    #[test]
    fn headers_give_the_stricter_budget_and_skip_a_bad_one() {
        let mut h = HeaderMap::new();
        assert_eq!(budget_from_headers(&h), (None, None));
        h.insert(GRPC_TIMEOUT, HeaderValue::from_static("2S"));
        h.insert(DEADLINE_HEADER, HeaderValue::from_static("700"));
        assert_eq!(
            budget_from_headers(&h),
            (Some(Duration::from_millis(700)), None)
        );
        h.insert(DEADLINE_HEADER, HeaderValue::from_static("soon"));
        let (budget, err) = budget_from_headers(&h);
        assert_eq!(budget, Some(Duration::from_secs(2)));
        assert_eq!(err.unwrap().header(), DEADLINE_HEADER);
        h.remove(GRPC_TIMEOUT);
        h.insert(DEADLINE_HEADER, HeaderValue::from_static("100"));
        h.append(DEADLINE_HEADER, HeaderValue::from_static("900"));
        let (budget, err) = budget_from_headers(&h);
        assert_eq!(budget, None);
        assert!(err.unwrap().to_string().contains("more than once"));
    }
}
