//! What stands in front of the page: nothing, tower's own `ConcurrencyLimit` + `LoadShed`, one
//! of the registry's adaptive load-shedding crates, or seda's layer. Each is configured as its
//! documentation says a user should, with the choices stated here and in the scenario's
//! report.
//!
//! Every variant wraps the page's router into one service, built once, that every connection
//! clones ([`shared`]): a clone of each of these services shares its limiter (an `Arc`), so
//! all connections see one limit. That is how their users should deploy them. The pitfall,
//! as issue 54 reports it: with axum's `Router::layer` and `axum::serve`, a fresh copy of the
//! layered service was built per connection, so a layer that keeps its state in the *service*
//! (tower's `ConcurrencyLimit`, and the crates below) limited each connection separately.
//! This binary never layers the router that way, and does not test that report; ours keeps its
//! state in the layer, so either way is the same for it.

use std::convert::Infallible;
use std::str::FromStr;
use std::time::Duration;

use axum::Router;
use axum::error_handling::HandleErrorLayer;
use axum::extract::Request;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use tower::ServiceBuilder;
use tower::util::BoxCloneSyncService;

/// The page behind its front, as one service every connection clones.
pub type Shared = BoxCloneSyncService<Request, Response, Infallible>;

/// What stands in front of the page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    /// Nothing.
    Bare,
    /// tower's `ConcurrencyLimit(N)` under `LoadShed`.
    Limit(usize),
    /// `little-loadshedder`: Little's law on a mean-latency target.
    Little,
    /// `tower-acc` with one of its algorithms at its defaults, under tower's `LoadShed`.
    Acc(Algorithm),
    /// `tower-resilience-adaptive` with one of its algorithms, under tower's `LoadShed`.
    Resilience(Algorithm),
    /// Ours: `SedaLayer::response_time(target)`.
    Seda,
}

/// The algorithms both adaptive crates offer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algorithm {
    /// Additive increase, multiplicative decrease.
    Aimd,
    /// Queue depth from the RTT over the least RTT seen.
    Vegas,
    /// Netflix's Gradient2: short-term RTT against a smoothed long-term one.
    Gradient2,
}

const MODES: &str = "bare, limit:N (N >= 1), little, acc-aimd, acc-vegas, acc-gradient2, \
                     res-aimd, res-vegas, res-gradient2 or seda";

impl FromStr for Variant {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let algorithm = |a: &str| match a {
            "aimd" => Some(Algorithm::Aimd),
            "vegas" => Some(Algorithm::Vegas),
            "gradient2" => Some(Algorithm::Gradient2),
            _ => None,
        };
        let v = match s {
            "bare" => Some(Variant::Bare),
            "little" => Some(Variant::Little),
            "seda" => Some(Variant::Seda),
            _ => {
                if let Some(n) = s.strip_prefix("limit:") {
                    n.parse().ok().filter(|n| *n > 0).map(Variant::Limit)
                } else if let Some(a) = s.strip_prefix("acc-") {
                    algorithm(a).map(Variant::Acc)
                } else if let Some(a) = s.strip_prefix("res-") {
                    algorithm(a).map(Variant::Resilience)
                } else {
                    None
                }
            }
        };
        v.ok_or_else(|| format!("`{s}` is not a mode: {MODES}"))
    }
}

/// The 503 every peer answers a shed request with, as ours does (`Retry-After: 1`).
fn shed() -> Response {
    (
        StatusCode::SERVICE_UNAVAILABLE,
        [(header::RETRY_AFTER, "1")],
    )
        .into_response()
}

/// tower's idiom for a limiter that waits for a permit in `poll_ready`: `LoadShed` turns "not
/// ready" into an error and `HandleErrorLayer` answers it with a 503 (tower#793: users want
/// rejection, not queueing).
macro_rules! shed_when_not_ready {
    ($limiter:expr, $page:expr) => {
        BoxCloneSyncService::new(
            ServiceBuilder::new()
                .layer(HandleErrorLayer::new(|_: tower::BoxError| async { shed() }))
                .load_shed()
                .layer($limiter)
                .service($page),
        )
    };
}

