//! `POST /_seda/target?p90_ms=N`: the operator changes global control's p90 target while the
//! service runs (FAIR07 Figure 5-7), through [`seda::Runtime::set_response_target`].
//!
//! On the admin address, like Envoy's `POST /runtime_modify`: loopback by default, so only the
//! operator reaches it. The answer is global control's state after the change (JSON); `400` for
//! a missing or non-positive `p90_ms`, `409` when the runtime has no global control
//! (`[runtime.global]`), `404` when the admin address shows no runtime, `403` for a request
//! carrying `Origin` (a web page's cross-site POST: the admin address takes none).

use std::time::Duration;

use http::StatusCode;

use super::{AdminSources, json, not_found, respond};
use crate::body::Body;

/// The path.
pub(super) const PATH: &str = "/_seda/target";

/// Handles a `POST` to [`PATH`] with `query`.
pub(super) fn set(src: &AdminSources, query: Option<&str>) -> http::Response<Body> {
    let Some(rt) = &src.runtime else {
        return not_found();
    };
    let Some(ms) = p90_ms(query) else {
        return text(
            StatusCode::BAD_REQUEST,
            "give the new target as p90_ms=N, N > 0 (POST /_seda/target?p90_ms=500)\n",
        );
    };
    if !rt.set_response_target(Duration::from_millis(ms)) {
        return text(
            StatusCode::CONFLICT,
            "this runtime has no global control: configure [runtime.global] to set a target\n",
        );
    }
    json(&serde_json::to_value(rt.stats().global).unwrap_or_default())
}

fn text(status: StatusCode, body: &'static str) -> http::Response<Body> {
    respond(status, "text/plain; charset=utf-8", body)
}

/// `p90_ms=N` (N > 0) from a query string.
fn p90_ms(query: Option<&str>) -> Option<u64> {
    query?
        .split('&')
        .find_map(|kv| kv.strip_prefix("p90_ms="))?
        .parse()
        .ok()
        .filter(|&ms| ms > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_positive_p90_ms_and_nothing_else() {
        assert_eq!(p90_ms(Some("p90_ms=500")), Some(500));
        assert_eq!(p90_ms(Some("x=1&p90_ms=20")), Some(20));
        assert_eq!(p90_ms(Some("p90_ms=0")), None);
        assert_eq!(p90_ms(Some("p90_ms=-3")), None);
        assert_eq!(p90_ms(Some("p90=5")), None);
        assert_eq!(p90_ms(None), None);
    }

    #[test]
    fn without_a_runtime_the_path_is_not_found_and_without_global_control_it_conflicts() {
        let none = set(&AdminSources::default(), Some("p90_ms=5"));
        assert_eq!(none.status(), StatusCode::NOT_FOUND);
        let rt = seda::Runtime::builder().start().expect("runtime");
        let src = AdminSources {
            runtime: Some(rt.clone()),
            ..AdminSources::default()
        };
        assert_eq!(set(&src, Some("p90_ms=5")).status(), StatusCode::CONFLICT);
        assert_eq!(set(&src, Some("nope")).status(), StatusCode::BAD_REQUEST);
        let global = seda::Runtime::builder()
            .global(seda::GlobalControlConfig::new(
                Duration::from_secs(1),
                "entry",
            ))
            .start()
            .expect("runtime with global control");
        let src = AdminSources {
            runtime: Some(global.clone()),
            ..AdminSources::default()
        };
        assert_eq!(set(&src, Some("p90_ms=250")).status(), StatusCode::OK);
        assert_eq!(global.stats().global.map(|g| g.target_p90_s), Some(0.25));
    }
}
