//! `GET /hold?ms=N` (or `us=N`, as `seda load --synthetic` sends): the synthetic sized request of the early-termination experiments
//! (SERT06's "5 ms and 500 ms" request types, its ranking and index-matching services).
//!
//! It holds a worker of the stage for `N` ms, sleeping in steps of [`STEP`] and checking its
//! cancel token at each (a safe point), as a request waiting on an index server would: its cost
//! is a worker's time, not the CPU, so the stage's capacity is `threads / mean N` whatever
//! else runs on the machine, and the experiments' loads can be sized exactly. A terminated
//! request is given up unanswered; the front end answers it 503 with `x-seda-reject:
//! terminated`.

use std::time::{Duration, Instant};

use http::StatusCode;
use seda::Meta;

use crate::request::{Body, text};

/// Time between two safe points: far below any termination threshold or control tick worth
/// having, and long enough that a 5 ms request is one sleep (a loaded machine delays every
/// wake-up; fewer of them keep a hold close to its time).
pub const STEP: Duration = Duration::from_millis(5);

/// Longest hold a request may ask for.
pub const MAX_MS: u64 = 600_000;

/// Reads `ms=N` or `us=N` (at most [`MAX_MS`] ms, more than 0); anything else is an error
/// message for a 400.
pub(crate) fn parse(query: Option<&str>) -> Result<Duration, String> {
    let mut ms = None;
    for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
        let (unit, v) = match pair.split_once('=') {
            Some(("ms", v)) => (1.0, v),
            Some(("us", v)) => (1e-3, v),
            _ => return Err(format!("unknown parameter `{pair}`; give `ms` or `us`")),
        };
        match v.parse::<f64>().map(|x| x * unit) {
            Ok(x) if x > 0.0 && x <= MAX_MS as f64 => ms = Some(x),
            _ => {
                return Err(format!(
                    "the time must be in (0, {MAX_MS}] ms, got `{pair}`"
                ));
            }
        }
    }
    ms.map(|x| Duration::from_secs_f64(x / 1000.0))
        .ok_or_else(|| "give the time to hold: /hold?ms=N".to_string())
}

/// Holds for `time`, checking `meta`'s token every [`STEP`]; `None` if the request was cut
/// or its client left (give it up unanswered).
pub(crate) fn hold(meta: &Meta, time: Duration) -> Option<http::Response<Body>> {
    let start = Instant::now();
    loop {
        meta.cancel.checkpoint().ok()?;
        let left = time.saturating_sub(start.elapsed());
        if left.is_zero() {
            return Some(text(StatusCode::OK, "held\n"));
        }
        std::thread::sleep(left.min(STEP));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_hold_time() {
        assert_eq!(parse(Some("ms=5")), Ok(Duration::from_millis(5)));
        assert_eq!(parse(Some("ms=0.5")), Ok(Duration::from_micros(500)));
        assert_eq!(parse(Some("us=5000")), Ok(Duration::from_millis(5)));
        for bad in [
            None,
            Some("ms=0"),
            Some("ms=x"),
            Some("size=1"),
            Some("ms=1e9"),
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
    }
}
