//! The proxy sets each route's criticality, forwards it upstream in `x-seda-criticality`, and
//! believes a client's own header only from a trusted tier: real sockets on 127.0.0.1 and
//! 127.0.0.2 (two loopback addresses, so one client is trusted and the other is not).

use std::convert::Infallible;
use std::net::SocketAddr;

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use seda_proxy::{Proxy, ProxyConfig};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpSocket;

/// An upstream answering with the criticality header it received.
async fn upstream() -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            tokio::spawn(async move {
                let svc = service_fn(|req: Request<Incoming>| async move {
                    let seen = req
                        .headers()
                        .get("x-seda-criticality")
                        .map_or("-".to_string(), |v| v.to_str().unwrap().to_string());
                    Ok::<_, Infallible>(Response::new(Full::new(Bytes::from(seen))))
                });
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), svc)
                    .await;
            });
        }
    });
    addr
}

/// Sends one request from `from` (a loopback address) and returns the response's body.
async fn get(from: &str, proxy: SocketAddr, path: &str, header: Option<&str>) -> String {
    let socket = TcpSocket::new_v4().unwrap();
    socket.bind(format!("{from}:0").parse().unwrap()).unwrap();
    let mut stream = socket.connect(proxy).await.unwrap();
    let extra = header.map_or(String::new(), |h| format!("x-seda-criticality: {h}\r\n"));
    let head = format!("GET {path} HTTP/1.1\r\nhost: proxy\r\n{extra}connection: close\r\n\r\n");
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut text = String::new();
    stream.read_to_string(&mut text).await.unwrap();
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    text.split("\r\n\r\n").nth(1).unwrap_or("").to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn routes_set_the_level_and_only_trusted_tiers_may_say_their_own() {
    let up = upstream().await;
    let config = format!(
        r#"
        listen = "127.0.0.1:0"
        trusted_tiers = ["127.0.0.2"]
        [[route]]
        prefix = "/prefetch"
        upstream = "http://{up}"
        target_ms = 500
        criticality = "sheddable"
        [[route]]
        prefix = "/"
        upstream = "http://{up}"
        "#
    );
    let proxy = Proxy::bind(ProxyConfig::from_toml(&config).unwrap())
        .await
        .unwrap();
    let addr = proxy.local_addr().unwrap();
    // With a trusted tier, one route may carry several levels: it admits through the gate.
    let stats = proxy.stats();
    let prefetch = stats.iter().find(|r| r.prefix == "/prefetch").unwrap();
    assert_eq!(
        prefetch.admission.as_ref().unwrap().controller,
        "criticality"
    );
    tokio::spawn(proxy.serve());
    let addr = SocketAddr::new("127.0.0.1".parse().unwrap(), addr.port());

    // An outside client's claim is replaced by the route's level.
    let seen = get("127.0.0.1", addr, "/prefetch/x", Some("critical_plus")).await;
    assert_eq!(seen, "sheddable");
    // Without a claim, the route's level; a route without one is critical.
    assert_eq!(get("127.0.0.1", addr, "/prefetch", None).await, "sheddable");
    assert_eq!(get("127.0.0.1", addr, "/other", None).await, "critical");
    // A trusted tier's level passes, cohort and all; an invalid one gives way to the route's.
    let seen = get(
        "127.0.0.2",
        addr,
        "/prefetch",
        Some("critical_plus;cohort=4"),
    )
    .await;
    assert_eq!(seen, "critical_plus;cohort=4");
    let seen = get("127.0.0.2", addr, "/prefetch", Some("urgent")).await;
    assert_eq!(seen, "sheddable");
}

#[test]
fn a_bad_level_or_address_in_the_file_is_an_error() {
    let bad_level = "listen = \"127.0.0.1:1\"\n[[route]]\nprefix = \"/\"\nupstream = \"http://h:1\"\ncriticality = \"urgent\"";
    let e = ProxyConfig::from_toml(bad_level).unwrap_err().to_string();
    assert!(e.contains("urgent") && e.contains("sheddable_plus"), "{e}");
    let bad_ip = "listen = \"127.0.0.1:1\"\ntrusted_tiers = [\"nobody\"]\n[[route]]\nprefix = \"/\"\nupstream = \"http://h:1\"";
    assert!(ProxyConfig::from_toml(bad_ip).is_err());
}
