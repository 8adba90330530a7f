//! The proxy's configuration: a TOML file, or the flags of the simple case.
//!
//! ```toml
//! listen = "127.0.0.1:8080"
//! upstream_timeout_ms = 30000      # time to the upstream's response head (504 after it)
//! trusted_tiers = ["10.0.0.5"]     # clients whose x-seda-criticality is honoured (default none)
//! refusal = "cap:10"               # refusals a connection gets at once a second; the rest paced
//! refusals_per_s = 5000            # refusals the proxy answers at once a second, across its
//!                                  # connections; the rest paced (0: no cap)
//!
//! [[route]]                        # the longest matching prefix wins
//! prefix = "/search"
//! upstream = "http://127.0.0.1:9000"
//! target_ms = 500                  # p90 target: this route sheds load past it
//! criticality = "sheddable"        # forwarded as x-seda-criticality (default: critical)
//! deadline_ms = 2000               # budget of a request that brings none (grpc-timeout or
//!                                  # x-seda-deadline-ms); needs target_ms
//!
//! [[route]]
//! prefix = "/"
//! upstream = "http://127.0.0.1:9000"   # no target_ms: forwarded without admission control
//! ```

use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::time::Duration;

use http::Uri;
use seda_control::RefusalPolicy;
use seda_control::refusal::DEFAULT_SERVER_CAP_PER_S;
use seda_tower::Criticality;
use serde::Deserialize;

/// Default time to wait for an upstream's response head.
pub const DEFAULT_UPSTREAM_TIMEOUT: Duration = Duration::from_secs(30);
/// Default time a client has to send its request head.
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// Default most client connections open at once (more wait in the listen backlog).
pub const DEFAULT_MAX_CONNECTIONS: usize = 10_000;

/// The whole proxy.
#[derive(Debug, Clone, PartialEq)]
pub struct ProxyConfig {
    /// Where the proxy listens.
    pub listen: SocketAddr,
    /// Time to wait for an upstream's response head before answering 504.
    pub upstream_timeout: Duration,
    /// Time a client has to send its request head before the connection is closed.
    pub header_read_timeout: Duration,
    /// Most client connections open at once.
    pub max_connections: usize,
    /// How the refusals on one connection are answered, so that clients which resend at once
    /// cannot spend the CPU the admitted requests need (`seda_control::refusal`; default
    /// `cap:10`).
    pub refusal: RefusalPolicy,
    /// Refusals a second the proxy answers at once across its connections; past it a refusal
    /// waits its turn, so many connections that resend at once cannot spend the CPU either
    /// ([`seda_control::ServerRefusals`]; default 5,000; 0: no cap).
    pub refusals_per_s: u32,
    /// The routes, in the order given.
    pub routes: Vec<RouteConfig>,
    /// Clients (our own front tiers) whose `x-seda-criticality` header is honoured; from any
    /// other client it is replaced by the route's criticality (see [`crate::criticality`]).
    pub trusted_tiers: Vec<IpAddr>,
}

/// One route: a path prefix, where it goes, and its own admission control.
#[derive(Debug, Clone, PartialEq)]
pub struct RouteConfig {
    /// Path prefix, matched at a segment boundary (`/search` matches `/search` and
    /// `/search/x`, not `/searchable`).
    pub prefix: String,
    /// The upstream, `http://host:port` (plain HTTP/1.1).
    pub upstream: Uri,
    /// The route's p90 response-time target; `None` forwards without admission control.
    pub target: Option<Duration>,
    /// `Retry-After` of the route's 503s while refusals are few, in seconds (stretched up to
    /// 24 x while the route refuses more than it admits).
    pub retry_after_s: u32,
    /// The criticality of the route's requests (from clients not trusted to say their own),
    /// forwarded upstream in `x-seda-criticality`; critical by default.
    pub criticality: Criticality,
    /// The budget of a request that brings none in `grpc-timeout` or `x-seda-deadline-ms`
    /// (see [`seda_tower::Deadlines`]). Routes with a target read those headers whether or
    /// not this is set; `None` leaves a request without them without a deadline.
    pub deadline: Option<Duration>,
}

