//! Our own server, `seda serve static`, configured for one core.
//!
//! `seda serve static --root DIR --addr 127.0.0.1:PORT --config FILE` with a TOML file of
//! `[http]` and `[static]` settings (`seda-http`'s `ServeConfig`). One front-end thread, like
//! nginx's one worker: the server is pinned to one core, and a second thread there would only
//! add switches. Its listen backlog is its default, 4096.

use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;

use seda_http::ServeConfig;

use super::{PeerError, config_path, write_config};

/// The settings the lab varies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SedaSettings {
    /// Front-end threads (`[http] threads`).
    pub threads: usize,
    /// Page-cache capacity in bytes (`[static] cache_bytes`).
    pub cache_bytes: usize,
}

impl Default for SedaSettings {
    /// One thread and Haboob's 200 MB page cache (`haboob.cfg`: 204800 KB).
    fn default() -> Self {
        SedaSettings {
            threads: 1,
            cache_bytes: 204_800 * 1024,
        }
    }
}

/// The configuration `seda serve static` is given.
pub fn config(port: u16, settings: &SedaSettings) -> ServeConfig {
    let mut config = ServeConfig::default();
    config.http.addr = SocketAddr::from(([127, 0, 0, 1], port));
    config.http.threads = settings.threads;
    config.statics.cache_bytes = settings.cache_bytes;
    config
}

/// Writes `work_dir/seda.toml` and returns the command that runs `seda_bin serve static` with it.
pub fn command(
    seda_bin: &Path,
    root: &Path,
    port: u16,
    work_dir: &Path,
    settings: &SedaSettings,
) -> Result<Command, PeerError> {
    if !seda_bin.is_file() {
        return Err(PeerError::Io {
            what: format!("find the seda binary at {}", seda_bin.display()),
            source: std::io::ErrorKind::NotFound.into(),
        });
    }
    let root = config_path(root)?;
    let text = config(port, settings)
        .to_toml()
        .map_err(|e| PeerError::Io {
            what: "write seda's configuration as TOML".into(),
            source: std::io::Error::new(std::io::ErrorKind::InvalidData, e),
        })?;
    let conf = write_config(work_dir, "seda.toml", &text)?;
    let mut cmd = Command::new(seda_bin);
    cmd.args(["serve", "static", "--root", &root])
        .arg("--addr")
        .arg(format!("127.0.0.1:{port}"))
        .arg("--config")
        .arg(conf);
    Ok(cmd)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_config_is_one_thread_on_loopback() {
        let c = config(8126, &SedaSettings::default())
            .to_toml()
            .expect("a TOML form");
        let parsed = seda_http::ServeConfig::from_toml(&c).expect("seda serve static accepts it");
        assert_eq!(parsed.http.addr, SocketAddr::from(([127, 0, 0, 1], 8126)));
        assert_eq!(parsed.http.threads, 1);
        assert_eq!(parsed.statics.cache_bytes, 204_800 * 1024);
    }

    #[test]
    fn a_missing_binary_is_an_error() {
        let dir = std::env::temp_dir();
        let e = command(
            Path::new("/no/such/seda"),
            &dir,
            1,
            &dir,
            &SedaSettings::default(),
        );
        assert!(e.unwrap_err().to_string().contains("/no/such/seda"));
    }
}
