//! The proxy server: accepts connections, picks each request's route by the longest matching
//! prefix, and hands it to that route's admission-controlled forwarder.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use http::{Request, Response, StatusCode};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use seda_tower::{
    ArrivalLag, ByCriticality, CriticalityLayer, Deadlines, HttpSeda, SedaLayer, StatsHandle,
};
use tokio::net::{TcpListener, TcpSocket};
use tokio::sync::Semaphore;
use tower_layer::Layer;
use tower_service::Service;

use crate::body::ProxyBody;
use crate::config::{ProxyConfig, RouteConfig};
use crate::forward::{ClientAddr, Forward, local};
use crate::lag::LagMeter;
use crate::pacing::Pacing;
use crate::pool::Pool;
use seda_control::ServerRefusals;

/// One route, ready to serve.
#[derive(Clone)]
enum RouteService {
    Controlled(HttpSeda<Forward, ByCriticality>),
    Open(Forward),
}

struct Route {
    prefix: String,
    /// Sets each request's criticality (the route's, or a trusted tier's header).
    edge: CriticalityLayer<Incoming>,
    service: RouteService,
    stats: Option<StatsHandle>,
    /// Where the proxy reports how late requests reach the route's layer.
    lag: Option<ArrivalLag>,
}

/// A running proxy's routes, for lookup and stats.
pub struct Proxy {
    routes: Vec<Route>,
    listener: TcpListener,
    config: ProxyConfig,
}

/// One route's figures.
#[derive(Debug, Clone)]
pub struct RouteStats {
    /// The route's prefix.
    pub prefix: String,
    /// What its admission layer did (`None` when the route has no target).
    pub admission: Option<seda_tower::LayerStats>,
}

impl Proxy {
    /// Binds the listen address and builds every route.
    ///
    /// # Errors
    /// The address cannot be bound, or a route's controller rejects its settings.
    pub async fn bind(
        config: ProxyConfig,
    ) -> Result<Self, Box<dyn std::error::Error + Send + Sync>> {
        // One pool per upstream (scheme and authority), shared by the routes that forward there.
        // No TCP keep-alive probes on upstream connections (hyper_util's `build_http` turned
        // them on): an idle connection is dropped after 90 s anyway, and setting them cost two
        // system calls per connection, one per request to an upstream that closes after each
        // response (gunicorn's sync workers).
        let mut pools: Vec<(http::uri::Authority, Pool)> = Vec::new();
        let mut routes = Vec::new();
        for r in &config.routes {
            let authority = r.upstream.authority().ok_or_else(|| {
                format!(
                    "route {:?}: the upstream {} names no host",
                    r.prefix, r.upstream
                )
            })?;
            let pool = match pools.iter().find(|(a, _)| a == authority) {
                Some((_, pool)) => pool.clone(),
                None => {
                    let pool = Pool::new(&r.upstream).ok_or_else(|| {
                        format!(
                            "route {:?}: the upstream {} is not usable",
                            r.prefix, r.upstream
                        )
                    })?;
                    pools.push((authority.clone(), pool.clone()));
                    pool
                }
            };
            routes.push(build_route(r, pool, &config)?);
        }
        // Longest prefix first, so the first match is the most specific.
        routes.sort_by_key(|r| std::cmp::Reverse(r.prefix.len()));
        let listener = listen(config.listen)
            .map_err(|e| format!("cannot listen on {}: {e}", config.listen))?;
        Ok(Proxy {
            routes,
            listener,
            config,
        })
    }

    /// The address the proxy listens on (the port chosen when the configuration said 0).
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Every route's figures.
    pub fn stats(&self) -> Vec<RouteStats> {
        self.stats_reader()()
    }

    /// A function that reads every route's figures, to call from anywhere while the proxy runs.
    pub fn stats_reader(&self) -> impl Fn() -> Vec<RouteStats> + Send + Sync + 'static + use<> {
        let routes: Vec<(String, Option<StatsHandle>)> = self
            .routes
            .iter()
            .map(|r| (r.prefix.clone(), r.stats.clone()))
            .collect();
        move || {
            routes
                .iter()
                .map(|(prefix, s)| RouteStats {
                    prefix: prefix.clone(),
                    admission: s.as_ref().map(StatsHandle::stats),
                })
                .collect()
        }
    }

    /// Serves until the task is dropped. A connection error ends that connection only.
    pub async fn serve(self) -> std::io::Result<()> {
        let lag = LagMeter::new(self.routes.iter().filter_map(|r| r.lag.clone()).collect());
        tokio::spawn(lag.clone().tick());
        let routes: Arc<Vec<Route>> = Arc::new(self.routes);
        let permits = Arc::new(Semaphore::new(self.config.max_connections));
        let header_timeout = self.config.header_read_timeout;
        let policy = self.config.refusal;
        let server_pace = Arc::new(ServerRefusals::new(self.config.refusals_per_s));
        loop {
            // At the connection limit, new connections wait in the listen backlog.
            let Ok(permit) = Arc::clone(&permits).acquire_owned().await else {
                return Ok(());
            };
            let (stream, peer) = match self.listener.accept().await {
                Ok(c) => c,
                // Out of file descriptors, or the peer reset before accept: not fatal.
                Err(_) => {
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                    continue;
                }
            };
            let _ = stream.set_nodelay(true);
            let routes = Arc::clone(&routes);
            let accepted = Instant::now();
            let lag = lag.clone();
            let server_pace = Arc::clone(&server_pace);
            tokio::spawn(async move {
                lag.connection_started(accepted);
                let pacing = Arc::new(Pacing::new(policy, server_pace, accepted));
                let service = service_fn(move |mut req: Request<Incoming>| {
                    req.extensions_mut().insert(ClientAddr(peer));
                    let routes = Arc::clone(&routes);
                    let pacing = Arc::clone(&pacing);
                    async move { dispatch(&routes, &pacing, req).await }
                });
                // A response's head and body copied into one buffer rather than queued for
                // `writev`: for the short bodies read whole, the queue's bookkeeping cost more
                // than the copy (434 instructions a proxied request, bench/proxy-callgrind.sh).
                let _ = http1::Builder::new()
                    .writev(false)
                    .timer(TokioTimer::new())
                    .header_read_timeout(header_timeout)
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
                drop(permit);
            });
        }
    }
}