/// What is wrong with a configuration.
#[derive(Debug)]
pub enum ConfigError {
    /// The file could not be read.
    Read(std::io::Error),
    /// The file is not valid TOML for a proxy configuration.
    Parse(toml::de::Error),
    /// A value is invalid; the message says which and why.
    Invalid(String),
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::Read(e) => write!(f, "cannot read the proxy configuration: {e}"),
            ConfigError::Parse(e) => write!(f, "invalid proxy configuration: {e}"),
            ConfigError::Invalid(m) => write!(f, "invalid proxy configuration: {m}"),
        }
    }
}

impl std::error::Error for ConfigError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ConfigError::Read(e) => Some(e),
            ConfigError::Parse(e) => Some(e),
            ConfigError::Invalid(_) => None,
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    listen: SocketAddr,
    upstream_timeout_ms: Option<u64>,
    header_read_timeout_ms: Option<u64>,
    max_connections: Option<usize>,
    refusal: Option<String>,
    refusals_per_s: Option<u32>,
    #[serde(rename = "route", default)]
    routes: Vec<FileRoute>,
    #[serde(default)]
    trusted_tiers: Vec<IpAddr>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileRoute {
    prefix: String,
    upstream: String,
    target_ms: Option<u64>,
    retry_after_s: Option<u32>,
    criticality: Option<String>,
    deadline_ms: Option<u64>,
}

impl ProxyConfig {
    /// The simple case: everything to one upstream, with a p90 target if given.
    pub fn single(
        listen: SocketAddr,
        upstream: &str,
        target: Option<Duration>,
    ) -> Result<Self, ConfigError> {
        let config = ProxyConfig {
            listen,
            upstream_timeout: DEFAULT_UPSTREAM_TIMEOUT,
            header_read_timeout: DEFAULT_HEADER_READ_TIMEOUT,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            refusal: RefusalPolicy::default(),
            refusals_per_s: DEFAULT_SERVER_CAP_PER_S,
            routes: vec![RouteConfig {
                prefix: "/".into(),
                upstream: parse_upstream(upstream)?,
                target,
                retry_after_s: seda_tower::DEFAULT_RETRY_AFTER_S,
                criticality: Criticality::default(),
                deadline: None,
            }],
            trusted_tiers: Vec::new(),
        };
        config.validate()?;
        Ok(config)
    }

    /// Reads a TOML file (see the module docs).
    pub fn from_file(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(ConfigError::Read)?;
        Self::from_toml(&text)
    }

    /// Parses TOML text (see the module docs).
    pub fn from_toml(text: &str) -> Result<Self, ConfigError> {
        let file: FileConfig = toml::from_str(text).map_err(ConfigError::Parse)?;
        let routes = file
            .routes
            .into_iter()
            .map(|r| {
                let criticality = parse_criticality(&r.prefix, r.criticality.as_deref())?;
                Ok(RouteConfig {
                    upstream: parse_upstream(&r.upstream)?,
                    prefix: r.prefix,
                    target: r.target_ms.map(Duration::from_millis),
                    retry_after_s: r.retry_after_s.unwrap_or(seda_tower::DEFAULT_RETRY_AFTER_S),
                    criticality,
                    deadline: r.deadline_ms.map(Duration::from_millis),
                })
            })
            .collect::<Result<_, ConfigError>>()?;
        let config = ProxyConfig {
            listen: file.listen,
            upstream_timeout: file
                .upstream_timeout_ms
                .map_or(DEFAULT_UPSTREAM_TIMEOUT, Duration::from_millis),
            header_read_timeout: file
                .header_read_timeout_ms
                .map_or(DEFAULT_HEADER_READ_TIMEOUT, Duration::from_millis),
            max_connections: file.max_connections.unwrap_or(DEFAULT_MAX_CONNECTIONS),
            refusal: match file.refusal {
                None => RefusalPolicy::default(),
                Some(text) => text
                    .parse()
                    .map_err(|e| ConfigError::Invalid(format!("refusal: {e}")))?,
            },
            refusals_per_s: file.refusals_per_s.unwrap_or(DEFAULT_SERVER_CAP_PER_S),
            routes,
            trusted_tiers: file.trusted_tiers,
        };
        config.validate()?;
        Ok(config)
    }

