//! The bottleneck service assembled: runtime, stage, front end; and its configuration file.

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use seda_http::HttpServer;
use seda_http::{ConfigError, HttpConfig};
use seda_http::{ServerShutdown, StartError};

use super::{BottleneckConfig, BottleneckError};

/// The whole configuration file of `seda serve bottleneck`:
///
/// ```toml
/// [http]                        # the front end (see seda_http::config)
/// threads = 1
///
/// [bottleneck]
/// work_kb = 256.0               # mean KiB read at quality 1
/// rounds = 16                   # checksum passes at quality 1
/// base_kb = 4096.0              # KiB checksummed whatever the quality
///
/// [stages.bottleneck.admission] # seda's own sections: [runtime], [domains.*], [stages.*]
/// kind = "degradation"
/// target_s = 5.0
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BottleneckServeConfig {
    /// Front end.
    pub http: HttpConfig,
    /// The service.
    pub bottleneck: BottleneckConfig,
    /// The runtime's stages and pools.
    pub runtime: seda::Config,
}

impl BottleneckServeConfig {
    /// Parses a TOML document.
    pub fn from_toml(text: &str) -> Result<Self, ConfigError> {
        let mut table: toml::Table =
            toml::from_str(text).map_err(|e| ConfigError::Toml(Box::new(e)))?;
        let http: HttpConfig = match table.remove("http") {
            Some(v) => v.try_into().map_err(ConfigError::section("[http]"))?,
            None => HttpConfig::default(),
        };
        let bottleneck: BottleneckConfig = match table.remove("bottleneck") {
            Some(v) => v.try_into().map_err(ConfigError::section("[bottleneck]"))?,
            None => BottleneckConfig::default(),
        };
        let runtime: seda::Config = toml::Value::Table(table)
            .try_into()
            .map_err(ConfigError::section("the runtime sections"))?;
        http.validate()?;
        bottleneck
            .validate()
            .map_err(|reason| ConfigError::Invalid {
                setting: "[bottleneck]",
                reason,
            })?;
        Ok(BottleneckServeConfig {
            http,
            bottleneck,
            runtime,
        })
    }

    /// Reads and parses a TOML file.
    pub fn from_file(path: &Path) -> Result<Self, ConfigError> {
        ConfigError::read_file(path, Self::from_toml)
    }

    /// The configuration as the TOML file [`from_toml`](Self::from_toml) reads back to the same
    /// value: what a program that starts `seda serve bottleneck` writes to its `--config` (the
    /// lab does), instead of formatting TOML by hand. One setting has no TOML form: an
    /// `http.admin_addr` of `None` is left out, and reads back as the default admin address.
    ///
    /// # Errors
    ///
    /// When a value has no TOML form (none of the settings' types lacks one today).
    pub fn to_toml(&self) -> Result<String, toml::ser::Error> {
        seda_http::config::sections_to_toml(
            &self.runtime,
            [
                ("http", toml::Value::try_from(&self.http)?),
                ("bottleneck", toml::Value::try_from(&self.bottleneck)?),
            ],
        )
    }
}

/// A running bottleneck service.
#[derive(Debug)]
pub struct BottleneckServer {
    runtime: seda::Runtime,
    http: HttpServer,
}

impl BottleneckServer {
    /// Starts the runtime, the stage (with `control`'s controller, which a
    /// `[stages.bottleneck]` section of the file overrides) and the front end.
    pub fn start(
        config: BottleneckServeConfig,
        control: Option<seda::AdmissionConfig>,
    ) -> Result<BottleneckServer, BottleneckStartError> {
        let runtime = seda::Runtime::builder()
            .config(config.runtime.clone())
            .start()
            .map_err(|e| BottleneckStartError::Start(StartError::Runtime(e)))?;
        let (sink, stats) = match super::build(&runtime, &config.bottleneck, control) {
            Ok(s) => s,
            Err(e) => {
                runtime.shutdown_timeout(Duration::from_secs(1));
                return Err(BottleneckStartError::Service(e));
            }
        };
        let http = match HttpServer::start_with_stats(
            config.http,
            sink,
            Some(runtime.clone()),
            Some(stats),
        ) {
            Ok(h) => h,
            Err(e) => {
                runtime.shutdown_timeout(Duration::from_secs(1));
                return Err(BottleneckStartError::Start(StartError::Io(e)));
            }
        };
        Ok(BottleneckServer { runtime, http })
    }

    /// Where the service listens.
    pub fn local_addr(&self) -> SocketAddr {
        self.http.local_addr()
    }

    /// Where the admin address listens (stats, graph, `/metrics`, the dashboard), if on.
    pub fn admin_addr(&self) -> Option<SocketAddr> {
        self.http.admin_addr()
    }

    /// The stage runtime (stats, graph).
    pub fn runtime(&self) -> &seda::Runtime {
        &self.runtime
    }

    /// Graceful shutdown: stop accepting, finish in-flight requests (at most `timeout`), then
    /// drain and stop the stage (at most `timeout` again). The data file is removed.
    pub fn shutdown(self, timeout: Duration) -> ServerShutdown {
        ServerShutdown::of(self.http, self.runtime, timeout)
    }
}

/// Why the bottleneck server could not start.
#[derive(Debug)]
pub enum BottleneckStartError {
    /// The runtime or the front end.
    Start(StartError),
    /// The service's own settings or data file.
    Service(BottleneckError),
}

impl std::fmt::Display for BottleneckStartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BottleneckStartError::Start(e) => e.fmt(f),
            BottleneckStartError::Service(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for BottleneckStartError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_all_sections() {
        let c = BottleneckServeConfig::from_toml(
            "[http]\nthreads = 1\n[bottleneck]\nwork_kb = 8.0\nrounds = 2\n\
             [stages.bottleneck.admission]\nkind = \"degradation\"\ntarget_s = 5.0\n",
        )
        .expect("valid");
        assert_eq!(c.http.threads, 1);
        assert_eq!((c.bottleneck.work_kb, c.bottleneck.rounds), (8.0, 2));
        let a = c.runtime.stages["bottleneck"].admission.as_ref().unwrap();
        assert_eq!(
            (a.kind.as_str(), a.params["target_s"]),
            ("degradation", 5.0)
        );
    }

    #[test]
    fn a_configuration_written_as_toml_reads_back_the_same() {
        let mut c = BottleneckServeConfig::from_toml(
            "[runtime]\ntick_ms = 20\n[bottleneck]\ncores = 1.0\nwork_kb = 4.0\n\
             [stages.bottleneck]\nbatch = 1\nthreshold = 0\n\
             [stages.bottleneck.admission]\nkind = \"degradation\"\ntarget_s = 5.0\n",
        )
        .expect("valid");
        c.http.threads = 3;
        let text = c.to_toml().expect("has a TOML form");
        assert_eq!(
            BottleneckServeConfig::from_toml(&text).expect("reads"),
            c,
            "{text}"
        );
    }

    #[test]
    fn rejects_unknown_keys_and_bad_values() {
        for bad in [
            "[bottleneck]\nwork = 5\n",
            "[bottleneck]\nwork_kb = 0.0\n",
            "[bottleneck]\nrounds = 0\n",
            "[bottleneck]\nthreads = 0\n",
            "[bogus]\nx = 1\n",
        ] {
            assert!(BottleneckServeConfig::from_toml(bad).is_err(), "{bad}");
        }
    }
}
