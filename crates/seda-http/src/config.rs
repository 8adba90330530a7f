//! Settings of the front end and the static-file service, from code or a TOML file.
//!
//! ```toml
//! [http]
//! addr = "127.0.0.1:8080"
//! threads = 2                  # front-end threads (0: one per core)
//! per_core = true             # one runtime + SO_REUSEPORT listener per thread, or one
//!                              # work-stealing runtime (false)
//! h2c = false                  # also HTTP/2 with prior knowledge
//! fast_h1 = true               # simple GET/HEAD read and answered without hyper
//! max_connections = 10000      # past it: 503 and close
//! max_header_bytes = 16384     # request line + headers
//! max_headers = 100          # hyper keeps 100 on the stack; another count allocates
//! header_timeout_ms = 10000    # time to read a request head (slowloris)
//! idle_timeout_ms = 60000      # keep-alive idle time
//! park_after_ms = 250          # requests closer than this keep hyper's buffers (0: never)
//! max_body_bytes = 1048576
//! retry_after_s = 1            # Retry-After of a 503 while refusals are few (up to 24 x more)
//! refusal = "cap:10"           # one connection's refusals: none, delay:50ms, close:N, cap:N
//! refusals_per_s = 5000        # the server's refusals answered at once (0: no cap)
//! admin_addr = "127.0.0.1:9090" # stats, graph, /metrics, dashboard; never the service
//!                              # port (default 127.0.0.1:0: a free port, printed at start)
//!
//! [static]
//! cache_bytes = 268435456
//! policy = "s3fifo"            # or "lru"
//! serve_hidden = false         # /.env, /.git/...: 404 unless true
//! max_waiters_per_file = 256   # requests waiting on one file's read; 503 beyond
//!
//! [stages.file_io]             # seda's own sections: [runtime], [domains.*], [stages.*]
//! threads = 4
//! threshold = 1024
//! ```

use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use seda_control::RefusalPolicy;
use serde::{Deserialize, Serialize};

/// A configuration error: what was wrong and where, with the error that caused it.
#[derive(Debug)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file could not be read.
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The text is not TOML.
    Toml(Box<toml::de::Error>),
    /// A section has an unknown setting or one of the wrong type.
    Section {
        /// The section (`[http]`, `[static]`, `the runtime sections`...).
        section: &'static str,
        /// The parser's error.
        source: Box<toml::de::Error>,
    },
    /// A setting is out of range.
    Invalid {
        /// The setting (`http.max_header_bytes`...).
        setting: &'static str,
        /// What is wrong, with the value.
        reason: String,
    },
    /// An error in the file `path`.
    InFile {
        /// The file.
        path: PathBuf,
        /// The error.
        source: Box<ConfigError>,
    },
}

impl ConfigError {
    /// `section` of the document could not be read.
    pub fn section(section: &'static str) -> impl FnOnce(toml::de::Error) -> ConfigError {
        move |e| ConfigError::Section {
            section,
            source: Box::new(e),
        }
    }

    /// Reads and parses `path` with `parse`, naming the file in an error.
    pub fn read_file<T>(
        path: &Path,
        parse: impl FnOnce(&str) -> Result<T, ConfigError>,
    ) -> Result<T, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        parse(&text).map_err(|e| ConfigError::InFile {
            path: path.to_path_buf(),
            source: Box::new(e),
        })
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::Read { path, source } => {
                write!(f, "cannot read {}: {source}", path.display())
            }
            ConfigError::Toml(e) => write!(f, "invalid TOML: {e}"),
            ConfigError::Section { section, source } => write!(f, "in {section}: {source}"),
            ConfigError::Invalid { setting, reason } => write!(f, "{setting}: {reason}"),
            ConfigError::InFile { path, source } => write!(f, "{}: {source}", path.display()),
        }
    }
}

impl std::error::Error for ConfigError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ConfigError::Read { source, .. } => Some(source),
            ConfigError::Toml(e) | ConfigError::Section { source: e, .. } => Some(e.as_ref()),
            ConfigError::InFile { source, .. } => Some(source.as_ref()),
            ConfigError::Invalid { .. } => None,
        }
    }
}

