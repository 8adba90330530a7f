//! The HTTP service [`HttpSedaLayer`](crate::HttpSedaLayer) makes: rejections become 503s.

use std::pin::Pin;
use std::task::{Context, Poll, ready};

use http::{HeaderValue, Request, Response, StatusCode, header};
use pin_project_lite::pin_project;
use seda_control::SharedRetryAfter;
use tower_service::Service;

use crate::admission::Ticket;
use crate::answered::{AnsweredFuture, Cut, Watch};
use crate::budget::{BudgetTimer, deadline_response};
use crate::classify::Classify;
use crate::deadline::Deadline;
use crate::service::Seda;

/// The header naming why a request was turned away (`queue_full`, `rate`, `class`, `limit`,
/// `expired`, [`DEADLINE`](crate::DEADLINE)) or cut ([`TERMINATED`], `deadline`), for clients
/// and logs.
pub const REJECT_HEADER: &str = "x-seda-reject";

/// The [`REJECT_HEADER`] value of a request the layer terminated (see
/// [`SedaLayer::terminate`](crate::SedaLayer::terminate)).
pub const TERMINATED: &str = "terminated";

/// An HTTP service behind admission control (made by [`HttpSedaLayer`](crate::HttpSedaLayer)).
#[derive(Clone)]
pub struct HttpSeda<S, C> {
    seda: Seda<S, C>,
    retry: SharedRetryAfter,
}

impl<S, C> HttpSeda<S, C> {
    pub(crate) fn new(seda: Seda<S, C>, retry: SharedRetryAfter) -> Self {
        HttpSeda { seda, retry }
    }
}

impl<S, C, B, RB> Service<Request<B>> for HttpSeda<S, C>
where
    S: Service<Request<B>, Response = Response<RB>>,
    RB: Default,
    C: Classify<Request<B>>,
{
    type Response = Response<RB>;
    type Error = S::Error;
    type Future = HttpResponseFuture<S::Future, RB>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.seda.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request<B>) -> Self::Future {
        // One reading of the layer's clock for the door and the controller.
        let now = self.seda.admission.now();
        // The deadline first: a request that cannot finish in time costs the controller nothing.
        let budget = match self.seda.admission.deadlines.get() {
            None => None,
            Some(d) => match d.check(request.headers(), now) {
                Ok(budget) => budget,
                Err(_) => return AnsweredFuture::rejected(deadline_response()),
            },
        };
        if let Some(b) = budget {
            request.extensions_mut().insert(b);
        }
        let class = self.seda.classify.class(&request);
        match self.seda.admission.admit_at(now, class) {
            Ok(ticket) => {
                self.retry.admitted();
                let watch = HttpWatch {
                    deadline: Deadline::new(),
                    budget: BudgetTimer::new(budget),
                    retry_after_s: self.retry.seconds(),
                };
                AnsweredFuture::admitted(self.seda.inner.call(request), ticket, watch)
            }
            Err(reason) => {
                AnsweredFuture::rejected(unavailable(reason.as_str(), self.retry.refused()))
            }
        }
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

/// The response future of [`HttpSeda`]: a refusal's `503`, or the service's response unless
/// the request's deadline (a `504`) or the terminator (a `503` with [`TERMINATED`]) cuts it
/// first.
pub type HttpResponseFuture<F, RB> = AnsweredFuture<F, RB, HttpWatch>;

pin_project! {
    /// What the HTTP form watches an admitted request for: its deadline (when the layer reads
    /// deadlines), then the terminator's threshold.
    pub struct HttpWatch {
        #[pin]
        deadline: Deadline,
        #[pin]
        budget: BudgetTimer,
        retry_after_s: u32,
    }
}

impl<RB: Default> Watch<RB> for HttpWatch {
    const FUTURE: &'static str = "HttpResponseFuture";

    fn poll_cut(
        self: Pin<&mut Self>,
        ticket: &Ticket,
        cx: &mut Context<'_>,
    ) -> Poll<(Cut, Response<RB>)> {
        let this = self.project();
        if this.budget.poll_passed(cx).is_ready() {
            return Poll::Ready((Cut::PastDeadline, deadline_response()));
        }
        ready!(this.deadline.poll_expired(ticket, cx));
        Poll::Ready((
            Cut::Terminated,
            unavailable(TERMINATED, *this.retry_after_s),
        ))
    }
}