/// `page` behind `variant`, for a reply within `target`.
///
/// # Errors
///
/// A configuration a crate refuses (none of the defaults chosen here should be).
pub fn shared(variant: Variant, target: Duration, page: Router) -> anyhow::Result<Shared> {
    use tower_acc as acc;
    use tower_resilience_adaptive as res;
    let invalid = |crate_name: &str, e: &dyn std::fmt::Display| {
        anyhow::anyhow!("{crate_name} refused its configuration: {e}")
    };
    Ok(match variant {
        Variant::Bare => BoxCloneSyncService::new(page),
        Variant::Limit(n) => {
            shed_when_not_ready!(tower::limit::ConcurrencyLimitLayer::new(n), page)
        }
        // Its docs: a target *mean* latency and an EWMA parameter (its example: 0.01). A reply
        // within `target` for nine in ten requests is a mean near half of it at exponential
        // service times, so the mean asked for is target / 2.
        Variant::Little => BoxCloneSyncService::new(
            ServiceBuilder::new()
                .map_response(
                    |r: little_loadshedder::LoadShedResponse<Response>| match r {
                        little_loadshedder::LoadShedResponse::Inner(r) => r,
                        little_loadshedder::LoadShedResponse::Overload => shed(),
                    },
                )
                .layer(little_loadshedder::LoadShedLayer::new(0.01, target / 2))
                .service(page),
        ),
        // Its README's usage: `ConcurrencyLimitLayer::new(Vegas::default())`, each algorithm
        // at its `Default`.
        Variant::Acc(Algorithm::Aimd) => {
            shed_when_not_ready!(acc::ConcurrencyLimitLayer::new(acc::Aimd::default()), page)
        }
        Variant::Acc(Algorithm::Vegas) => {
            shed_when_not_ready!(acc::ConcurrencyLimitLayer::new(acc::Vegas::default()), page)
        }
        Variant::Acc(Algorithm::Gradient2) => {
            shed_when_not_ready!(
                acc::ConcurrencyLimitLayer::new(acc::Gradient2::default()),
                page
            )
        }
        // Its docs' builders at their defaults; AIMD's latency threshold (default 100 ms) is
        // the one figure its docs ask for, and a user with a target sets it to the target.
        Variant::Resilience(Algorithm::Aimd) => {
            let a = res::Aimd::builder()
                .latency_threshold(target)
                .build()
                .map_err(|e| invalid("tower-resilience-adaptive", &e))?;
            shed_when_not_ready!(res::AdaptiveLimiterLayer::new(a), page)
        }
        Variant::Resilience(Algorithm::Vegas) => {
            let a = res::Vegas::builder()
                .build()
                .map_err(|e| invalid("tower-resilience-adaptive", &e))?;
            shed_when_not_ready!(res::AdaptiveLimiterLayer::new(a), page)
        }
        Variant::Resilience(Algorithm::Gradient2) => {
            let a = res::Gradient2::builder()
                .build()
                .map_err(|e| invalid("tower-resilience-adaptive", &e))?;
            shed_when_not_ready!(res::AdaptiveLimiterLayer::new(a), page)
        }
        Variant::Seda => {
            let layer = seda_tower::SedaLayer::response_time(target)
                .map_err(|e| invalid("seda-tower", &e))?
                .http();
            BoxCloneSyncService::new(
                ServiceBuilder::new()
                    .map_response(IntoResponse::into_response)
                    .layer(layer)
                    .service(page),
            )
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_and_bad_ones_list_the_good_ones() {
        assert_eq!("limit:12".parse(), Ok(Variant::Limit(12)));
        assert_eq!("acc-vegas".parse(), Ok(Variant::Acc(Algorithm::Vegas)));
        assert_eq!(
            "res-gradient2".parse(),
            Ok(Variant::Resilience(Algorithm::Gradient2))
        );
        for bad in ["limit:0", "limit:x", "acc-", "res-cubic", "fast"] {
            let e = bad.parse::<Variant>().unwrap_err();
            assert!(e.contains("acc-vegas"), "{bad}: {e}");
        }
    }
}