/// Front-end settings: address, limits, the admin address.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct HttpConfig {
    /// Where the service listens (port 0: an ephemeral port).
    pub addr: SocketAddr,
    /// Front-end threads (0: one per core).
    pub threads: usize,
    /// One single-thread runtime and `SO_REUSEPORT` listener per thread (nginx's model)
    /// instead of one work-stealing runtime.
    pub per_core: bool,
    /// Also speak HTTP/2 without TLS (h2c, prior knowledge), detected from the connection
    /// preface. With it, the head limit of HTTP/1 requests is hyper's buffer bound
    /// (`max_header_bytes` rounded to whole reads) and HTTP/2 header lists are bounded by
    /// `max_header_bytes`.
    pub h2c: bool,
    /// Read and answer simple HTTP/1 requests (GET or HEAD without a body or a protocol
    /// change) without hyper ([`crate::wire`]): a reused buffer, one pre-rendered head and one
    /// `writev` per answer. Anything else still goes to hyper on the same connection. Off with
    /// `h2c`.
    pub fast_h1: bool,
    /// Listen backlog; large so the kernel queue never does admission control.
    pub backlog: u32,
    /// Open connections at most; past it a new connection gets a 503 and is closed.
    pub max_connections: usize,
    /// Largest request head (request line and headers), bytes; at least 8192.
    pub max_header_bytes: usize,
    /// Most header fields in a request.
    pub max_headers: usize,
    /// Time allowed to read a request head once its first byte arrived (and for a fresh
    /// connection to send a whole head), ms.
    pub header_timeout_ms: u64,
    /// Time a keep-alive connection may stay idle between requests, ms.
    pub idle_timeout_ms: u64,
    /// After an answer an HTTP/1 connection is parked (hyper's connection and its buffers are
    /// freed until the next bytes arrive, as nginx frees an idle connection's buffers) at
    /// once, unless its request came within this many ms of the one before: such a busy
    /// connection keeps them, and is parked once idle this long. 0 parks at once after every
    /// answer, which rebuilds hyper's connection for every request of a busy connection.
    pub park_after_ms: u64,
    /// Largest request body, bytes (larger: 413).
    pub max_body_bytes: usize,
    /// Seconds in the `Retry-After` header of a 503 while refusals are few; while the front
    /// end refuses more requests and connections than it admits, it asks for up to 24 x this
    /// ([`seda_control::RetryAfter`]).
    pub retry_after_s: u32,
    /// The admin address ([`crate::admin`]: `/_seda/stats`, `/_seda/graph`, `/metrics`, the
    /// dashboard), never the service port; `None` serves none of them. Loopback with a free
    /// port by default.
    pub admin_addr: Option<SocketAddr>,
    /// Time allowed for in-flight requests at shutdown, ms.
    pub shutdown_timeout_ms: u64,
    /// How the refusals on one connection are answered, against clients that resend at once
    /// on a 503 ([`seda_control::refusal`], the proxy's policy): `"none"`, `"delay:50ms"`,
    /// `"close:N"` (HTTP/1 only) or `"cap:N"` (the default, `cap:10`).
    #[serde(with = "refusal_text")]
    pub refusal: RefusalPolicy,
    /// Refusals a second the whole server answers at once, across its connections (a burst of
    /// as many); past it a refusal waits its turn on a timer, which costs no CPU, so clients
    /// that resend at once on many connections cannot spend the server's CPU on refusals.
    /// Every 503 of overload counts: the front end's and the service's own. 0: no cap
    /// ([`seda_control::ServerRefusals`]; default 5,000).
    pub refusals_per_s: u32,
}

/// A [`RefusalPolicy`] in configuration files: its text form (`cap:10`).
mod refusal_text {
    use seda_control::RefusalPolicy;
    use serde::{Deserialize, Deserializer, Serializer, de::Error};

