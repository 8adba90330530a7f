//! Integration tests over real sockets on 127.0.0.1 (ephemeral ports).

mod admin;
mod client;
mod deadline;
mod files;
mod frontend;
mod h2c;
mod limits;
mod terminate;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use seda_http::{ServeConfig, StaticServer};

/// A directory removed when dropped.
pub struct TempDir(PathBuf);

impl TempDir {
    #[allow(clippy::new_without_default)]
    pub fn new() -> TempDir {
        static N: AtomicUsize = AtomicUsize::new(0);
        let p = std::env::temp_dir().join(format!(
            "seda-http-test-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).expect("temp dir");
        TempDir(p)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A static server on an ephemeral port, with settings adjusted by `tweak`.
pub fn static_server(root: &Path, tweak: impl FnOnce(&mut ServeConfig)) -> StaticServer {
    let mut config = ServeConfig::default();
    config.statics.root = root.to_path_buf();
    config.http.addr = "127.0.0.1:0".parse().expect("addr");
    config.http.threads = 2;
    config.http.per_core = per_core_default();
    // SEDA_HTTP_H2C=1 runs the suite with HTTP/2 detection on (HTTP/1.1 must behave the same).
    config.http.h2c = std::env::var("SEDA_HTTP_H2C").is_ok_and(|v| v == "1");
    tweak(&mut config);
    StaticServer::start(config).expect("server starts")
}

/// Polls `cond` until it holds (true) or `limit` passes (false), for state that has no signal
/// to wait on (counters in a stats snapshot).
pub fn eventually(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + limit;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= end {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The front-end engine the suite runs on: per-core by default; `SEDA_HTTP_PER_CORE=0` runs
/// it on the shared work-stealing runtime.
pub fn per_core_default() -> bool {
    std::env::var("SEDA_HTTP_PER_CORE").map_or(true, |v| v != "0")
}
