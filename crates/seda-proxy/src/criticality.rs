//! Criticality at the proxy: each route gives its requests a criticality
//! (`criticality = "sheddable"` in the route's TOML; critical by default) and the proxy
//! forwards it to the upstream in `x-seda-criticality`, so the tiers behind shed the same
//! requests first.
//!
//! A client's own `x-seda-criticality` is a wish, not a fact: the proxy removes it and puts the
//! route's in its place, unless the client's address is one of `trusted_tiers` (our own front
//! tiers, which set the header at their edge). When the proxy trusts some tier, the requests on
//! one route may carry several levels, and a route with a `target_ms` admits them through
//! `seda_tower`'s criticality gate ([`SedaLayer::prioritized`](seda_tower::SedaLayer)):
//! sheddable first, critical last.

use std::net::IpAddr;
use std::sync::Arc;

use hyper::body::Incoming;
use seda_tower::{Criticality, CriticalityLayer};

use crate::config::ConfigError;
use crate::forward::ClientAddr;

/// The route `prefix`'s criticality from its configuration text (critical when absent).
pub(crate) fn parse(prefix: &str, text: Option<&str>) -> Result<Criticality, ConfigError> {
    text.map_or(Ok(Criticality::default()), |t| {
        t.parse()
            .map_err(|e| ConfigError::Invalid(format!("route {prefix:?}: {e}")))
    })
}

/// The edge of one route: `route`'s criticality, or the header of a client in `trusted`.
pub(crate) fn edge(route: Criticality, trusted: Arc<[IpAddr]>) -> CriticalityLayer<Incoming> {
    CriticalityLayer::fixed(route).trust_if(move |req| {
        req.extensions()
            .get::<ClientAddr>()
            .is_some_and(|a| trusted.contains(&a.0.ip()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use seda_tower::Level;

    #[test]
    fn a_route_names_its_level_or_is_told_what_is_wrong() {
        assert_eq!(parse("/", None).unwrap(), Criticality::default());
        assert_eq!(
            parse("/", Some("sheddable_plus")).unwrap().level,
            Level::SheddablePlus
        );
        let e = parse("/x", Some("urgent")).unwrap_err().to_string();
        assert!(e.contains("\"/x\"") && e.contains("sheddable"), "{e}");
    }
}
