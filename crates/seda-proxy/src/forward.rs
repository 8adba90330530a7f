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
    parts.uri = upstream_uri(upstream, &parts.uri).ok_or(Unforwarded::Path)?;
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

/// The request's path and query on the upstream (under its base path, if it has one). The
/// scheme and authority are the upstream's own, shared rather than parsed again per request.
fn upstream_uri(upstream: &Uri, uri: &Uri) -> Option<Uri> {
    let base = upstream.path().trim_end_matches('/');
    let path_and_query = uri.path_and_query().map_or("/", |p| p.as_str());
    let mut joined = String::with_capacity(base.len() + path_and_query.len());
    joined.push_str(base);
    joined.push_str(path_and_query);
    let mut parts = http::uri::Parts::default();
    parts.scheme = Some(http::uri::Scheme::HTTP);
    parts.authority = Some(upstream.authority()?.clone());
    parts.path_and_query = Some(http::uri::PathAndQuery::try_from(joined).ok()?);
    Uri::from_parts(parts).ok()
}

static XFF: HeaderName = HeaderName::from_static("x-forwarded-for");

thread_local! {
    /// The last client address this thread rendered for `X-Forwarded-For`, and its value: a
    /// connection's requests come from one address, and formatting an address is costly.
    static LAST_CLIENT: std::cell::RefCell<Option<(std::net::IpAddr, HeaderValue)>> =
        const { std::cell::RefCell::new(None) };
}

/// The client's address as a header value.
fn client_value(ip: std::net::IpAddr) -> Option<HeaderValue> {
    LAST_CLIENT.with(|last| {
        let mut last = last.borrow_mut();
        if let Some((seen, value)) = last.as_ref()
            && *seen == ip
        {
            return Some(value.clone());
        }
        let value = HeaderValue::from_str(&ip.to_string()).ok()?;
        *last = Some((ip, value.clone()));
        Some(value)
    })
}

/// Appends the client's address to `X-Forwarded-For`, after what earlier proxies put there.
fn append_forwarded_for(headers: &mut HeaderMap, addr: SocketAddr) {
    let ip = addr.ip();
    let value = match headers.get(&XFF).and_then(|v| v.to_str().ok()) {
        Some(prev) if !prev.is_empty() => HeaderValue::from_str(&format!("{prev}, {ip}")).ok(),
        _ => client_value(ip),
    };
    if let Some(v) = value {
        headers.insert(&XFF, v);
    }
}

/// Removes the headers that describe one connection, not the message (RFC 9110 Section 7.6.1),
/// including those the `Connection` header names.
///
/// Only the names present are removed, found by a pass over the names: removing each of the
/// eight blindly hashed every one, on the request and on the response, and the names
/// `Connection` lists were parsed and allocated to be looked up (8.8% of a proxied request's
/// instructions, callgrind, 2026-12-07). `Connection` itself goes last, as it says what else
/// goes; no list is allocated.
fn strip_hop_by_hop(headers: &mut HeaderMap) {
    let connection = headers.get_all(header::CONNECTION);
    let has_connection = connection.iter().next().is_some();
    // `keep-alive` and `close`, the usual tokens, name no header not already hop-by-hop.
    let names_others = connection.iter().any(|v| {
        tokens(v)
            .any(|t| !t.eq_ignore_ascii_case(b"keep-alive") && !t.eq_ignore_ascii_case(b"close"))
    });
    loop {
        let listed = names_others.then(|| headers.get_all(header::CONNECTION));
        let doomed = headers.keys().find(|name| {
            *name != header::CONNECTION
                && (is_hop_by_hop(name) || listed.as_ref().is_some_and(|c| lists(c, name)))
        });
        let Some(name) = doomed.cloned() else { break };
        headers.remove(name);
    }
    if has_connection {
        headers.remove(header::CONNECTION);
    }
}

/// The non-empty tokens of a comma-separated list.
fn tokens(value: &HeaderValue) -> impl Iterator<Item = &[u8]> {
    value
        .as_bytes()
        .split(|&b| b == b',')
        .map(<[u8]>::trim_ascii)
        .filter(|t| !t.is_empty())
}

/// The hop-by-hop headers every message may carry (a match on the lower-case name: cheaper
/// than comparing with eight `HeaderName`s).
fn is_hop_by_hop(name: &HeaderName) -> bool {
    matches!(
        name.as_str(),
        "connection"
            | "keep-alive"
            | "proxy-authenticate"
            | "proxy-authorization"
            | "te"
            | "trailer"
            | "transfer-encoding"
            | "upgrade"
    )
}

/// Whether a `Connection` header lists `name` (names in any case).
fn lists(connection: &http::header::GetAll<'_, HeaderValue>, name: &HeaderName) -> bool {
    connection
        .iter()
        .any(|v| tokens(v).any(|t| t.eq_ignore_ascii_case(name.as_str().as_bytes())))
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
    fn names_connection_lists_go_in_any_case_and_over_several_headers() {
        let mut h = HeaderMap::new();
        h.append(header::CONNECTION, HeaderValue::from_static("Keep-Alive"));
        h.append(
            header::CONNECTION,
            HeaderValue::from_static(" X-One ,x-two"),
        );
        for name in ["x-one", "x-two", "x-three", "keep-alive", "te", "upgrade"] {
            h.append(name, HeaderValue::from_static("v"));
        }
        h.append("x-one", HeaderValue::from_static("again"));
        h.insert(header::ACCEPT, HeaderValue::from_static("*/*"));
        strip_hop_by_hop(&mut h);
        let left: Vec<&str> = h.keys().map(|k| k.as_str()).collect();
        assert_eq!(left, ["x-three", "accept"]);
        assert_eq!(h.len(), 2);
    }

    #[test]
    fn the_upstream_uri_keeps_the_base_path_and_the_query() {
        let up: Uri = "http://10.0.0.1:8080/base/".parse().unwrap();
        let req: Uri = "/a/b?x=1".parse().unwrap();
        let out = upstream_uri(&up, &req).unwrap();
        assert_eq!(out.to_string(), "http://10.0.0.1:8080/base/a/b?x=1");
        let bare: Uri = "http://h:1".parse().unwrap();
        assert_eq!(
            upstream_uri(&bare, &req).unwrap().to_string(),
            "http://h:1/a/b?x=1"
        );
    }

    #[test]
    fn forwarded_for_appends() {
        let mut h = HeaderMap::new();
        let addr: SocketAddr = "10.0.0.9:5000".parse().unwrap();
        append_forwarded_for(&mut h, addr);
        assert_eq!(h["x-forwarded-for"], "10.0.0.9");
        append_forwarded_for(&mut h, addr);
        assert_eq!(h["x-forwarded-for"], "10.0.0.9, 10.0.0.9");
        // Another client on the same thread gets its own address, not the remembered one.
        let mut h = HeaderMap::new();
        append_forwarded_for(&mut h, "[::1]:80".parse().unwrap());
        assert_eq!(h["x-forwarded-for"], "::1");
        let mut h = HeaderMap::new();
        append_forwarded_for(&mut h, addr);
        assert_eq!(h["x-forwarded-for"], "10.0.0.9");
    }
}
