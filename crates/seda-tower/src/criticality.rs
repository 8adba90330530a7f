//! Criticality at the edge and across tiers: [`CriticalityLayer`] decides each request's
//! [`Criticality`] where it can be trusted, puts it in the request's extensions and its
//! [`CRITICALITY_HEADER`], and [`SedaLayer::prioritized`] admits by it.
//!
//! Who decides: the edge, from what the client cannot forge (the route, the authenticated
//! session). A header from outside says what the client would like; honoured, every client
//! would call itself critical-plus. So the layer removes an incoming [`CRITICALITY_HEADER`]
//! unless told its caller is a trusted tier (another of your services, which set the header
//! at its own edge): [`CriticalityLayer::trust_header`], or per request
//! [`CriticalityLayer::trust_if`] (a proxy trusting some client addresses).
//!
//! How it travels: the request reaching your handler carries the [`Criticality`] in its
//! extensions (axum: `Extension<Criticality>`) and in the header; a handler's outgoing calls
//! copy it with [`forward_criticality`], so the next tier sheds the same requests first.
//!
//! ```
//! use std::time::Duration;
//! use axum::{Router, routing::get};
//! use seda_control::criticality::{Criticality, Level};
//! use seda_tower::{CriticalityLayer, SedaLayer};
//!
//! // Prefetch is sheddable, everything else critical (the default).
//! let edge = CriticalityLayer::new(|req: &http::Request<axum::body::Body>| {
//!     if req.uri().path().starts_with("/prefetch") {
//!         Criticality::new(Level::Sheddable)
//!     } else {
//!         Criticality::default()
//!     }
//! });
//! let app: Router = Router::new()
//!     .route("/", get(|| async { "hello" }))
//!     .layer(SedaLayer::prioritized(Duration::from_millis(200))?.http())
//!     .layer(edge); // outermost: it runs first
//! # let _ = app;
//! # Ok::<(), seda_control::InvalidConfig>(())
//! ```

use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime};

use http::{HeaderMap, HeaderValue, Request};
use seda_control::criticality::{
    Cohorts, Criticality, CriticalityConfig, CriticalityGate, InFlightBound,
};
use seda_control::{InvalidConfig, TunedConfig, TunedResponseTimeController};
use tower_layer::Layer;
use tower_service::Service;

use crate::admission::{DEFAULT_TICK, QueueModel};
use crate::classify::Classify;
use crate::layer::SedaLayer;

/// The header that carries a request's criticality between tiers: `critical`,
/// `sheddable_plus;cohort=5` (the forms of [`Criticality`]'s `Display` and `FromStr`).
pub const CRITICALITY_HEADER: &str = "x-seda-criticality";

/// Admits by the [`Criticality`] a [`CriticalityLayer`] put in the request's extensions
/// (critical when there is none): its [`Criticality::class`].
#[derive(Debug, Clone, Copy, Default)]
pub struct ByCriticality;

impl<B> Classify<Request<B>> for ByCriticality {
    fn class(&self, request: &Request<B>) -> u8 {
        criticality_of(request).class()
    }
}

/// The criticality of `request`: what a [`CriticalityLayer`] decided, or the default
/// (critical) if none ran.
pub fn criticality_of<B>(request: &Request<B>) -> Criticality {
    request
        .extensions()
        .get::<Criticality>()
        .copied()
        .unwrap_or_default()
}

/// Copies the criticality of the request being served (`incoming`: its extensions, as a
/// [`CriticalityLayer`] set them) into an outgoing call's headers, so the next tier sheds the
/// same requests first. A request no layer classified goes out as critical.
///
/// ```
/// use seda_control::criticality::{Criticality, Level};
/// let mut incoming = http::Request::new(());
/// incoming.extensions_mut().insert(Criticality::new(Level::Sheddable).with_cohort(3));
/// let mut outgoing = http::Request::new(());
/// seda_tower::forward_criticality(incoming.extensions(), outgoing.headers_mut());
/// assert_eq!(outgoing.headers()["x-seda-criticality"], "sheddable;cohort=3");
/// ```
pub fn forward_criticality(incoming: &http::Extensions, outgoing: &mut HeaderMap) {
    let c = incoming.get::<Criticality>().copied().unwrap_or_default();
    set_header(outgoing, c);
}

/// [`CRITICALITY_HEADER`] built once: a lookup or insert by `&str` parses the name each time.
static CRITICALITY_NAME: http::header::HeaderName =
    http::header::HeaderName::from_static(CRITICALITY_HEADER);

