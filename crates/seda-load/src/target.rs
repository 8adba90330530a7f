//! Target URLs (`http://host:port/path`) and duration strings (`250ms`, `5s`, `1m`).

use std::net::{SocketAddr, ToSocketAddrs};
use std::time::Duration;

use crate::LoadError;

/// A parsed `http://` URL: where to connect, what to put in `Host:`, and the path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The resolved address to connect to.
    pub addr: SocketAddr,
    /// The `Host:` header value (`host` or `host:port`).
    pub host_header: String,
    /// The path and query, starting with `/`.
    pub path: String,
}

impl Target {
    /// Parses and resolves `url`. Only plain `http://` is supported (no TLS).
    pub fn parse(url: &str) -> Result<Target, LoadError> {
        let bad = |reason: &str| LoadError::BadUrl {
            url: url.to_string(),
            reason: reason.into(),
        };
        let rest = url.strip_prefix("http://").ok_or_else(|| {
            bad("only http:// URLs are supported (no TLS); write http://host:port/path")
        })?;
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        if authority.is_empty() {
            return Err(bad("no host"));
        }
        if authority.contains('@') {
            return Err(bad("user information in URLs is not supported"));
        }
        if path.bytes().any(|b| b <= b' ' || b == 0x7f) {
            return Err(bad(
                "the path contains spaces or control characters; percent-encode them",
            ));
        }
        let path = match path.find('#') {
            Some(i) => &path[..i],
            None => path,
        };
        let with_port = if has_port(authority) {
            authority.to_string()
        } else {
            format!("{authority}:80")
        };
        let addr = with_port
            .to_socket_addrs()
            .map_err(|e| bad(&format!("cannot resolve {with_port}: {e}")))?
            .next()
            .ok_or_else(|| bad("the host resolved to no address"))?;
        Ok(Target {
            addr,
            host_header: authority.to_string(),
            path: path.to_string(),
        })
    }
}

fn has_port(authority: &str) -> bool {
    if let Some(end) = authority.rfind(']') {
        authority[end..].contains(':')
    } else {
        authority.contains(':')
    }
}

/// Parses a duration: a number followed by `us`, `ms`, `s`, `m` or `h` (a bare number is
/// seconds). Fractions are allowed: `1.5s`.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let value: f64 = num
        .parse()
        .map_err(|_| format!("{s:?} is not a duration (try 250ms, 5s, 1m)"))?;
    let scale = match unit.trim() {
        "us" | "µs" => 1e-6,
        "ms" => 1e-3,
        "" | "s" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        other => {
            return Err(format!(
                "unknown unit {other:?} in duration {s:?} (use us, ms, s, m, h)"
            ));
        }
    };
    let secs = value * scale;
    if !secs.is_finite() || !(0.0..=1e9).contains(&secs) {
        return Err(format!("duration {s:?} is out of range"));
    }
    Ok(Duration::from_secs_f64(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_urls() {
        let t = Target::parse("http://127.0.0.1:8080/a/b?x=1").unwrap();
        assert_eq!(t.addr, "127.0.0.1:8080".parse().unwrap());
        assert_eq!(t.host_header, "127.0.0.1:8080");
        assert_eq!(t.path, "/a/b?x=1");
        let t = Target::parse("http://127.0.0.1").unwrap();
        assert_eq!(t.addr.port(), 80);
        assert_eq!(t.path, "/");
    }

    #[test]
    fn rejects_bad_urls_with_reasons() {
        for u in [
            "https://x/",
            "127.0.0.1:80/",
            "http:///x",
            "http://a b/",
            "http://h:99999/",
        ] {
            let e = Target::parse(u).unwrap_err();
            assert!(matches!(e, LoadError::BadUrl { .. }), "{u}: {e}");
        }
    }

    #[test]
    fn parses_durations() {
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_duration("2").unwrap(), Duration::from_secs(2));
        assert_eq!(parse_duration("1m").unwrap(), Duration::from_secs(60));
        assert!(parse_duration("5 parsecs").is_err());
        assert!(parse_duration("").is_err());
    }
}
