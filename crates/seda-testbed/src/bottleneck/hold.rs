//! `GET /hold?ms=N` (or `us=N`, as `seda load --synthetic` sends): the synthetic sized request of the early-termination experiments
//! (SERT06's "5 ms and 500 ms" request types, its ranking and index-matching services).
//!
//! It holds a worker of the stage for `N` ms, sleeping in steps of [`STEP`] and checking its
//! cancel token at each (a safe point), as a request waiting on an index server would: its cost
//! is a worker's time, not the CPU, so the stage's capacity is `threads / mean N` whatever
//! else runs on the machine, and the experiments' loads can be sized exactly. A terminated
//! request is given up unanswered; the front end answers it 503 with `x-seda-reject:
//! terminated`.
//!
//! `&cores=C` makes `N` ms of work on `C` emulated cores instead: while more than `C` such
//! requests hold workers at once, each progresses at `C / holding` of real time, so running
//! times grow with the busy workers as on SERT06's machines (many workers sharing few cores;
//! `seda sim sert-threshold`'s `Contention::backend`). The capacity is then `C / mean N`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use http::StatusCode;
use seda::Meta;

use seda_http::Body;
use seda_http::text;

/// Time between two safe points: far below any termination threshold or control tick worth
/// having, and long enough that a 5 ms request is one sleep (a loaded machine delays every
/// wake-up; fewer of them keep a hold close to its time).
pub const STEP: Duration = Duration::from_millis(5);

/// Longest hold a request may ask for.
pub const MAX_MS: u64 = 600_000;

/// Most emulated cores a hold may ask for.
pub const MAX_CORES: f64 = 1024.0;

/// What a hold asks for: its time, and the emulated cores it shares (none: a plain wait).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Hold {
    pub(crate) time: Duration,
    pub(crate) cores: Option<f64>,
}

/// Reads `ms=N` or `us=N` (at most [`MAX_MS`] ms, more than 0) and an optional `cores=C`;
/// anything else is an error message for a 400.
pub(crate) fn parse(query: Option<&str>) -> Result<Hold, String> {
    let mut ms = None;
    let mut cores = None;
    for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
        let (unit, v) = match pair.split_once('=') {
            Some(("ms", v)) => (1.0, v),
            Some(("us", v)) => (1e-3, v),
            Some(("cores", v)) => match v.parse::<f64>() {
                Ok(c) if (1.0..=MAX_CORES).contains(&c) => {
                    cores = Some(c);
                    continue;
                }
                _ => return Err(format!("cores must be in [1, {MAX_CORES}], got `{pair}`")),
            },
            _ => {
                return Err(format!(
                    "unknown parameter `{pair}`; give `ms` or `us`, and optionally `cores`"
                ));
            }
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
    let time = ms
        .map(|x| Duration::from_secs_f64(x / 1000.0))
        .ok_or_else(|| "give the time to hold: /hold?ms=N".to_string())?;
    Ok(Hold { time, cores })
}

/// Counts a hold among those sharing the emulated cores while it lives.
struct Holding<'a>(&'a AtomicUsize);

impl<'a> Holding<'a> {
    fn enter(n: &'a AtomicUsize) -> Self {
        n.fetch_add(1, Ordering::AcqRel);
        Holding(n)
    }
}

impl Drop for Holding<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Holds for `hold`, checking `meta`'s token every [`STEP`]; `None` if the request was cut
/// or its client left (give it up unanswered). `holding` counts the holds on emulated cores
/// now running in this service.
pub(crate) fn hold(meta: &Meta, hold: Hold, holding: &AtomicUsize) -> Option<http::Response<Body>> {
    let _on_cores = hold.cores.map(|_| Holding::enter(holding));
    let mut done = Duration::ZERO;
    loop {
        meta.cancel_token().checkpoint().ok()?;
        let left = hold.time.saturating_sub(done);
        if left.is_zero() {
            return Some(text(StatusCode::OK, "held\n"));
        }
        // The share of a core this hold gets over the next step: all of one while the holds
        // fit the cores, `cores / holding` when more share them.
        let share = hold.cores.map_or(1.0, |c| {
            (c / holding.load(Ordering::Acquire).max(1) as f64).min(1.0)
        });
        let t = Instant::now();
        std::thread::sleep(left.div_f64(share).min(STEP));
        done += t.elapsed().mul_f64(share);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_hold_time() {
        let t = |q| parse(Some(q)).map(|h| h.time);
        assert_eq!(t("ms=5"), Ok(Duration::from_millis(5)));
        assert_eq!(t("ms=0.5"), Ok(Duration::from_micros(500)));
        assert_eq!(t("us=5000"), Ok(Duration::from_millis(5)));
        assert_eq!(parse(Some("ms=5")).map(|h| h.cores), Ok(None));
        assert_eq!(
            parse(Some("us=5000&cores=2")).map(|h| h.cores),
            Ok(Some(2.0))
        );
        for bad in [
            None,
            Some("ms=0"),
            Some("ms=x"),
            Some("size=1"),
            Some("ms=1e9"),
            Some("ms=5&cores=0.5"),
            Some("cores=2"),
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn holds_on_emulated_cores_share_them() {
        // Four holds of 50 ms of work on one emulated core: 200 ms of work in all, so the
        // last one ends at least 150 ms after they started (a lower bound: a loaded machine
        // only delays them further), and the count of holds is back to zero after.
        let holding = AtomicUsize::new(0);
        let h = Hold {
            time: Duration::from_millis(50),
            cores: Some(1.0),
        };
        let start = Instant::now();
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| assert!(hold(&Meta::new(), h, &holding).is_some()));
            }
        });
        assert!(
            start.elapsed() >= Duration::from_millis(150),
            "{:?}",
            start.elapsed()
        );
        assert_eq!(holding.load(Ordering::SeqCst), 0);
    }
}
