//! The HTTP service [`HttpSedaLayer`](crate::HttpSedaLayer) makes: rejections become 503s.

use std::pin::Pin;
use std::task::{Context, Poll, ready};

use http::{HeaderValue, Request, Response, StatusCode, header};
use pin_project_lite::pin_project;
use seda_control::{InvalidConfig, SharedRetryAfter};

use crate::admission::Ticket;
use crate::budget::{BudgetTimer, deadline_response};
use crate::classify::Classify;
use crate::classify::SingleClass;
use crate::form::{AnsweredFuture, Answering, AnsweringLayer, Cut, Form, Inner};
use crate::layer::SedaLayer;
use crate::service::Seda;

/// The header naming why a request was turned away (`queue_full`, `rate`, `class`, `limit`,
/// `expired`, [`DEADLINE`](crate::DEADLINE)) or cut ([`TERMINATED`], `deadline`), for clients
/// and logs.
pub const REJECT_HEADER: &str = "x-seda-reject";

/// The [`REJECT_HEADER`] value of a request the layer terminated (see
/// [`SedaLayer::terminate`](crate::SedaLayer::terminate)).
pub const TERMINATED: &str = "terminated";

/// [`SedaLayer`] for HTTP services: a rejected request is answered at once with `503 Service
/// Unavailable`, a `Retry-After` header and an `x-seda-reject` header naming the reason.
pub type HttpSedaLayer<C = SingleClass> = AnsweringLayer<C, HttpForm>;

impl<C> HttpSedaLayer<C> {
    /// Reads each request's deadline and works to it (see [`Deadlines`](crate::Deadlines)):
    /// the budget from `grpc-timeout` or [`DEADLINE_HEADER`](crate::DEADLINE_HEADER) (the
    /// stricter if both), or `deadlines`' default; a request whose budget is spent or below
    /// the 10th percentile of recent response times is answered `504` with `x-seda-reject:
    /// deadline` before the controller or the service sees it; an admitted request still
    /// running at its deadline has its inner future dropped and is answered the same way.
    /// The handler finds a [`RequestDeadline`](crate::RequestDeadline) in the request's
    /// extensions, to send the budget left to the next tier. Off unless asked.
    ///
    /// # Errors
    /// The default budget is zero or above [`MAX_BUDGET`](crate::MAX_BUDGET), or the layer
    /// (or a clone of it, which shares its state) already reads deadlines.
    pub fn deadlines(self, deadlines: crate::Deadlines) -> Result<Self, InvalidConfig> {
        deadlines.validate()?;
        let state = crate::budget::DeadlineState::new(deadlines);
        match self.inner.admission.deadlines.set(state) {
            Ok(()) => Ok(self),
            Err(_) => Err(InvalidConfig::new(
                "deadlines",
                "the layer already reads deadlines",
            )),
        }
    }
}

impl<C> SedaLayer<C> {
    /// The same layer answering rejected HTTP requests with `503` and `Retry-After` instead of
    /// an error: [`DEFAULT_RETRY_AFTER_S`](crate::DEFAULT_RETRY_AFTER_S) while refusals are few,
    /// stretched up to 24 x while the layer refuses more requests than it admits
    /// ([`seda_control::RetryAfter`]).
    pub fn http(self) -> HttpSedaLayer<C> {
        AnsweringLayer::new(self)
    }
}

/// An HTTP service behind admission control (made by [`HttpSedaLayer`](crate::HttpSedaLayer)).
pub type HttpSeda<S, C> = Answering<S, C, HttpForm>;

/// The response future of [`HttpSeda`]: a refusal's `503`, or the service's response unless
/// the request's deadline (a `504`) or the terminator (a `503` with [`TERMINATED`]) cuts it
/// first. [`AnsweredFuture::is_rejected`] tells a refusal.
pub type HttpResponseFuture<F, RB> = AnsweredFuture<F, RB, HttpForm>;

pin_project! {
    /// The HTTP form: a refusal is a `503` with `Retry-After`; an admitted request is watched
    /// for its deadline when the layer reads deadlines (a `504`), and a termination is a `503`
    /// with [`TERMINATED`].
    pub struct HttpForm {
        #[pin]
        budget: BudgetTimer,
        retry_after_s: u32,
    }
}

impl Form for HttpForm {
    const LAYER: &'static str = "HttpSedaLayer";
    const FUTURE: &'static str = "HttpResponseFuture";

    fn call<S: Inner<B, RB>, C: Classify<Request<B>>, B, RB: Default>(
        seda: &mut Seda<S, C>,
        retry: &SharedRetryAfter,
        mut request: Request<B>,
    ) -> AnsweredFuture<S::Future, RB, Self> {
        // One reading of the layer's clock for the door and the controller.
        let now = seda.admission.now();
        // The deadline first: a request that cannot finish in time costs the controller nothing.
        let budget = match seda.admission.deadlines.get() {
            None => None,
            Some(d) => match d.check(request.headers(), now) {
                Ok(budget) => budget,
                Err(_) => return AnsweredFuture::rejected(deadline_response()),
            },
        };
        if let Some(b) = budget {
            request.extensions_mut().insert(b);
        }
        let class = seda.classify.class(&request);
        match seda.admission.admit_at(now, class) {
            Ok(ticket) => {
                retry.admitted();
                let form = HttpForm {
                    budget: BudgetTimer::new(budget),
                    retry_after_s: retry.seconds(),
                };
                AnsweredFuture::admitted(seda.inner.call(request), ticket, form)
            }
            Err(reason) => AnsweredFuture::rejected(unavailable(reason.as_str(), retry.refused())),
        }
    }

    fn poll_deadline<RB: Default>(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<(Cut, Response<RB>)> {
        ready!(self.project().budget.poll_passed(cx));
        Poll::Ready((Cut::PastDeadline, deadline_response()))
    }

    fn terminated<RB: Default>(&self, _: Option<&Ticket>) -> Response<RB> {
        unavailable(TERMINATED, self.retry_after_s)
    }
}

/// `503 Service Unavailable` with `Retry-After` and the reason; the body is the response
/// type's default (empty for axum's and hyper's bodies). Built from parts rendered once: the
/// reason is a static header value and the `Retry-After` values a refusal can carry are
/// rendered at first use ([`retry_after_value`]), so a refusal formats nothing and allocates
/// only the response's header map.
fn unavailable<RB: Default>(reason: &'static str, retry_after_s: u32) -> Response<RB> {
    let mut response = Response::new(RB::default());
    *response.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
    let headers = response.headers_mut();
    headers.insert(header::RETRY_AFTER, retry_after_value(retry_after_s));
    headers.insert(REJECT_HEADER, HeaderValue::from_static(reason));
    response
}

/// `Retry-After` values rendered once: up to this many seconds (the stretched wait of
/// `SharedRetryAfter` stays within 24 x its base; a larger value is rendered per refusal).
const RENDERED_RETRY_AFTER: u32 = 600;

/// The header value of `seconds`, cloned (a reference count) from the ones rendered once.
fn retry_after_value(seconds: u32) -> HeaderValue {
    static RENDERED: std::sync::LazyLock<Vec<HeaderValue>> =
        std::sync::LazyLock::new(|| (0..=RENDERED_RETRY_AFTER).map(HeaderValue::from).collect());
    match RENDERED.get(seconds as usize) {
        Some(v) => v.clone(),
        None => HeaderValue::from(seconds),
    }
}