    fn validate(&self) -> Result<(), ConfigError> {
        let invalid = |m: String| Err(ConfigError::Invalid(m));
        if self.routes.is_empty() {
            return invalid("no [[route]]: give at least one (prefix = \"/\" for all)".into());
        }
        for (i, r) in self.routes.iter().enumerate() {
            if !r.prefix.starts_with('/') {
                return invalid(format!("route prefix {:?} must start with /", r.prefix));
            }
            if self.routes[..i].iter().any(|o| o.prefix == r.prefix) {
                return invalid(format!("route prefix {:?} is given twice", r.prefix));
            }
            if r.target.is_some_and(|t| t.is_zero()) {
                return invalid(format!("route {:?}: target_ms must be above 0", r.prefix));
            }
            if let Some(d) = r.deadline {
                if r.target.is_none() {
                    return invalid(format!(
                        "route {:?}: deadline_ms needs target_ms (deadlines are kept by the \
                         route's admission control)",
                        r.prefix
                    ));
                }
                if d.is_zero() || d > seda_tower::MAX_BUDGET {
                    return invalid(format!(
                        "route {:?}: deadline_ms must be above 0 and at most {} (a day)",
                        r.prefix,
                        seda_tower::MAX_BUDGET.as_millis()
                    ));
                }
            }
        }
        if self.upstream_timeout.is_zero() || self.header_read_timeout.is_zero() {
            return invalid("timeouts must be above 0 ms".into());
        }
        if self.max_connections == 0 {
            return invalid("max_connections must be above 0".into());
        }
        if let Err(e) = self.refusal.validate() {
            return invalid(format!("refusal: {e}"));
        }
        Ok(())
    }
}

/// `http://host:port[/base]`; anything else is refused with the reason.
fn parse_upstream(text: &str) -> Result<Uri, ConfigError> {
    let uri: Uri = text
        .parse()
        .map_err(|e| ConfigError::Invalid(format!("upstream {text:?} is not a URL: {e}")))?;
    if uri.scheme_str() != Some("http") {
        return Err(ConfigError::Invalid(format!(
            "upstream {text:?}: only http:// upstreams are supported (TLS is not)"
        )));
    }
    if uri.authority().is_none() {
        return Err(ConfigError::Invalid(format!(
            "upstream {text:?} has no host"
        )));
    }
    if uri.query().is_some() {
        return Err(ConfigError::Invalid(format!(
            "upstream {text:?} must not have a query"
        )));
    }
    Ok(uri)
}

