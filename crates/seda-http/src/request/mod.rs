//! The event the front end hands to a stage graph, and the way back.

pub use crate::wire::RequestHead;

use std::sync::Arc;

use bytes::Bytes;
use http::header::{CONTENT_LENGTH, CONTENT_TYPE, HeaderValue, RETRY_AFTER};
use http::{Response, StatusCode};
use http_body_util::Full;
use seda::{Event, Meta};
use tokio::sync::oneshot;

use crate::body::Body;
use crate::wire::Prepared;

/// One parsed HTTP request travelling through the stages.
///
/// Its [`Meta`] was born when hyper finished parsing the head; its token is cancelled when the
/// client disconnects before the answer. Exactly one answer goes back through
/// [`reply`](Self::reply); dropping the request unanswered makes the front end send a 503.
#[derive(Debug)]
pub struct HttpRequest {
    /// Request metadata (birth, class, cancellation).
    pub meta: Meta,
    /// Method, URI, version and headers.
    pub head: RequestHead,
    /// The whole body (bounded by `max_body_bytes`).
    pub body: Bytes,
    reply: Reply,
}

impl Event for HttpRequest {
    fn meta(&self) -> Option<&Meta> {
        Some(&self.meta)
    }
}

/// What goes back to the front end for a request.
#[derive(Debug)]
pub enum Answer {
    /// A response; boxed, so that an answer is two words wherever it moves (the reply channel,
    /// the front end's futures): a static hit's [`Answer::Prepared`] moved 144 bytes about six
    /// times per request for this variant's sake.
    Response(Box<Response<Body>>),
    /// A `200 OK` prepared once (a static cache hit): the fast path writes its pre-rendered
    /// head without building a response; hyper's path gets [`Prepared::response`].
    Prepared {
        /// The answer.
        prepared: Arc<Prepared>,
        /// Without the body (a HEAD request).
        head_only: bool,
    },
}

impl Answer {
    /// The answer as a response.
    pub fn into_response(self) -> Response<Body> {
        match self {
            Answer::Response(r) => *r,
            Answer::Prepared {
                prepared,
                head_only,
            } => prepared.response(head_only),
        }
    }

    /// The answer's status.
    pub fn status(&self) -> StatusCode {
        match self {
            Answer::Response(r) => r.status(),
            Answer::Prepared { .. } => StatusCode::OK,
        }
    }
}

impl From<Response<Body>> for Answer {
    fn from(r: Response<Body>) -> Self {
        Answer::Response(Box::new(r))
    }
}

/// Where the answer to a request goes.
#[derive(Debug)]
pub struct Reply(oneshot::Sender<Answer>);

impl Reply {
    /// A reply slot and the receiver the front end awaits.
    pub fn channel() -> (Reply, oneshot::Receiver<Answer>) {
        let (tx, rx) = oneshot::channel();
        (Reply(tx), rx)
    }

    /// Sends the answer; false if nobody waits any more (the client went away).
    pub fn send(self, answer: impl Into<Answer>) -> bool {
        self.0.send(answer.into()).is_ok()
    }
}

impl HttpRequest {
    /// A request event (the front end builds these; tests and other front ends may too).
    pub fn new(meta: Meta, head: RequestHead, body: Bytes, reply: Reply) -> Self {
        HttpRequest {
            meta,
            head,
            body,
            reply,
        }
    }

    /// Answers the request; false if the client went away.
    pub fn respond(self, response: impl Into<Answer>) -> bool {
        self.reply.send(response)
    }

    /// Splits the request into its parts and its reply slot.
    pub fn into_parts(self) -> (Meta, RequestHead, Bytes, Reply) {
        (self.meta, self.head, self.body, self.reply)
    }
}

/// A short plain-text response.
pub fn text(status: StatusCode, body: &'static str) -> Response<Body> {
    let mut r = Response::new(Full::new(Bytes::from_static(body.as_bytes())));
    *r.status_mut() = status;
    let h = r.headers_mut();
    h.insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    h.insert(CONTENT_LENGTH, HeaderValue::from(body.len()));
    r
}

/// The answer to a request the service could not admit: 503, `Retry-After`, a short body.
pub fn overloaded(retry_after_s: u32) -> Response<Body> {
    let mut r = text(
        StatusCode::SERVICE_UNAVAILABLE,
        "503 Service Unavailable: the service is overloaded, retry later.\n",
    );
    r.headers_mut()
        .insert(RETRY_AFTER, HeaderValue::from(retry_after_s));
    r
}

/// The header naming why a request was not served (`overloaded`, `terminated`...), as
/// `seda-tower` and the mail service name it.
pub const REASON_HEADER: &str = "x-seda-reject";

/// The answer to a request the stage's terminator cut (SERT06): 503, `Retry-After`, and
/// `x-seda-reject: terminated`, so a client can tell it from an unadmitted request.
pub fn terminated(retry_after_s: u32) -> Response<Body> {
    let mut r = text(
        StatusCode::SERVICE_UNAVAILABLE,
        "503 Service Unavailable: the request ran too long while the service was overloaded \
         and was terminated; retry later.\n",
    );
    let h = r.headers_mut();
    h.insert(RETRY_AFTER, HeaderValue::from(retry_after_s));
    h.insert(REASON_HEADER, HeaderValue::from_static("terminated"));
    r
}