fn set_header(headers: &mut HeaderMap, c: Criticality) {
    // Without a cohort the value is the level's static name: no formatting, no copy (the
    // formatted form was 1,350 instructions and two allocations per proxied request).
    let value = match c.cohort {
        None => Some(HeaderValue::from_static(c.level.as_str())),
        // Display gives ASCII names and digits only: always a valid header value.
        Some(_) => HeaderValue::from_str(&c.to_string()).ok(),
    };
    if let Some(v) = value {
        headers.insert(&CRITICALITY_NAME, v);
    }
}

/// The longest header value read: the longest valid one is 23 bytes.
const MAX_HEADER_BYTES: usize = 64;

fn from_header(headers: &HeaderMap) -> Option<Criticality> {
    let v = headers.get(&CRITICALITY_NAME)?;
    if v.len() > MAX_HEADER_BYTES {
        return None;
    }
    v.to_str().ok()?.parse().ok()
}

type Decide<B> = Arc<dyn Fn(&Request<B>) -> Criticality + Send + Sync>;
type Trust<B> = Arc<dyn Fn(&Request<B>) -> bool + Send + Sync>;
type Key<B> = Arc<dyn Fn(&Request<B>) -> Option<Vec<u8>> + Send + Sync>;

/// Sets each request's [`Criticality`] at a trusted edge: the crate's README, *Criticality*,
/// says where the edge is and how levels travel.
pub struct CriticalityLayer<B> {
    decide: Decide<B>,
    trust: Trust<B>,
    cohorts: Option<(Cohorts, Key<B>)>,
}

impl<B> Clone for CriticalityLayer<B> {
    fn clone(&self) -> Self {
        CriticalityLayer {
            decide: Arc::clone(&self.decide),
            trust: Arc::clone(&self.trust),
            cohorts: self.cohorts.clone(),
        }
    }
}

impl<B> CriticalityLayer<B> {
    /// Decides each request's criticality with `decide` (from the route, the session); an
    /// incoming [`CRITICALITY_HEADER`] is removed unread.
    pub fn new(decide: impl Fn(&Request<B>) -> Criticality + Send + Sync + 'static) -> Self {
        CriticalityLayer {
            decide: Arc::new(decide),
            trust: Arc::new(|_| false),
            cohorts: None,
        }
    }

    /// Every request is `c` unless a trusted header says otherwise.
    pub fn fixed(c: Criticality) -> Self {
        Self::new(move |_| c)
    }

    /// The caller is a trusted tier: a valid incoming [`CRITICALITY_HEADER`] is honoured (an
    /// invalid one is removed and `decide` decides).
    pub fn trust_header(self) -> Self {
        self.trust_if(|_| true)
    }

    /// Honours an incoming [`CRITICALITY_HEADER`] on the requests `trusted` accepts (by the
    /// peer's address, a client certificate...), removes it from the others.
    pub fn trust_if(self, trusted: impl Fn(&Request<B>) -> bool + Send + Sync + 'static) -> Self {
        CriticalityLayer {
            trust: Arc::new(trusted),
            ..self
        }
    }

    /// Puts each request whose `key` (a user or session id) is known, and whose criticality
    /// has no cohort yet, in its cohort of `cohorts` at the current wall-clock time (every tier
    /// computes the same cohort for the same user).
    pub fn cohorts(
        self,
        cohorts: Cohorts,
        key: impl Fn(&Request<B>) -> Option<Vec<u8>> + Send + Sync + 'static,
    ) -> Self {
        CriticalityLayer {
            cohorts: Some((cohorts, Arc::new(key))),
            ..self
        }
    }

    /// The criticality of `request` as this layer decides it; sets it in the extensions and
    /// the header.
    pub fn apply(&self, request: &mut Request<B>) -> Criticality {
        let trusted = if (self.trust)(request) {
            from_header(request.headers())
        } else {
            None
        };
        let mut c = trusted.unwrap_or_else(|| (self.decide)(request));
        if let (None, Some((cohorts, key))) = (c.cohort, &self.cohorts)
            && let Some(k) = key(request)
        {
            let now = SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .unwrap_or(Duration::ZERO);
            c = c.with_cohort(cohorts.of(&k, now));
        }
        request.extensions_mut().insert(c);
        set_header(request.headers_mut(), c);
        c
    }
}

impl<B> std::fmt::Debug for CriticalityLayer<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CriticalityLayer")
            .field("cohorts", &self.cohorts.as_ref().map(|(c, _)| c))
            .finish_non_exhaustive()
    }
}

impl<S, B> Layer<S> for CriticalityLayer<B> {
    type Service = SetCriticality<S, B>;

    fn layer(&self, inner: S) -> Self::Service {
        SetCriticality {
            inner,
            layer: self.clone(),
        }
    }
}

/// The service [`CriticalityLayer`] makes.
pub struct SetCriticality<S, B> {
    inner: S,
    layer: CriticalityLayer<B>,
}

