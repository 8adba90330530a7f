//! A minimal HTTP/1.1 adapter (hyper 1 on tokio) in front of the stages.
//!
//! It parses a request into a [`MailRequest`] (born when its header was read), enqueues it into
//! its request type's stage, answers 503 with `Retry-After` when the stage rejects it, and
//! cancels the request's [`seda::Meta`] token when the client goes away before the answer (hyper
//! drops the request future). It is deliberately small so the shared front end (`seda-http`) can
//! replace it.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::request::{MAX_FORM_BYTES, MailRequest, MailResponse};
use crate::service::MailService;

/// How long connections get to finish their request after shutdown starts.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);
/// How long a client may take to send a request's header (slow clients hold no worker, but
/// they hold a connection).
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// Settings of the adapter.
#[derive(Debug, Clone, Default)]
pub struct HttpOptions {
    /// Requests not answered this long after they arrived are dropped from their queue or
    /// interrupted in the database, and answered 503 (nobody should wait longer).
    pub deadline: Option<Duration>,
}

/// Cancels a request's token when dropped before [`disarm`](Self::disarm): the client left.
struct CancelOnDrop(Option<seda::CancelToken>);

impl CancelOnDrop {
    fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(t) = self.0.take() {
            t.cancel();
        }
    }
}

/// Turns a [`MailResponse`] into a hyper response.
pub fn to_hyper(r: MailResponse) -> Response<Full<Bytes>> {
    let mut builder = Response::builder()
        .status(r.status)
        .header("content-type", r.content_type)
        .header("cache-control", "no-store");
    for (name, value) in &r.headers {
        builder = builder.header(name.as_str(), value.as_str());
    }
    builder
        .body(Full::new(Bytes::from(r.body)))
        .unwrap_or_else(|_| {
            let mut resp = Response::new(Full::new(Bytes::from_static(b"bad response header")));
            *resp.status_mut() = hyper::StatusCode::INTERNAL_SERVER_ERROR;
            resp
        })
}

/// Builds a [`MailRequest`] from a parsed HTTP head and body, keeping `meta` (its birth time,
/// cancellation token and deadline) and setting its class from `x-seda-class` or the `class`
/// cookie. Any HTTP front end can use it (this adapter, `seda-http`).
pub fn parse_head(
    head: &hyper::http::request::Parts,
    body: &[u8],
    meta: seda::Meta,
) -> Result<MailRequest, MailResponse> {
    let target = head.uri.path_and_query().map_or("/", |pq| pq.as_str());
    let cookies: Vec<&str> = head
        .headers
        .get_all("cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect();
    let cookie = (!cookies.is_empty()).then(|| cookies.join("; "));
    let class = head
        .headers
        .get("x-seda-class")
        .and_then(|v| v.to_str().ok());
    let mut request = MailRequest::parse(
        head.method.as_str(),
        target,
        cookie.as_deref(),
        class,
        body,
        meta.born,
    )?;
    let class = request.meta.class;
    request.meta = meta.with_class(class);
    Ok(request)
}

/// Handles one HTTP request: parse, enqueue, await the stage's answer.
pub async fn handle(
    service: Arc<MailService>,
    options: Arc<HttpOptions>,
    req: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let born = Instant::now();
    let (head, body) = req.into_parts();
    let body = match Limited::new(body, MAX_FORM_BYTES).collect().await {
        Ok(b) => b.to_bytes(),
        Err(_) => {
            return Ok(to_hyper(MailResponse::error(
                413,
                "The request body is too large or was cut off.",
            )));
        }
    };
    let mut request = match parse_head(&head, &body, seda::Meta::born_at(born)) {
        Ok(r) => r,
        Err(resp) => return Ok(to_hyper(resp)),
    };
    if let Some(d) = options.deadline {
        request.meta.deadline = Some(born + d);
    }
    let guard = CancelOnDrop(Some(request.meta.cancel.clone()));
    let response = match service.submit(request) {
        Err((_, resp)) => resp,
        Ok((_, rx)) => match rx.await {
            Ok(resp) => resp,
            // The handler failed (it panicked): a server error, not the client's fault.
            Err(_) => MailResponse::error(500, "The request failed inside the service."),
        },
    };
    guard.disarm();
    Ok(to_hyper(response))
}

/// Serves `service` on `listener` until `shutdown` completes, then lets open connections
/// finish their current request (up to [`SHUTDOWN_GRACE`]).
pub async fn serve(
    listener: TcpListener,
    service: Arc<MailService>,
    options: HttpOptions,
    shutdown: impl Future<Output = ()>,
) {
    let options = Arc::new(options);
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut conns = tokio::task::JoinSet::new();
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            _ = &mut shutdown => break,
            accepted = listener.accept() => {
                let Ok((stream, _peer)) = accepted else { continue };
                let _ = stream.set_nodelay(true);
                let svc = service.clone();
                let opts = options.clone();
                let mut stop = stop_rx.clone();
                conns.spawn(async move {
                    let conn = http1::Builder::new()
                        .timer(TokioTimer::new())
                        .header_read_timeout(HEADER_TIMEOUT)
                        .keep_alive(true)
                        .serve_connection(
                        TokioIo::new(stream),
                        service_fn(move |req| handle(svc.clone(), opts.clone(), req)),
                    );
                    tokio::pin!(conn);
                    tokio::select! {
                        _ = conn.as_mut() => {}
                        _ = stop.changed() => {
                            conn.as_mut().graceful_shutdown();
                            let _ = conn.await;
                        }
                    }
                });
            }
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
        }
    }
    let _ = stop_tx.send(true);
    let _ = tokio::time::timeout(SHUTDOWN_GRACE, async {
        while conns.join_next().await.is_some() {}
    })
    .await;
    conns.abort_all();
}

/// Binds `addr` (port 0: any free port) and returns the listener and the bound address.
pub async fn bind(addr: SocketAddr) -> std::io::Result<(TcpListener, SocketAddr)> {
    let l = TcpListener::bind(addr).await?;
    let a = l.local_addr()?;
    Ok((l, a))
}
