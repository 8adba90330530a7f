//! Deadlines through the proxy, between a real client and a real upstream over sockets on
//! 127.0.0.1: the upstream gets less budget than the client gave, a spent budget never reaches
//! it, and a call still running at its deadline is stopped, its upstream connection closed.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use seda_proxy::{Proxy, ProxyConfig, RouteStats};
use seda_tower::{DEADLINE, DEADLINE_HEADER, GRPC_TIMEOUT, REJECT_HEADER, parse_deadline_ms};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

/// A plain-TCP upstream, so the test sees the connection itself: `/budget` answers with the
/// deadline headers it got; `/hang` never answers and reports when its client hangs up.
struct Upstream {
    addr: std::net::SocketAddr,
    requests: Arc<AtomicUsize>,
    closed: mpsc::UnboundedReceiver<()>,
}

async fn upstream() -> Upstream {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let requests = Arc::new(AtomicUsize::new(0));
    let (closed_tx, closed) = mpsc::unbounded_channel();
    let r = Arc::clone(&requests);
    tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            tokio::spawn(connection(stream, Arc::clone(&r), closed_tx.clone()));
        }
    });
    Upstream {
        addr,
        requests,
        closed,
    }
}

async fn connection(
    mut stream: TcpStream,
    requests: Arc<AtomicUsize>,
    closed: mpsc::UnboundedSender<()>,
) {
    let mut buf = Vec::new();
    loop {
        let mut chunk = [0u8; 4096];
        while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
        requests.fetch_add(1, Ordering::SeqCst);
        let head = String::from_utf8_lossy(&buf).to_lowercase();
        buf.clear();
        if head.starts_with("get /hang") {
            // Wait for the proxy to hang up: a read of 0 bytes.
            while let Ok(n) = stream.read(&mut chunk).await {
                if n == 0 {
                    break;
                }
            }
            let _ = closed.send(());
            return;
        }
        let header = |name: &str| {
            head.lines()
                .find_map(|l| l.strip_prefix(&format!("{name}: ")).map(str::trim))
                .unwrap_or("-")
                .to_string()
        };
        let body = format!("{} {}", header(DEADLINE_HEADER), header(GRPC_TIMEOUT));
        let reply = format!(
            "HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        );
        if stream.write_all(reply.as_bytes()).await.is_err() {
            return;
        }
    }
}

async fn proxy(up: std::net::SocketAddr) -> (String, impl Fn() -> Vec<RouteStats>) {
    let config = format!(
        "listen = \"127.0.0.1:0\"\n\
         [[route]]\nprefix = \"/\"\nupstream = \"http://{up}\"\ntarget_ms = 5000\n\
         [[route]]\nprefix = \"/default\"\nupstream = \"http://{up}/budget\"\ntarget_ms = 5000\ndeadline_ms = 2000\n"
    );
    let proxy = Proxy::bind(ProxyConfig::from_toml(&config).unwrap())
        .await
        .unwrap();
    let addr = proxy.local_addr().unwrap();
    let stats = proxy.stats_reader();
    tokio::spawn(proxy.serve());
    (format!("http://{addr}"), stats)
}

async fn get(url: &str, headers: &[(&str, &str)]) -> (StatusCode, http::HeaderMap, String) {
    let client = Client::builder(TokioExecutor::new()).build_http::<Empty<Bytes>>();
    let mut req = Request::get(url);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = client
        .request(req.body(Empty::new()).unwrap())
        .await
        .unwrap();
    let (parts, body) = resp.into_parts();
    let body = body.collect().await.unwrap().to_bytes();
    (
        parts.status,
        parts.headers,
        String::from_utf8_lossy(&body).into(),
    )
}

fn deadline_stats(stats: &[RouteStats], prefix: &str) -> seda_tower::DeadlineStats {
    let route = stats.iter().find(|r| r.prefix == prefix).unwrap();
    route.admission.as_ref().unwrap().deadline.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_upstream_gets_less_budget_than_the_client_gave() {
    let up = upstream().await;
    let (base, _) = proxy(up.addr).await;
    for (headers, given_ms, grpc) in [
        (&[(DEADLINE_HEADER, "5000")][..], 5000, false),
        (&[(GRPC_TIMEOUT, "4S")][..], 4000, true),
        (&[][..], 2000, false), // the route's deadline_ms
    ] {
        let url = if headers.is_empty() {
            format!("{base}/default")
        } else {
            format!("{base}/budget")
        };
        let (status, _, body) = get(&url, headers).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let (ms, grpc_timeout) = body.split_once(' ').unwrap();
        let forwarded = parse_deadline_ms(ms.as_bytes()).expect("a budget reached the upstream");
        assert!(forwarded > Duration::ZERO, "{headers:?}: {body}");
        // Less than given, by at least the propagation allowance.
        assert!(
            forwarded <= Duration::from_millis(given_ms - 5),
            "{headers:?}: {body}"
        );
        if grpc {
            assert_eq!(grpc_timeout, format!("{}m", forwarded.as_millis()));
        } else {
            assert_eq!(grpc_timeout, "-");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spent_budget_never_reaches_the_upstream() {
    let up = upstream().await;
    let (base, stats) = proxy(up.addr).await;
    // 0: refused at the door; 3 ms: admitted, but under the 5 ms allowance nothing is left to
    // send on, so the proxy answers without calling.
    for ms in ["0", "3"] {
        let (status, headers, _) = get(&format!("{base}/budget"), &[(DEADLINE_HEADER, ms)]).await;
        assert_eq!(status, StatusCode::GATEWAY_TIMEOUT, "{ms}");
        assert_eq!(headers[REJECT_HEADER], DEADLINE, "{ms}");
    }
    assert_eq!(
        up.requests.load(Ordering::SeqCst),
        0,
        "the upstream was called"
    );
    assert_eq!(deadline_stats(&stats(), "/").refused_passed, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_past_its_deadline_is_stopped_and_its_connection_closed() {
    let mut up = upstream().await;
    let (base, stats) = proxy(up.addr).await;
    let (status, headers, _) = tokio::time::timeout(
        Duration::from_secs(20),
        get(&format!("{base}/hang"), &[(DEADLINE_HEADER, "300")]),
    )
    .await
    .expect("the call was never stopped");
    assert_eq!(status, StatusCode::GATEWAY_TIMEOUT);
    assert_eq!(headers[REJECT_HEADER], DEADLINE);
    assert_eq!(up.requests.load(Ordering::SeqCst), 1);
    // The upstream saw the proxy hang up on the call it was running.
    tokio::time::timeout(Duration::from_secs(20), up.closed.recv())
        .await
        .expect("the upstream connection was left open")
        .unwrap();
    let d = deadline_stats(&stats(), "/");
    assert_eq!((d.cut, d.refused_passed, d.refused_predicted), (1, 0, 0));
}
