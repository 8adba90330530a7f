//! The admin address: introspection, metrics and the live dashboard, never on the service port.
//!
//! Operators watch a service through a port of its own (Envoy's admin, HAProxy's stats page):
//! loopback by default, outside the service's admission control and connection limits, so
//! neither a client of the service can read it nor can an overload of the service hide it.
//! [`AdminServer`] runs on one thread of its own (a current-thread tokio runtime) and serves:
//!
//! | path | what |
//! |---|---|
//! | `/` | the live dashboard (HTML, CSS and a small script built into the binary) |
//! | `/metrics` | Prometheus text format 0.0.4 ([`metrics`]) |
//! | `/_seda/stats` | the front end's, the runtime's and the service's figures (JSON, a [`StatsDocument`]) |
//! | `/_seda/graph` | the stage graph (DOT); `/_seda/graph.json` as JSON |
//! | `/_seda/live?since=T` | the dashboard's feed: the newest view and the history after `T` |
//! | `POST /_seda/target?p90_ms=N` | changes global control's p90 target ([`target`]) |
//!
//! Once a second it samples the runtime (or, for `seda proxy`, its admission layers drawn as
//! stages) into [`history`]'s rings (an hour, bounded).

mod dashboard;
pub mod history;
mod layers;
pub mod metrics;
pub mod process;
mod stats;
mod target;

use std::convert::Infallible;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::header::{ALLOW, CACHE_CONTROL, CONTENT_TYPE, HeaderValue};
use http::{Method, Response, StatusCode};
use http_body_util::Full;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use parking_lot::Mutex;
use prometheus_client::registry::Registry;
use tokio::sync::watch;

use crate::body::Body;
use history::History;
pub use stats::{ExtraStats, FrontendStats, StatsDocument};

/// Connections the admin address serves at once; more wait in the backlog.
const MAX_CONNECTIONS: usize = 64;
/// Time to read a request head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest an admin connection stays open (a dashboard reconnects).
const CONNECTION_LIFETIME: Duration = Duration::from_secs(300);
/// How often the history is sampled.
const SAMPLE_PERIOD: Duration = Duration::from_secs(1);

/// A function giving the front end's counters.
pub type FrontendFn = Arc<dyn Fn() -> FrontendStats + Send + Sync>;

/// A function giving each tower admission layer's figures, by name (`seda proxy`'s routes).
pub type LayersFn = Arc<dyn Fn() -> Vec<(String, seda_tower::LayerStats)> + Send + Sync>;

/// What the admin address shows. Every part is optional.
#[derive(Clone, Default)]
pub struct AdminSources {
    /// The stage graph.
    pub runtime: Option<seda::Runtime>,
    /// The HTTP front end's counters.
    pub frontend: Option<FrontendFn>,
    /// The service's own figures (under `"service"` in `/_seda/stats`).
    pub extra: Option<ExtraStats>,
    /// Admission layers outside any stage (under `"layers"` in `/_seda/stats`, and
    /// `seda_layer_*` in `/metrics`).
    pub layers: Option<LayersFn>,
}

struct State {
    sources: Arc<AdminSources>,
    registry: Registry,
    history: Mutex<History>,
    started: Instant,
    open: AtomicUsize,
}

