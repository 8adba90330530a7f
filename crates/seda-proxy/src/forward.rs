//! Forwarding one request to its upstream: the URI rewritten, hop-by-hop headers removed,
//! `X-Forwarded-For` appended, the budget left sent on, the request body streamed, the wait
//! for the response bounded.
//!
//! A request with a deadline (the route's layer put a [`RequestDeadline`] in its extensions)
//! reaches the upstream with what is left of its budget, less
//! [`PROPAGATION_ALLOWANCE`](seda_tower::PROPAGATION_ALLOWANCE), in `x-seda-deadline-ms`
//! (and in `grpc-timeout` when it came with one), so the upstream can refuse work it cannot
//! finish in time. A request with nothing left is answered 504 without calling the upstream.
//! When the deadline passes during the call, the route's layer drops this future: the
//! upstream connection, which then holds a request half done, is closed rather than pooled,
//! and the upstream sees its client leave.
//!
//! A response body that says it is at most [`BUFFER_BELOW`] bytes is read whole before the
//! response is sent, as nginx buffers upstream responses by default: the head and the body
//! then leave in one write. Streamed frame by frame, a 6 KB page took a write per frame (five
//! system calls per proxied request where one does), and on loopback each write also runs
//! the receiver's wake-up on the proxy's core: the lab's `proxy-spike` measured 1.5 x
//! HAProxy's CPU per request. Longer bodies, and bodies of unknown length, are streamed.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::{Request, Response, StatusCode, Uri};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use seda_tower::{DEADLINE, REJECT_HEADER, RequestDeadline};
use tower_service::Service;

use crate::body::ProxyBody;

/// The client's address, put in each request's extensions by the server.
#[derive(Debug, Clone, Copy)]
pub struct ClientAddr(pub SocketAddr);

/// The pooled HTTP/1.1 client every route shares.
pub type UpstreamClient = Client<HttpConnector, Incoming>;

/// Forwards requests to one upstream (a route's inner service).
#[derive(Clone)]
pub struct Forward {
    client: UpstreamClient,
    upstream: Uri,
    timeout: Duration,
}

impl Forward {
    /// Forwards to `upstream` (`http://host:port[/base]`) through `client`.
    pub fn new(client: UpstreamClient, upstream: Uri, timeout: Duration) -> Self {
        Forward {
            client,
            upstream,
            timeout,
        }
    }
}

impl Service<Request<Incoming>> for Forward {
    type Response = Response<ProxyBody>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response<ProxyBody>, Infallible>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<Incoming>) -> Self::Future {
        let (client, timeout) = (self.client.clone(), self.timeout);
        let outgoing = rewrite(request, &self.upstream);
        Box::pin(async move {
            let response = match outgoing {
                Err(Unforwarded::Path) => local(
                    StatusCode::BAD_REQUEST,
                    "the request's path cannot be forwarded\n",
                ),
                Err(Unforwarded::NoTimeLeft) => {
                    let mut r = local(
                        StatusCode::GATEWAY_TIMEOUT,
                        "no time left in the request's deadline to call the upstream\n",
                    );
                    r.headers_mut()
                        .insert(REJECT_HEADER, HeaderValue::from_static(DEADLINE));
                    r
                }
                Ok(req) => match tokio::time::timeout(timeout, client.request(req)).await {
                    Err(_) => local(
                        StatusCode::GATEWAY_TIMEOUT,
                        "the upstream did not answer in time\n",
                    ),
                    Ok(Err(_)) => local(
                        StatusCode::BAD_GATEWAY,
                        "the upstream could not be reached\n",
                    ),
                    Ok(Ok(mut resp)) => {
                        strip_hop_by_hop(resp.headers_mut());
                        if is_short(resp.headers()) {
                            let (parts, body) = resp.into_parts();
                            match tokio::time::timeout(timeout, read_whole(body)).await {
                                Ok(Ok(frames)) => {
                                    Response::from_parts(parts, ProxyBody::read(frames))
                                }
                                Ok(Err(_)) | Err(_) => local(
                                    StatusCode::BAD_GATEWAY,
                                    "the upstream's response was cut short\n",
                                ),
                            }
                        } else {
                            resp.map(ProxyBody::upstream)
                        }
                    }
                },
            };
            Ok(response)
        })
    }
}

