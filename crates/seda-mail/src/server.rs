//! The e-mail service assembled on the shared front end, as `seda_http::StaticServer` is for
//! files: runtime, request-type stages, an inline `mail.route` stage, `seda_http::HttpServer`.
//!
//! The path of one request, top to bottom in this file: the front end parses the HTTP head and
//! body into a [`HttpRequest`] and calls `mail.route` inline on its own thread; [`route`] turns
//! it into a [`MailRequest`] ([`parse_head`]), applies the deadline, and dispatches it to its
//! request type's stage ([`MailService::dispatch`]); that stage's worker runs the handler
//! (`service.rs`) and answers through the callback, which [`to_hyper`] turns into the reply.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::Full;
use hyper::Response;
use hyper::body::Bytes;
use seda_http::{HttpConfig, HttpRequest, HttpServer, RequestHead, ServerShutdown};

use crate::request::{MAX_FORM_BYTES, MailEvent, MailRequest, MailResponse};
use crate::service::{MailService, RETRY_AFTER_S, ServiceOptions};
use crate::stats::ServiceStats;
use crate::store::Store;

/// How the server runs.
#[derive(Debug, Clone, Default)]
pub struct MailServerConfig {
    /// The front end: address, connection limit, threads. Its `retry_after_s` and
    /// `max_body_bytes` are set to the service's.
    pub http: HttpConfig,
    /// The runtime: per-stage settings (`mail.login`, `mail.search`...).
    pub runtime: seda::Config,
    /// Threads, thresholds, emulated processor, shared admission of the request-type stages.
    pub service: ServiceOptions,
    /// Requests not answered this long after they arrived are dropped from their queue or
    /// interrupted in the database, and answered 503.
    pub deadline: Option<Duration>,
    /// Serve requests whose client has left instead of dropping them (for experiments: a
    /// server that cannot tell a client gave up).
    pub serve_abandoned: bool,
}

/// Why the server could not start. New causes may be added: match with a `_` arm.
#[derive(Debug)]
#[non_exhaustive]
pub enum MailStartError {
    /// The runtime could not start.
    Runtime(seda::BuildError),
    /// A stage could not be built (the mail service's or the router's).
    Stage(seda::BuildError),
    /// The front end could not listen.
    Io(std::io::Error),
}

impl std::fmt::Display for MailStartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MailStartError::Runtime(e) => write!(f, "cannot start the runtime: {e}"),
            MailStartError::Stage(e) => write!(f, "cannot build the mail stages: {e}"),
            MailStartError::Io(e) => write!(f, "cannot start the HTTP front end: {e}"),
        }
    }
}

impl std::error::Error for MailStartError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            MailStartError::Runtime(e) | MailStartError::Stage(e) => Some(e),
            MailStartError::Io(e) => Some(e),
        }
    }
}

/// A running e-mail service.
pub struct MailServer {
    runtime: seda::Runtime,
    service: Arc<MailService>,
    http: HttpServer,
    backend: &'static str,
}

impl std::fmt::Debug for MailServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MailServer")
            .field("addr", &self.local_addr())
            .field("backend", &self.backend)
            .finish_non_exhaustive()
    }
}