/// A running admin listener. Dropping it stops it.
pub struct AdminServer {
    addr: SocketAddr,
    stop: watch::Sender<bool>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for AdminServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AdminServer")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl AdminServer {
    /// Binds `addr` and starts serving `sources` on a thread of its own.
    ///
    /// # Errors
    /// The address cannot be bound, or the thread cannot start.
    pub fn start(addr: SocketAddr, sources: AdminSources) -> io::Result<AdminServer> {
        let listener = std::net::TcpListener::bind(addr)?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let sources = Arc::new(sources);
        let state = Arc::new(State {
            registry: metrics::registry(sources.clone()),
            sources,
            history: Mutex::new(History::default()),
            started: Instant::now(),
            open: AtomicUsize::new(0),
        });
        let (stop, stop_rx) = watch::channel(false);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let thread = std::thread::Builder::new()
            .name("seda-admin".into())
            .spawn(move || {
                rt.block_on(async move {
                    let listener = match tokio::net::TcpListener::from_std(listener) {
                        Ok(l) => l,
                        Err(_) => return,
                    };
                    tokio::spawn(sampler(state.clone(), stop_rx.clone()));
                    accept_loop(state, listener, stop_rx).await;
                });
                rt.shutdown_timeout(Duration::from_millis(100));
            })?;
        Ok(AdminServer {
            addr,
            stop,
            thread: Some(thread),
        })
    }

    /// Where it listens.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops listening and joins its thread.
    pub fn shutdown(mut self) {
        self.stop_now();
    }

    fn stop_now(&mut self) {
        let _ = self.stop.send(true);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for AdminServer {
    fn drop(&mut self) {
        self.stop_now();
    }
}

async fn sampler(state: Arc<State>, mut stop: watch::Receiver<bool>) {
    let (rt, layers) = (state.sources.runtime.clone(), state.sources.layers.clone());
    if rt.is_none() && layers.is_none() {
        return;
    }
    let mut tick = tokio::time::interval(SAMPLE_PERIOD);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = stop.wait_for(|s| *s) => return,
            _ = tick.tick() => {}
        }
        let t = state.started.elapsed().as_secs_f64();
        let (stats, graph) = match (&rt, &layers) {
            (Some(rt), _) => (rt.stats(), rt.graph()),
            (None, Some(layers)) => layers::snapshot(&layers(), t),
            (None, None) => return,
        };
        state.history.lock().sample(t, &stats, &graph);
    }
}

async fn accept_loop(
    state: Arc<State>,
    listener: tokio::net::TcpListener,
    mut stop: watch::Receiver<bool>,
) {
    loop {
        if state.open.load(Ordering::Relaxed) >= MAX_CONNECTIONS {
            // Leave the rest in the backlog until one closes.
            tokio::select! {
                _ = stop.wait_for(|s| *s) => return,
                _ = tokio::time::sleep(Duration::from_millis(10)) => continue,
            }
        }
        let accepted = tokio::select! {
            _ = stop.wait_for(|s| *s) => return,
            r = listener.accept() => r,
        };
        let Ok((stream, _)) = accepted else {
            tokio::time::sleep(Duration::from_millis(5)).await;
            continue;
        };
        let _ = stream.set_nodelay(true);
        state.open.fetch_add(1, Ordering::Relaxed);
        let st = state.clone();
        let mut stop = stop.clone();
        tokio::spawn(async move {
            let svc = {
                let st = st.clone();
                service_fn(move |req| {
                    let st = st.clone();
                    async move { Ok::<_, Infallible>(route(&st, &req)) }
                })
            };
            let mut builder = http1::Builder::new();
            builder
                .timer(TokioTimer::new())
                .header_read_timeout(HEAD_TIMEOUT)
                .keep_alive(true);
            let conn = builder.serve_connection(TokioIo::new(stream), svc);
            tokio::pin!(conn);
            tokio::select! {
                _ = conn.as_mut() => {}
                _ = tokio::time::sleep(CONNECTION_LIFETIME) => {}
                _ = stop.wait_for(|s| *s) => {}
            }
            st.open.fetch_sub(1, Ordering::Relaxed);
        });
    }
}