impl<S: Clone, B> Clone for SetCriticality<S, B> {
    fn clone(&self) -> Self {
        SetCriticality {
            inner: self.inner.clone(),
            layer: self.layer.clone(),
        }
    }
}

impl<S, B> Service<Request<B>> for SetCriticality<S, B>
where
    S: Service<Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request<B>) -> Self::Future {
        self.layer.apply(&mut request);
        self.inner.call(request)
    }
}

impl SedaLayer<ByCriticality> {
    /// Our controller aimed at a p90 `target` (as [`SedaLayer::response_time`], without its
    /// standing-queue trimming) behind a
    /// [`CriticalityGate`] with its defaults: sheddable requests cut first, cohort by cohort,
    /// then sheddable-plus, then critical, as the requests in flight fill the controller's
    /// bound; critical-plus only by the bound itself. Put a [`CriticalityLayer`] outside it.
    ///
    /// # Errors
    /// `target` is zero.
    pub fn prioritized(target: Duration) -> Result<Self, InvalidConfig> {
        Self::prioritized_with(target, CriticalityConfig::default())
    }

    /// [`prioritized`](Self::prioritized) with the gate's bands, cohorts and floor of `cfg`.
    ///
    /// # Errors
    /// `target` is zero or `cfg` does not validate.
    pub fn prioritized_with(
        target: Duration,
        cfg: CriticalityConfig,
    ) -> Result<Self, InvalidConfig> {
        // Untrimmed: the trimmed controller shrinks its bound to its minimum while the
        // requests in flight never all finish, which under overload they never do; a bound at
        // the minimum leaves the gate no room to keep for the higher levels.
        let inner = TunedResponseTimeController::new(TunedConfig {
            drop_queued: None,
            trim: false,
            ..TunedConfig::new(target)
        })?;
        Ok(Self::gated(CriticalityGate::new(inner, cfg)?))
    }

    /// A layer admitting through `gate` (over any [`InFlightBound`] controller); the requests
    /// in flight in the service are the inner controller's queue ([`QueueModel::InFlight`]).
    pub fn gated<C: InFlightBound + 'static>(gate: CriticalityGate<C>) -> Self {
        SedaLayer::from_box(Box::new(gate), DEFAULT_TICK, QueueModel::InFlight)
            .classify(ByCriticality)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use seda_control::criticality::Level;

    fn req(header: Option<&str>) -> Request<()> {
        let mut r = Request::new(());
        if let Some(h) = header {
            r.headers_mut()
                .insert(CRITICALITY_HEADER, HeaderValue::from_str(h).unwrap());
        }
        r
    }

    #[test]
    fn an_untrusted_header_is_replaced_by_the_edges_decision() {
        let layer = CriticalityLayer::fixed(Criticality::new(Level::Sheddable));
        let mut r = req(Some("critical_plus"));
        assert_eq!(layer.apply(&mut r).level, Level::Sheddable);
        assert_eq!(r.headers()[CRITICALITY_HEADER], "sheddable");
        assert_eq!(criticality_of(&r).level, Level::Sheddable);
    }

    #[test]
    fn a_trusted_header_is_honoured_and_a_bad_one_ignored() {
        let layer = CriticalityLayer::fixed(Criticality::new(Level::Sheddable)).trust_header();
        let mut r = req(Some("critical_plus;cohort=2"));
        assert_eq!(
            layer.apply(&mut r),
            Criticality::new(Level::CriticalPlus).with_cohort(2)
        );
        let mut r = req(Some("urgent"));
        assert_eq!(layer.apply(&mut r).level, Level::Sheddable);
        assert_eq!(r.headers()[CRITICALITY_HEADER], "sheddable");
        let long = format!("critical{}", " ".repeat(100));
        let mut r = req(Some(&long));
        assert_eq!(layer.apply(&mut r).level, Level::Sheddable);
    }

    #[test]
    fn cohorts_come_from_the_key_and_a_request_without_one_has_none() {
        let layer = CriticalityLayer::fixed(Criticality::new(Level::Sheddable)).cohorts(
            Cohorts::new(8, Duration::from_secs(60)).unwrap(),
            |r: &Request<()>| r.headers().get("x-user").map(|v| v.as_bytes().to_vec()),
        );
        let mut r = req(None);
        assert_eq!(layer.apply(&mut r).cohort, None);
        r.headers_mut()
            .insert("x-user", HeaderValue::from_static("alice"));
        let c = layer.apply(&mut r).cohort.unwrap();
        assert!(c < 8);
    }

    #[test]
    fn without_a_layer_a_request_is_critical() {
        assert_eq!(criticality_of(&req(None)), Criticality::default());
        let mut out = HeaderMap::new();
        forward_criticality(req(None).extensions(), &mut out);
        assert_eq!(out[CRITICALITY_HEADER], "critical");
    }
}