impl MailServer {
    /// Starts the runtime, the stages and the front end on `store`.
    pub fn start(
        store: Arc<dyn Store>,
        config: MailServerConfig,
    ) -> Result<MailServer, MailStartError> {
        let backend = store.backend();
        let runtime = seda::Runtime::builder()
            .config(config.runtime.clone())
            .start()
            .map_err(MailStartError::Runtime)?;
        let fail = |runtime: seda::Runtime, e: MailStartError| {
            runtime.shutdown_timeout(Duration::from_secs(1));
            Err(e)
        };
        let service = match MailService::start(&runtime, store, &config.service) {
            Ok(s) => s,
            Err(e) => return fail(runtime, MailStartError::Stage(e)),
        };
        let route =
            {
                let service = service.clone();
                let (deadline, serve_abandoned) = (config.deadline, config.serve_abandoned);
                runtime.stage(seda::Stage::builder("mail.route").inline().handler(
                    seda::handler::each(move |req: HttpRequest, _cx| {
                        route(&service, req, deadline, serve_abandoned)
                    }),
                ))
            };
        let route = match route {
            Ok(r) => r,
            Err(e) => return fail(runtime, MailStartError::Stage(e)),
        };
        let http = HttpConfig {
            retry_after_s: RETRY_AFTER_S,
            max_body_bytes: MAX_FORM_BYTES,
            ..config.http
        };
        let extra: seda_http::ExtraStats = {
            let service = service.clone();
            Arc::new(move || serde_json::to_value(ServiceStats::of(&service)).unwrap_or_default())
        };
        let http =
            match HttpServer::start_with_stats(http, route, Some(runtime.clone()), Some(extra)) {
                Ok(h) => h,
                Err(e) => return fail(runtime, MailStartError::Io(e)),
            };
        Ok(MailServer {
            runtime,
            service,
            http,
            backend,
        })
    }

    /// Where the service listens.
    pub fn local_addr(&self) -> SocketAddr {
        self.http.local_addr()
    }

    /// Where introspection listens, if on its own port.
    pub fn admin_addr(&self) -> Option<SocketAddr> {
        self.http.admin_addr()
    }

    /// The store's backend (`sqlite`, `postgres`, `mysql`).
    pub fn backend(&self) -> &'static str {
        self.backend
    }

    /// The request-type stages.
    pub fn service(&self) -> &Arc<MailService> {
        &self.service
    }

    /// The stage runtime (stats, graph).
    pub fn runtime(&self) -> &seda::Runtime {
        &self.runtime
    }

    /// Graceful shutdown: stop accepting, finish in-flight requests (at most `timeout`), then
    /// drain and stop the stages (at most `timeout` again).
    pub fn shutdown(self, timeout: Duration) -> ServerShutdown {
        ServerShutdown::of(self.http, self.runtime, timeout)
    }
}

/// `mail.route`'s handler, inline on the front end's thread: one HTTP request to its request
/// type's stage; the answer comes back through the stage's callback.
fn route(
    service: &MailService,
    req: HttpRequest,
    deadline: Option<Duration>,
    serve_abandoned: bool,
) {
    let (mut meta, head, body, reply) = req.into_parts();
    if serve_abandoned {
        // A token the front end does not hold: nobody cancels it.
        meta = meta.with_cancel_token(seda::CancelToken::new());
    }
    if let Some(d) = deadline {
        // The stricter of the service's own deadline and the one the caller sent (the front
        // end set it from `x-seda-deadline-ms` or `grpc-timeout`).
        let own = meta.born() + d;
        meta.set_deadline(Some(meta.deadline().map_or(own, |sent| sent.min(own))));
    }
    match parse_head(&head, &body, meta) {
        Err(resp) => {
            reply.send(to_hyper(resp));
        }
        Ok(request) => {
            service.dispatch(MailEvent::with_callback(request, move |resp| {
                reply.send(to_hyper(resp));
            }));
        }
    }
}

/// Builds a [`MailRequest`] from a parsed HTTP head and body, keeping `meta` (its birth time,
/// cancellation token and deadline) and the class it claims (`x-seda-class` or the `class`
/// cookie; [`MailService::dispatch`] keeps it only from a trusted proxy).
pub fn parse_head(
    head: &RequestHead,
    body: &[u8],
    meta: seda::Meta,
) -> Result<MailRequest, MailResponse> {
    let target = head.uri.path_and_query().map_or("/", |pq| pq.as_str());
    let headers = head.headers();
    let cookies: Vec<&str> = headers
        .get_all("cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect();
    let cookie = (!cookies.is_empty()).then(|| cookies.join("; "));
    let class = headers.get("x-seda-class").and_then(|v| v.to_str().ok());
    let mut request = MailRequest::parse(
        head.method.as_str(),
        target,
        cookie.as_deref(),
        class,
        body,
        meta.born(),
    )?;
    let class = request.meta.class();
    request.meta = meta.with_class(class);
    Ok(request)
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