fn respond(
    status: StatusCode,
    content_type: &'static str,
    body: impl Into<Bytes>,
) -> Response<Body> {
    let mut r = Response::new(Full::new(body.into()));
    *r.status_mut() = status;
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    r.headers_mut()
        .insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

fn json(v: &serde_json::Value) -> Response<Body> {
    respond(
        StatusCode::OK,
        "application/json",
        serde_json::to_vec(v).unwrap_or_default(),
    )
}

fn not_found() -> Response<Body> {
    respond(
        StatusCode::NOT_FOUND,
        "text/plain; charset=utf-8",
        "404 Not Found\n",
    )
}

/// The layers' figures as JSON, one object per layer.
fn layers_json(layers: &[(String, seda_tower::LayerStats)]) -> serde_json::Value {
    layers
        .iter()
        .map(|(name, s)| {
            let rejected: serde_json::Map<String, serde_json::Value> = s
                .rejected
                .iter()
                .map(|(r, n)| (r.as_str().to_string(), (*n).into()))
                .collect();
            let state: serde_json::Map<String, serde_json::Value> = s
                .state
                .iter()
                .map(|(k, v)| ((*k).to_string(), (*v).into()))
                .collect();
            serde_json::json!({
                "name": name,
                "controller": s.controller,
                "admitted": s.admitted,
                "rejected": rejected,
                "completed": s.completed,
                "dropped": s.dropped,
                "state": state,
            })
        })
        .collect()
}

/// `since=T` from a query string.
fn since(query: Option<&str>) -> Option<u32> {
    query?
        .split('&')
        .find_map(|kv| kv.strip_prefix("since="))?
        .parse()
        .ok()
}

fn route<B>(state: &State, req: &hyper::Request<B>) -> Response<Body> {
    if req.method() == Method::POST && req.uri().path() == target::PATH {
        // A browser sends `Origin` with every cross-site POST: a page the operator happens to
        // open must not be able to retarget the service through the loopback admin address.
        if req.headers().contains_key(http::header::ORIGIN) {
            return respond(
                StatusCode::FORBIDDEN,
                "text/plain; charset=utf-8",
                "403 Forbidden: the admin address takes no requests from web pages\n",
            );
        }
        return target::set(&state.sources, req.uri().query());
    }
    if req.method() != Method::GET && req.method() != Method::HEAD {
        let mut r = respond(
            StatusCode::METHOD_NOT_ALLOWED,
            "text/plain; charset=utf-8",
            "405 Method Not Allowed\n",
        );
        r.headers_mut()
            .insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
        return r;
    }
    let src = &state.sources;
    match req.uri().path() {
        "/" | "/index.html" => respond(
            StatusCode::OK,
            "text/html; charset=utf-8",
            dashboard::INDEX_HTML,
        ),
        "/dashboard.js" => respond(
            StatusCode::OK,
            "text/javascript; charset=utf-8",
            dashboard::SCRIPT,
        ),
        "/dashboard.css" => respond(StatusCode::OK, "text/css; charset=utf-8", dashboard::STYLE),
        "/favicon.ico" => respond(StatusCode::NO_CONTENT, "image/x-icon", Bytes::new()),
        "/metrics" => respond(
            StatusCode::OK,
            metrics::CONTENT_TYPE,
            metrics::render(&state.registry),
        ),
        "/_seda/stats" => {
            let doc = StatsDocument {
                frontend: src.frontend.as_ref().map(|f| f()),
                runtime: src.runtime.as_ref().map(seda::Runtime::stats),
                service: src.extra.as_ref().map(|f| f()),
                layers: src.layers.as_ref().map(|f| layers_json(&f())),
            };
            // Pretty: people read this one with curl.
            respond(
                StatusCode::OK,
                "application/json",
                serde_json::to_string_pretty(&doc).unwrap_or_default(),
            )
        }
        "/_seda/graph" => match &src.runtime {
            Some(rt) => respond(StatusCode::OK, "text/vnd.graphviz", rt.graph().to_dot()),
            None => not_found(),
        },
        "/_seda/graph.json" => match &src.runtime {
            Some(rt) => json(&serde_json::to_value(rt.graph()).unwrap_or_default()),
            None => not_found(),
        },
        "/_seda/live" => json(&state.history.lock().live(since(req.uri().query()))),
        _ => not_found(),
    }
}