/// A response the proxy writes itself.
/// Every data frame of `body`, in order.
async fn read_whole(mut body: Incoming) -> Result<VecDeque<Bytes>, hyper::Error> {
    let mut frames = VecDeque::new();
    while let Some(frame) = body.frame().await {
        if let Ok(data) = frame?.into_data() {
            frames.push_back(data);
        }
    }
    Ok(frames)
}

/// Responses whose `Content-Length` is below this are sent in one piece.
pub const BUFFER_BELOW: u64 = 64 * 1024;

fn is_short(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok())
        .is_some_and(|n| n < BUFFER_BELOW)
}

pub(crate) fn local(status: StatusCode, text: &'static str) -> Response<ProxyBody> {
    let mut r = Response::new(ProxyBody::text(text));
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

/// Why a request is not forwarded.
enum Unforwarded {
    /// Its path does not make a URI on the upstream.
    Path,
    /// Its deadline leaves nothing for the upstream.
    NoTimeLeft,
}

/// The request as the upstream should see it.
fn rewrite(request: Request<Incoming>, upstream: &Uri) -> Result<Request<Incoming>, Unforwarded> {
    let (mut parts, body) = request.into_parts();
    let base = upstream.path().trim_end_matches('/');
    let path_and_query = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let uri = Uri::builder()
        .scheme("http")
        .authority(upstream.authority().map_or("", |a| a.as_str()))
        .path_and_query(format!("{base}{path_and_query}"))
        .build()
        .map_err(|_| Unforwarded::Path)?;
    parts.uri = uri;
    parts.version = http::Version::HTTP_11;
    strip_hop_by_hop(&mut parts.headers);
    if let Some(ClientAddr(addr)) = parts.extensions.get::<ClientAddr>().copied() {
        append_forwarded_for(&mut parts.headers, addr);
    }
    if let Some(deadline) = parts.extensions.get::<RequestDeadline>().copied()
        && deadline.propagate(&mut parts.headers).is_zero()
    {
        return Err(Unforwarded::NoTimeLeft);
    }
    Ok(Request::from_parts(parts, body))
}

/// Appends the client's address to `X-Forwarded-For`, after what earlier proxies put there.
fn append_forwarded_for(headers: &mut HeaderMap, addr: SocketAddr) {
    const XFF: &str = "x-forwarded-for";
    let ip = addr.ip().to_string();
    let value = match headers.get(XFF).and_then(|v| v.to_str().ok()) {
        Some(prev) if !prev.is_empty() => format!("{prev}, {ip}"),
        _ => ip,
    };
    if let Ok(v) = HeaderValue::from_str(&value) {
        headers.insert(XFF, v);
    }
}

/// Removes the headers that describe one connection, not the message (RFC 9110 Section 7.6.1),
/// including those the `Connection` header names.
fn strip_hop_by_hop(headers: &mut HeaderMap) {
    let named: Vec<HeaderName> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|name| HeaderName::from_bytes(name.trim().as_bytes()).ok())
        .collect();
    for name in named {
        headers.remove(name);
    }
    for name in [
        header::CONNECTION,
        header::PROXY_AUTHENTICATE,
        header::PROXY_AUTHORIZATION,
        header::TE,
        header::TRAILER,
        header::TRANSFER_ENCODING,
        header::UPGRADE,
    ] {
        headers.remove(name);
    }
    headers.remove("keep-alive");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hop_by_hop_headers_go_including_those_connection_names() {
        let mut h = HeaderMap::new();
        h.insert(
            header::CONNECTION,
            HeaderValue::from_static("close, x-secret"),
        );
        h.insert("x-secret", HeaderValue::from_static("1"));
        h.insert("keep-alive", HeaderValue::from_static("timeout=5"));
        h.insert(header::HOST, HeaderValue::from_static("example"));
        strip_hop_by_hop(&mut h);
        assert_eq!(h.len(), 1);
        assert!(h.contains_key(header::HOST));
    }

    #[test]
    fn forwarded_for_appends() {
        let mut h = HeaderMap::new();
        let addr: SocketAddr = "10.0.0.9:5000".parse().unwrap();
        append_forwarded_for(&mut h, addr);
        assert_eq!(h["x-forwarded-for"], "10.0.0.9");
        append_forwarded_for(&mut h, addr);
        assert_eq!(h["x-forwarded-for"], "10.0.0.9, 10.0.0.9");
    }
}
