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

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::{Request, Response, StatusCode, Uri};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use seda_tower::{DEADLINE, REJECT_HEADER, RequestDeadline};
use tower_service::Service;

use crate::body::{Frames, ProxyBody};
use crate::pool::Pool;

/// The client's address, put in each request's extensions by the server.
#[derive(Debug, Clone, Copy)]
pub struct ClientAddr(pub SocketAddr);

/// Forwards requests to one upstream (a route's inner service).
#[derive(Clone)]
pub struct Forward {
    pool: Pool,
    upstream: Uri,
    timeout: Duration,
}

impl Forward {
    /// Forwards to `upstream` (`http://host:port[/base]`) over `pool`'s connections.
    pub fn new(pool: Pool, upstream: Uri, timeout: Duration) -> Self {
        Forward {
            pool,
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

    fn call(&mut self, mut request: Request<Incoming>) -> Self::Future {
        let (pool, timeout) = (self.pool.clone(), self.timeout);
        // Rewritten in place: a request is a few hundred bytes, moved once, into the future.
        let outgoing = rewrite(&mut request, &self.upstream);
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
                Ok(()) => match tokio::time::timeout(timeout, pool.send(request)).await {
                    Err(_) => local(
                        StatusCode::GATEWAY_TIMEOUT,
                        "the upstream did not answer in time\n",
                    ),
                    Ok(Err(_)) => local(
                        StatusCode::BAD_GATEWAY,
                        "the upstream could not be reached\n",
                    ),
                    Ok(Ok((mut resp, lease))) => {
                        strip_hop_by_hop(resp.headers_mut());
                        if is_short(resp.headers()) {
                            let (parts, body) = resp.into_parts();
                            match tokio::time::timeout(timeout, read_whole(body)).await {
                                Ok(Ok(frames)) => {
                                    lease.release();
                                    Response::from_parts(parts, ProxyBody::read(frames))
                                }
                                Ok(Err(_)) | Err(_) => local(
                                    StatusCode::BAD_GATEWAY,
                                    "the upstream's response was cut short\n",
                                ),
                            }
                        } else {
                            resp.map(|body| ProxyBody::upstream(body, lease))
                        }
                    }
                },
            };
            Ok(response)
        })
    }
}