    pub(super) fn serialize<S: Serializer>(p: &RefusalPolicy, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(p)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<RefusalPolicy, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(D::Error::custom)
    }
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            addr: SocketAddr::from(([127, 0, 0, 1], 8080)),
            threads: 0,
            per_core: true,
            h2c: false,
            fast_h1: true,
            backlog: 4096,
            max_connections: 10_000,
            max_header_bytes: 16 * 1024,
            max_headers: 100,
            header_timeout_ms: 10_000,
            idle_timeout_ms: 60_000,
            park_after_ms: 250,
            max_body_bytes: 1 << 20,
            retry_after_s: 1,
            admin_addr: Some(SocketAddr::from(([127, 0, 0, 1], 0))),
            shutdown_timeout_ms: 5_000,
            refusal: RefusalPolicy::default(),
            refusals_per_s: seda_control::refusal::DEFAULT_SERVER_CAP_PER_S,
        }
    }
}

impl HttpConfig {
    /// Checks the settings.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if let Err(e) = self.refusal.validate() {
            return Err(ConfigError::Invalid {
                setting: "http.refusal",
                reason: e.to_string(),
            });
        }
        if self.max_header_bytes < 8192 {
            return Err(ConfigError::Invalid {
                setting: "http.max_header_bytes",
                reason: format!("{} is below hyper's minimum of 8192", self.max_header_bytes),
            });
        }
        if self.max_headers == 0 || self.max_connections == 0 {
            return Err(ConfigError::Invalid {
                setting: "http.max_headers",
                reason: "http.max_headers and http.max_connections must be at least 1".into(),
            });
        }
        if let Some(admin) = self.admin_addr
            && admin.port() != 0
            && admin.port() == self.addr.port()
        {
            return Err(ConfigError::Invalid {
                setting: "http.admin_addr",
                reason: format!("{admin} uses the service's port: give it a port of its own"),
            });
        }
        if self.header_timeout_ms == 0 || self.idle_timeout_ms == 0 {
            return Err(ConfigError::Invalid {
                setting: "http.header_timeout_ms",
                reason: "http.header_timeout_ms and http.idle_timeout_ms must be at least 1".into(),
            });
        }
        Ok(())
    }

    /// The header read timeout.
    pub fn header_timeout(&self) -> Duration {
        Duration::from_millis(self.header_timeout_ms)
    }

    /// The keep-alive idle timeout.
    pub fn idle_timeout(&self) -> Duration {
        Duration::from_millis(self.idle_timeout_ms)
    }

    /// How long an idle HTTP/1 connection keeps hyper's connection before it is parked.
    pub fn park_after(&self) -> Duration {
        Duration::from_millis(self.park_after_ms)
    }

    /// The bounded wait of a graceful shutdown.
    pub fn shutdown_timeout(&self) -> Duration {
        Duration::from_millis(self.shutdown_timeout_ms)
    }
}

/// Eviction policy of the page cache.
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Policy {
    /// S3-FIFO (Yang et al., SOSP'23): a small probationary FIFO, a main FIFO with
    /// reinsertion, and a ghost FIFO of recently evicted keys.
    #[default]
    S3fifo,
    /// Least recently used.
    Lru,
}

/// Static-file service settings.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct StaticConfig {
    /// The directory served.
    pub root: PathBuf,
    /// Page cache capacity: total bytes of cached bodies.
    pub cache_bytes: usize,
    /// Eviction policy.
    pub policy: Policy,
    /// Largest file served, bytes (larger: 413; files are served from memory).
    pub max_file_bytes: u64,
    /// Worker threads of the blocking file-I/O stage (the config's `[stages.file_io]` wins).
    pub io_threads: usize,
    /// Queue threshold of the file-I/O stage.
    pub io_threshold: usize,
    /// Seconds in the `Retry-After` header of a 503.
    pub retry_after_s: u32,
    /// Serve hidden files and directories (a name starting with `.`, such as `/.env` or
    /// `/.git/config`). Off by default: they are answered 404, as if absent.
    pub serve_hidden: bool,
    /// Requests that may wait on one file's read (concurrent misses share one read); past it
    /// a miss is answered 503 like a full queue.
    pub max_waiters_per_file: usize,
}

