//! The static-file server assembled: runtime, Haboob's stages, front end.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use crate::admin::{ExtraStats, FrontendStats};
use crate::config::ServeConfig;
use crate::server::{HttpServer, ShutdownSummary};
use crate::statics::{CacheStats, StaticError, StaticService};

/// Why a server could not start.
#[derive(Debug)]
pub enum StartError {
    /// The runtime or a stage could not be built.
    Static(StaticError),
    /// The runtime could not start.
    Runtime(seda::BuildError),
    /// Binding or starting the front end failed.
    Io(std::io::Error),
}

impl std::fmt::Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StartError::Static(e) => e.fmt(f),
            StartError::Runtime(e) => write!(f, "cannot start the runtime: {e}"),
            StartError::Io(e) => write!(f, "cannot start the HTTP front end: {e}"),
        }
    }
}

impl std::error::Error for StartError {}

/// A running static-file server.
#[derive(Debug)]
pub struct StaticServer {
    runtime: seda::Runtime,
    service: StaticService,
    http: HttpServer,
}

/// What a shutdown of the whole server achieved.
#[derive(Debug, Clone)]
pub struct ServerShutdown {
    /// The front end's part.
    pub http: ShutdownSummary,
    /// The stages' part.
    pub runtime: seda::ShutdownReport,
}

impl ServerShutdown {
    /// Graceful shutdown of a server made of a front end and a stage runtime: stop accepting,
    /// finish in-flight requests (at most `timeout`), then drain and stop the stages (at most
    /// `timeout` again). The front end goes first so that no new event reaches a stopped stage.
    pub fn of(http: HttpServer, runtime: seda::Runtime, timeout: Duration) -> ServerShutdown {
        let http = http.shutdown(timeout);
        let runtime = runtime.shutdown_timeout(timeout);
        ServerShutdown { http, runtime }
    }
}

impl StaticServer {
    /// Starts the runtime, the stages and the front end.
    pub fn start(config: ServeConfig) -> Result<StaticServer, StartError> {
        let runtime = seda::Runtime::builder()
            .config(config.runtime.clone())
            .start()
            .map_err(StartError::Runtime)?;
        let service = match StaticService::build(&runtime, &config.statics) {
            Ok(s) => s,
            Err(e) => {
                runtime.shutdown_timeout(Duration::from_secs(1));
                return Err(StartError::Static(e));
            }
        };
        let stats: ExtraStats = {
            let service = service.clone();
            Arc::new(move || serde_json::json!({ "page_cache": service.cache_stats() }))
        };
        let http = match HttpServer::start_with_stats(
            config.http.clone(),
            service.sink(),
            Some(runtime.clone()),
            Some(stats),
        ) {
            Ok(h) => h,
            Err(e) => {
                runtime.shutdown_timeout(Duration::from_secs(1));
                return Err(StartError::Io(e));
            }
        };
        Ok(StaticServer {
            runtime,
            service,
            http,
        })
    }

    /// Where the service listens.
    pub fn local_addr(&self) -> SocketAddr {
        self.http.local_addr()
    }

    /// Where the admin address listens (stats, graph, `/metrics`, the dashboard), if on.
    pub fn admin_addr(&self) -> Option<SocketAddr> {
        self.http.admin_addr()
    }

    /// The front end's counters.
    pub fn frontend_stats(&self) -> FrontendStats {
        self.http.stats()
    }

    /// The page cache's counters.
    pub fn cache_stats(&self) -> CacheStats {
        self.service.cache_stats()
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