/// Every data frame of `body`, in order.
async fn read_whole(mut body: Incoming) -> Result<Frames, hyper::Error> {
    let mut frames = Frames::default();
    while let Some(frame) = body.frame().await {
        if let Ok(data) = frame?.into_data() {
            frames.push(data);
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

/// A response the proxy writes itself.
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

/// Makes `request` what the upstream should see.
fn rewrite(request: &mut Request<Incoming>, upstream: &Uri) -> Result<(), Unforwarded> {
    *request.uri_mut() = upstream_uri(upstream, request.uri()).ok_or(Unforwarded::Path)?;
    *request.version_mut() = http::Version::HTTP_11;
    let client = request.extensions().get::<ClientAddr>().copied();
    let deadline = request.extensions().get::<RequestDeadline>().copied();
    let headers = request.headers_mut();
    strip_hop_by_hop(headers);
    if let Some(ClientAddr(addr)) = client {
        append_forwarded_for(headers, addr);
    }
    if let Some(deadline) = deadline
        && deadline.propagate(headers).is_zero()
    {
        return Err(Unforwarded::NoTimeLeft);
    }
    Ok(())
}

/// The request's path and query on the upstream (under its base path, if it has one), in
/// origin form, as the request line carries it: the connection already says which upstream.
/// Without a base path the request's own path and query are shared, not parsed again.
fn upstream_uri(upstream: &Uri, uri: &Uri) -> Option<Uri> {
    let base = upstream.path().trim_end_matches('/');
    let path_and_query = match uri.path_and_query() {
        Some(p) if base.is_empty() => p.clone(),
        given => {
            let given = given.map_or("/", |p| p.as_str());
            let mut joined = String::with_capacity(base.len() + given.len());
            joined.push_str(base);
            joined.push_str(given);
            http::uri::PathAndQuery::try_from(joined).ok()?
        }
    };
    let mut parts = http::uri::Parts::default();
    parts.path_and_query = Some(path_and_query);
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

/// Appends the client's address to `X-Forwarded-For`, after what earlier proxies put there
/// (one lookup of the name, not one to read and another to write).
fn append_forwarded_for(headers: &mut HeaderMap, addr: SocketAddr) {
    let ip = addr.ip();
    match headers.entry(&XFF) {
        header::Entry::Occupied(mut e) => {
            let value = match e.get().to_str() {
                Ok(prev) if !prev.is_empty() => {
                    HeaderValue::from_str(&format!("{prev}, {ip}")).ok()
                }
                _ => client_value(ip),
            };
            if let Some(v) = value {
                e.insert(v);
            }
        }
        header::Entry::Vacant(e) => {
            if let Some(v) = client_value(ip) {
                e.insert(v);
            }
        }
    }
}

/// Removes the headers that describe one connection, not the message (RFC 9110 Section 7.6.1),
/// including those the `Connection` header names.
///
/// A pass over the names alone (no values, no hashing) says what there is to do. In the usual
/// message (at most a `Connection: keep-alive`) one lookup of `Connection` then reads and
/// removes it: reading all headers, or looking `Connection` up and then removing it, cost a
/// hash each on the request and on the response (`strip_hop_by_hop` was about 820
/// instructions a call, callgrind, 2026-12-07). Otherwise the values naming other headers
/// than `keep-alive` and `close` (both hop-by-hop already) are copied, to find those headers,
/// and `Connection` goes last.
fn strip_hop_by_hop(headers: &mut HeaderMap) {
    let mut has_connection = false;
    let mut others = false;
    for name in headers.keys() {
        if name == header::CONNECTION {
            has_connection = true;
        } else {
            others |= is_hop_by_hop(name);
        }
    }
    let mut naming = Vec::new();
    if has_connection && let header::Entry::Occupied(e) = headers.entry(header::CONNECTION) {
        if !others && !e.iter().any(names_others) {
            // The usual message: `Connection` is all there is to remove.
            e.remove();
            return;
        }
        naming.extend(e.iter().filter(|v| names_others(v)).cloned());
    }
    if !others && naming.is_empty() {
        return;
    }
    loop {
        let doomed = headers.keys().find(|name| {
            *name != header::CONNECTION && (is_hop_by_hop(name) || lists(&naming, name))
        });
        let Some(name) = doomed.cloned() else { break };
        headers.remove(name);
    }
    // Last, as it says what else goes: the other headers keep their order.
    if has_connection {
        headers.remove(header::CONNECTION);
    }
}

/// Whether a `Connection` value names a header other than `keep-alive` and `close` (both
/// hop-by-hop already); the usual values, one of those alone, are told without splitting.
fn names_others(value: &HeaderValue) -> bool {
    let usual =
        |t: &[u8]| t.eq_ignore_ascii_case(b"keep-alive") || t.eq_ignore_ascii_case(b"close");
    !usual(value.as_bytes()) && tokens(value).any(|t| !usual(t))
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

/// Whether one of `connection`'s values lists `name` (names in any case).
fn lists(connection: &[HeaderValue], name: &HeaderName) -> bool {
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
        assert_eq!(out.to_string(), "/base/a/b?x=1");
        let bare: Uri = "http://h:1".parse().unwrap();
        assert_eq!(upstream_uri(&bare, &req).unwrap().to_string(), "/a/b?x=1");
        // A request in absolute form reaches the upstream in origin form.
        let absolute: Uri = "http://client.example/a?y".parse().unwrap();
        assert_eq!(
            upstream_uri(&up, &absolute).unwrap().to_string(),
            "/base/a?y"
        );
        assert_eq!(upstream_uri(&bare, &absolute).unwrap().to_string(), "/a?y");
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