impl Default for StaticConfig {
    fn default() -> Self {
        StaticConfig {
            root: PathBuf::from("."),
            cache_bytes: 256 << 20,
            policy: Policy::S3fifo,
            max_file_bytes: 64 << 20,
            io_threads: 4,
            io_threshold: 1024,
            retry_after_s: 1,
            serve_hidden: false,
            max_waiters_per_file: 256,
        }
    }
}

/// Everything `seda serve static` reads: `[http]`, `[static]`, and seda's own sections.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServeConfig {
    /// Front end.
    pub http: HttpConfig,
    /// Static-file service.
    pub statics: StaticConfig,
    /// The runtime's stages and pools.
    pub runtime: seda::Config,
}

impl ServeConfig {
    /// Parses a TOML document.
    pub fn from_toml(text: &str) -> Result<Self, ConfigError> {
        let mut table: toml::Table =
            toml::from_str(text).map_err(|e| ConfigError::Toml(Box::new(e)))?;
        let http = match table.remove("http") {
            Some(v) => v.try_into().map_err(ConfigError::section("[http]"))?,
            None => HttpConfig::default(),
        };
        let statics = match table.remove("static") {
            Some(v) => v.try_into().map_err(ConfigError::section("[static]"))?,
            None => StaticConfig::default(),
        };
        let runtime: seda::Config = toml::Value::Table(table)
            .try_into()
            .map_err(ConfigError::section("the runtime sections"))?;
        http.validate()?;
        Ok(ServeConfig {
            http,
            statics,
            runtime,
        })
    }

    /// Reads and parses a TOML file.
    pub fn from_file(path: &Path) -> Result<Self, ConfigError> {
        ConfigError::read_file(path, Self::from_toml)
    }

    /// The configuration as the TOML file [`from_toml`](Self::from_toml) reads back to the same
    /// value (an `http.admin_addr` of `None` excepted: it has no TOML form, and reads back as
    /// the default).
    ///
    /// # Errors
    ///
    /// When a value has no TOML form (none of the settings' types lacks one today).
    pub fn to_toml(&self) -> Result<String, toml::ser::Error> {
        sections_to_toml(
            &self.runtime,
            [
                ("http", toml::Value::try_from(&self.http)?),
                ("static", toml::Value::try_from(&self.statics)?),
            ],
        )
    }
}

/// A server's TOML file: seda's own sections (`[runtime]`, `[stages.*]`...) from `runtime`,
/// beside the server's `sections` (`[http]`...), as the servers' `from_toml` split them.
///
/// # Errors
///
/// When a section cannot be written as TOML.
pub fn sections_to_toml<const N: usize>(
    runtime: &seda::Config,
    sections: [(&str, toml::Value); N],
) -> Result<String, toml::ser::Error> {
    let mut doc = match toml::Value::try_from(runtime)? {
        toml::Value::Table(t) => t,
        _ => toml::Table::new(),
    };
    for (name, value) in sections {
        doc.insert(name.to_string(), value);
    }
    toml::to_string(&doc)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_all_sections() {
        let c = ServeConfig::from_toml(
            "[http]\nmax_connections = 5\n[static]\npolicy = \"lru\"\n\
             [stages.file_io]\nthreads = 3\n",
        )
        .expect("valid");
        assert_eq!(c.http.max_connections, 5);
        assert_eq!(c.statics.policy, Policy::Lru);
        assert_eq!(c.runtime.stages["file_io"].threads, Some(3));
    }

    #[test]
    fn rejects_unknown_keys_and_small_limits() {
        assert!(ServeConfig::from_toml("[http]\nmax_conns = 5\n").is_err());
        assert!(ServeConfig::from_toml("[http]\nmax_header_bytes = 100\n").is_err());
        assert!(ServeConfig::from_toml("[bogus]\nx = 1\n").is_err());
    }
}
