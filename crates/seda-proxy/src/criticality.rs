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

use crate::forward::ClientAddr;

/// The edge of one route: `route`'s criticality, or the header of a client in `trusted`.
pub(crate) fn edge(route: Criticality, trusted: Arc<[IpAddr]>) -> CriticalityLayer<Incoming> {
    CriticalityLayer::fixed(route).trust_if(move |req| {
        req.extensions()
            .get::<ClientAddr>()
            .is_some_and(|a| trusted.contains(&a.0.ip()))
    })
}