/// The route `prefix`'s criticality from its configuration text (critical when absent). Here
/// rather than in `criticality` (the edge that applies it), so that module needs nothing of the
/// configuration's.
fn parse_criticality(prefix: &str, text: Option<&str>) -> Result<Criticality, ConfigError> {
    text.map_or(Ok(Criticality::default()), |t| {
        t.parse()
            .map_err(|e| ConfigError::Invalid(format!("route {prefix:?}: {e}")))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use seda_tower::Level;

    #[test]
    fn a_route_names_its_level_or_is_told_what_is_wrong() {
        assert_eq!(
            parse_criticality("/", None).unwrap(),
            Criticality::default()
        );
        assert_eq!(
            parse_criticality("/", Some("sheddable_plus"))
                .unwrap()
                .level,
            Level::SheddablePlus
        );
        let e = parse_criticality("/x", Some("urgent"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("\"/x\"") && e.contains("sheddable"), "{e}");
    }

    #[test]
    fn every_toml_block_of_the_readme_parses() {
        let mut parsed = Vec::new();
        let mut rest = include_str!("../README.md");
        while let Some(at) = rest.find("```toml\n") {
            let body = &rest[at + 8..];
            let end = body.find("```").expect("a closed block");
            let c = ProxyConfig::from_toml(&body[..end])
                .unwrap_or_else(|e| panic!("README block {}: {e}", parsed.len()));
            parsed.push(c);
            rest = &body[end + 3..];
        }
        assert!(
            parsed.len() >= 2,
            "the README's TOML blocks: {}",
            parsed.len()
        );
        // The criticality block says what it means.
        let crit = parsed
            .iter()
            .find(|c| !c.trusted_tiers.is_empty())
            .expect("the criticality block");
        assert_eq!(crit.routes[0].criticality.to_string(), "sheddable");
        assert_eq!(crit.routes[1].criticality, Criticality::default());
    }

    #[test]
    fn parses_the_documented_example() {
        let c = ProxyConfig::from_toml(
            r#"
            listen = "127.0.0.1:8080"
            [[route]]
            prefix = "/search"
            upstream = "http://127.0.0.1:9000"
            target_ms = 500
            deadline_ms = 2000
            [[route]]
            prefix = "/"
            upstream = "http://127.0.0.1:9000"
            "#,
        )
        .unwrap();
        assert_eq!(c.routes.len(), 2);
        assert_eq!(c.routes[0].target, Some(Duration::from_millis(500)));
        assert_eq!(c.routes[1].target, None);
        assert_eq!(c.routes[0].deadline, Some(Duration::from_secs(2)));
        assert_eq!(c.routes[1].deadline, None);
        assert_eq!(c.upstream_timeout, DEFAULT_UPSTREAM_TIMEOUT);
        assert_eq!(c.refusals_per_s, DEFAULT_SERVER_CAP_PER_S);
        let uncapped = ProxyConfig::from_toml(
            "listen = \"127.0.0.1:1\"\nrefusals_per_s = 0\n[[route]]\nprefix = \"/\"\nupstream = \"http://h:1\"",
        )
        .unwrap();
        assert_eq!(uncapped.refusals_per_s, 0);
    }

    #[test]
    fn bad_configs_say_what_is_wrong() {
        let cases = [
            ("listen = \"127.0.0.1:1\"", "no [[route]]"),
            ("listen = \"x\"", "invalid"),
            (
                "listen = \"127.0.0.1:1\"\n[[route]]\nprefix = \"a\"\nupstream = \"http://h:1\"",
                "must start with /",
            ),
            (
                "listen = \"127.0.0.1:1\"\n[[route]]\nprefix = \"/\"\nupstream = \"https://h:1\"",
                "only http://",
            ),
            (
                "listen = \"127.0.0.1:1\"\n[[route]]\nprefix = \"/\"\nupstream = \"http://h:1\"\ntarget_ms = 0",
                "above 0",
            ),
            ("listen = \"127.0.0.1:1\"\nbogus = 1", "unknown field"),
            (
                "listen = \"127.0.0.1:1\"\n[[route]]\nprefix = \"/\"\nupstream = \"http://h:1\"\ndeadline_ms = 100",
                "needs target_ms",
            ),
            (
                "listen = \"127.0.0.1:1\"\n[[route]]\nprefix = \"/\"\nupstream = \"http://h:1\"\ntarget_ms = 5\ndeadline_ms = 0",
                "deadline_ms must be above 0",
            ),
            (
                "listen = \"127.0.0.1:1\"\nrefusal = \"cap:0\"\n[[route]]\nprefix = \"/\"\nupstream = \"http://h:1\"",
                "at least 1 refusal",
            ),
        ];
        for (text, expect) in cases {
            let err = ProxyConfig::from_toml(text).unwrap_err().to_string();
            assert!(err.contains(expect), "{text:?}: {err}");
        }
    }
}
