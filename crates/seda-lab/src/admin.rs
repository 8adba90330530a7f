//! The lab's one client of a server's admin address: `/_seda/stats` read into its types
//! ([`StatsDocument`], the runtime's snapshots, a service's own section), and the operator's
//! `POST`s. A scenario never picks a figure out of the JSON by path: a field renamed in the
//! server is a compile error here, or a failed read, not a series that silently goes empty.
//!
//! Plain blocking HTTP/1.1, one connection per request (`Connection: close`): the admin address
//! is on loopback, outside the service's admission control, and is read a few times a second
//! at most.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use anyhow::{Context, Result, bail};
pub use seda_http::admin::StatsDocument;

/// Largest answer read (a runtime with a few dozen stages is well under this).
const MAX_BYTES: u64 = 4 << 20;
/// Longest a connection to the admin address may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);
/// Longest the answer may take.
const READ_TIMEOUT: Duration = Duration::from_secs(2);

/// The server's `/_seda/stats` at the admin address `addr`.
///
/// # Errors
///
/// The server did not answer 200, or its document is not a [`StatsDocument`] (a field the
/// server renamed, say).
pub fn stats(addr: SocketAddr) -> Result<StatsDocument> {
    let body = request(addr, "GET", "/_seda/stats")?;
    serde_json::from_slice(&body).with_context(|| format!("http://{addr}/_seda/stats"))
}

/// `GET path` from a lab service's own counters endpoint at `addr` (not an admin address:
/// `seda serve tier`'s `/_tier/stats`), read as `T`.
///
/// # Errors
///
/// The server did not answer 200 or its body is not a `T`.
pub fn get_json<T: serde::de::DeserializeOwned>(addr: SocketAddr, path: &str) -> Result<T> {
    let body = request(addr, "GET", path)?;
    serde_json::from_slice(&body).with_context(|| format!("http://{addr}{path}"))
}

/// `POST`s `path_and_query` (no body) to the admin address `addr`, as an operator would.
///
/// # Errors
///
/// The server did not answer 200.
pub fn post(addr: SocketAddr, path_and_query: &str) -> Result<()> {
    request(addr, "POST", path_and_query).map(drop)
}

/// One request on a connection of its own; the body of a 200 answer.
fn request(addr: SocketAddr, method: &str, path: &str) -> Result<Vec<u8>> {
    let url = format!("http://{addr}{path}");
    let mut s = TcpStream::connect_timeout(&addr, CONNECT_TIMEOUT)
        .with_context(|| format!("cannot connect to {url}"))?;
    s.set_read_timeout(Some(READ_TIMEOUT))?;
    s.set_write_timeout(Some(CONNECT_TIMEOUT))?;
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: lab\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )
    .with_context(|| format!("{method} {url}"))?;
    let mut raw = Vec::new();
    s.take(MAX_BYTES)
        .read_to_end(&mut raw)
        .with_context(|| format!("{method} {url}: reading the answer"))?;
    body_of(&raw).with_context(|| format!("{method} {url}"))
}

/// The body of a complete `Connection: close` answer, if its status is 200.
fn body_of(raw: &[u8]) -> Result<Vec<u8>> {
    let Some(end) = raw.windows(4).position(|w| w == b"\r\n\r\n") else {
        bail!("no complete answer head in {} bytes", raw.len());
    };
    let head = String::from_utf8_lossy(&raw[..end]);
    let status = head.lines().next().unwrap_or_default();
    if status.split_whitespace().nth(1) != Some("200") {
        bail!("answered `{status}`");
    }
    let body = &raw[end + 4..];
    let header = |name: &str| {
        head.lines().skip(1).find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_string())
        })
    };
    if header("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        bail!("a chunked answer (the admin address sends whole bodies)");
    }
    match header("content-length") {
        Some(n) => {
            let n: usize = n.parse().with_context(|| format!("Content-Length `{n}`"))?;
            if body.len() < n {
                bail!("the answer ended after {} of {n} body bytes", body.len());
            }
            Ok(body[..n].to_vec())
        }
        None => Ok(body.to_vec()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_200_gives_its_body_and_anything_else_an_error() {
        let ok = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}";
        assert_eq!(body_of(ok).unwrap(), b"{}");
        let short = b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\n{}";
        assert!(body_of(short).is_err());
        let refused = b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n";
        assert!(body_of(refused).unwrap_err().to_string().contains("404"));
        assert!(body_of(b"HTTP/1.1 200 OK\r\n").is_err());
    }

    #[test]
    fn reads_a_real_admin_address() {
        let rt = seda::Runtime::start().expect("runtime");
        let sink = rt
            .stage(seda::Stage::builder("s").handler(seda::handler::each(|_: u64, _| {})))
            .expect("stage");
        sink.enqueue(1).expect("admitted");
        let sources = seda_http::AdminSources {
            runtime: Some(rt.clone()),
            ..Default::default()
        };
        let admin = seda_http::AdminServer::start(([127, 0, 0, 1], 0).into(), sources)
            .expect("admin address");
        let doc = stats(admin.local_addr()).expect("stats");
        let runtime = doc.runtime.expect("a runtime");
        assert_eq!(runtime.stages[0].name, "s");
        assert_eq!(runtime.stages[0].totals.counters.admitted, 1);
        assert!(doc.frontend.is_none() && doc.service.is_none());
        // No global control to retarget: the server refuses, and the client says so.
        let err = post(admin.local_addr(), "/_seda/target?p90_ms=100").unwrap_err();
        assert!(
            format!("{err:#}").contains("answered `HTTP/1.1 4"),
            "{err:#}"
        );
        drop(admin);
        rt.shutdown();
    }
}