fn build_route(
    r: &RouteConfig,
    pool: Pool,
    config: &ProxyConfig,
) -> Result<Route, Box<dyn std::error::Error + Send + Sync>> {
    let forward = Forward::new(pool, r.upstream.clone(), config.upstream_timeout);
    let edge = crate::criticality::edge(r.criticality, config.trusted_tiers.clone().into());
    Ok(match r.target {
        None => Route {
            prefix: r.prefix.clone(),
            edge,
            service: RouteService::Open(forward),
            stats: None,
            lag: None,
        },
        Some(target) => {
            let deadlines = match r.deadline {
                Some(d) => Deadlines::new().default_budget(d),
                None => Deadlines::new(),
            };
            // Several levels on one route only when some tier may say its own.
            let layer = if config.trusted_tiers.is_empty() {
                SedaLayer::response_time(target).map(|l| l.classify(ByCriticality))
            } else {
                SedaLayer::prioritized(target)
            };
            let layer = layer
                .and_then(|l| l.http().retry_after(r.retry_after_s).deadlines(deadlines))
                .map_err(|e| format!("route {:?}: {e}", r.prefix))?;
            Route {
                prefix: r.prefix.clone(),
                edge,
                stats: Some(layer.stats()),
                lag: Some(layer.arrival_lag()),
                service: RouteService::Controlled(layer.layer(forward)),
            }
        }
    })
}

/// The kernel queue of connections not yet accepted: as long as the system allows
/// (`net.core.somaxconn` caps it), so a burst of new connections waits to be accepted rather
/// than having its SYNs dropped. With tokio's default of 1024, 4,248 users connecting at once
/// (the lab's `proxy-spike`) lost SYNs and waited for the 1 s and 3 s retransmissions: 651
/// connect timeouts in 10 s, and a p90 at the client of 1.2 s while the route's own was 0.4 s.
pub const LISTEN_BACKLOG: u32 = 4096;

/// A listener on `addr` with a [`LISTEN_BACKLOG`] queue.
///
/// # Errors
/// The address cannot be bound.
pub fn listen(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(LISTEN_BACKLOG)
}

/// Does `prefix` match `path` at a segment boundary?
fn matches(prefix: &str, path: &str) -> bool {
    prefix == "/"
        || path == prefix
        || (path.starts_with(prefix)
            && (prefix.ends_with('/') || path.as_bytes().get(prefix.len()) == Some(&b'/')))
}

/// Routes one request. A refusal is decided when the route's layer is called, before anything
/// reads the request's body (hyper then drains a body already buffered, or closes the
/// connection rather than read the rest); the connection's [`Pacing`] says when it is answered.
async fn dispatch(
    routes: &[Route],
    pacing: &Pacing,
    mut req: Request<Incoming>,
) -> Result<Response<ProxyBody>, Infallible> {
    let Some(route) = routes.iter().find(|r| matches(&r.prefix, req.uri().path())) else {
        return Ok(local(StatusCode::NOT_FOUND, "no route for this path\n"));
    };
    route.edge.apply(&mut req);
    match route.service.clone() {
        RouteService::Controlled(mut s) => {
            let answer = s.call(req);
            if answer.is_rejected() {
                let response = answer.await?;
                return Ok(pacing.refused(response).await);
            }
            pacing.admitted();
            answer.await
        }
        RouteService::Open(mut s) => s.call(req).await,
    }
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn prefixes_match_at_segment_boundaries() {
        assert!(matches("/", "/anything"));
        assert!(matches("/search", "/search"));
        assert!(matches("/search", "/search/x"));
        assert!(!matches("/search", "/searchable"));
        assert!(matches("/static/", "/static/a.css"));
    }
}
