//! The proxy between a real client and a real upstream, over sockets on 127.0.0.1.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioIo};
use seda_proxy::{Proxy, ProxyConfig};

/// An upstream with an echo, a bottleneck (one request at a time, 4 ms each), a fast path and
/// a path that never answers in time.
async fn upstream() -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let lock = Arc::new(tokio::sync::Mutex::new(()));
    tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            let lock = Arc::clone(&lock);
            tokio::spawn(async move {
                let svc = service_fn(move |req: Request<Incoming>| {
                    let lock = Arc::clone(&lock);
                    async move { Ok::<_, Infallible>(answer(req, &lock).await) }
                });
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), svc)
                    .await;
            });
        }
    });
    addr
}

async fn answer(req: Request<Incoming>, lock: &tokio::sync::Mutex<()>) -> Response<Full<Bytes>> {
    let path = req.uri().path().to_string();
    let text = match path.as_str() {
        "/echo" => {
            let head = format!(
                "{} {} xff={} conn={}\n",
                req.method(),
                req.uri(),
                req.headers()
                    .get("x-forwarded-for")
                    .map_or("-", |v| v.to_str().unwrap()),
                req.headers()
                    .get("x-hop")
                    .map_or("-", |v| v.to_str().unwrap()),
            );
            let body = req.into_body().collect().await.unwrap().to_bytes();
            return Response::new(Full::new([head.as_bytes(), &body].concat().into()));
        }
        "/slow" => {
            let _g = lock.lock().await;
            tokio::time::sleep(Duration::from_millis(4)).await;
            "slow"
        }
        "/hang" => {
            tokio::time::sleep(Duration::from_secs(10)).await;
            "late"
        }
        _ => "fast",
    };
    Response::new(Full::new(Bytes::from_static(text.as_bytes())))
}

async fn proxy(config: &str) -> String {
    let proxy = Proxy::bind(ProxyConfig::from_toml(config).unwrap())
        .await
        .unwrap();
    let addr = proxy.local_addr().unwrap();
    tokio::spawn(proxy.serve());
    format!("http://{addr}")
}

fn client() -> Client<hyper_util::client::legacy::connect::HttpConnector, Full<Bytes>> {
    Client::builder(TokioExecutor::new()).build_http()
}

async fn send(url: &str, method: &str, body: Bytes) -> (u16, Bytes) {
    let req = Request::builder()
        .method(method)
        .uri(url)
        .header("connection", "x-hop")
        .header("x-hop", "must not pass")
        .body(Full::new(body))
        .unwrap();
    let resp = client().request(req).await.unwrap();
    let status = resp.status().as_u16();
    (status, resp.into_body().collect().await.unwrap().to_bytes())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forwards_method_path_query_and_a_large_body_both_ways() {
    let up = upstream().await;
    let base = proxy(&format!(
        "listen = \"127.0.0.1:0\"\n[[route]]\nprefix = \"/\"\nupstream = \"http://{up}\"\ntarget_ms = 500"
    ))
    .await;
    let big: Bytes = (0..8 * 1024 * 1024)
        .map(|i| (i % 251) as u8)
        .collect::<Vec<u8>>()
        .into();
    let (status, body) = send(&format!("{base}/echo?q=1&r=%20"), "POST", big.clone()).await;
    assert_eq!(status, 200);
    let head_end = body.iter().position(|&b| b == b'\n').unwrap() + 1;
    let head = std::str::from_utf8(&body[..head_end]).unwrap();
    assert!(
        head.starts_with("POST /echo?q=1&r=%20 xff=127.0.0.1 conn=-"),
        "{head}"
    );
    assert_eq!(&body[head_end..], &big[..]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_failures_are_502_and_504_and_unknown_paths_404() {
    let up = upstream().await;
    // A port nothing listens on: bind one, note it, close it.
    let dead = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap()
        .local_addr()
        .unwrap();
    let base = proxy(&format!(
        "listen = \"127.0.0.1:0\"\nupstream_timeout_ms = 200\n\
         [[route]]\nprefix = \"/hang\"\nupstream = \"http://{up}\"\n\
         [[route]]\nprefix = \"/dead\"\nupstream = \"http://{dead}\"\n"
    ))
    .await;
    assert_eq!(
        send(&format!("{base}/hang"), "GET", Bytes::new()).await.0,
        504
    );
    assert_eq!(
        send(&format!("{base}/dead"), "GET", Bytes::new()).await.0,
        502
    );
    assert_eq!(
        send(&format!("{base}/other"), "GET", Bytes::new()).await.0,
        404
    );
}

/// A short response is read whole before it is sent (one write): one the upstream cuts short
/// is a 502, not a truncated 200.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_response_cut_short_upstream_is_a_502() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let up = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let (mut s, _) = listener.accept().await.unwrap();
            let mut head = [0u8; 1024];
            let _ = s.read(&mut head).await;
            let _ = s
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nonly ten b")
                .await;
        }
    });
    let base = proxy(&format!(
        "listen = \"127.0.0.1:0\"\n[[route]]\nprefix = \"/\"\nupstream = \"http://{up}\"\n"
    ))
    .await;
    let (status, body) = send(&format!("{base}/page"), "GET", Bytes::new()).await;
    assert_eq!(status, 502, "{body:?}");
}

/// Only the bottleneck route sheds: 32 clients flood `/slow` (target 20 ms, one request at a
/// time upstream) while two clients use `/fast` through its own route.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_bottleneck_route_sheds() {
    let up = upstream().await;
    let base = proxy(&format!(
        "listen = \"127.0.0.1:0\"\n\
         [[route]]\nprefix = \"/slow\"\nupstream = \"http://{up}\"\ntarget_ms = 20\n\
         [[route]]\nprefix = \"/\"\nupstream = \"http://{up}\"\ntarget_ms = 500\n"
    ))
    .await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(4);
    let mut tasks = Vec::new();
    for i in 0..34 {
        let url = format!("{base}/{}", if i < 32 { "slow" } else { "fast" });
        tasks.push(tokio::spawn(async move {
            let (mut ok, mut shed) = (0u32, 0u32);
            while tokio::time::Instant::now() < deadline {
                match send(&url, "GET", Bytes::new()).await.0 {
                    200 => ok += 1,
                    503 => {
                        shed += 1;
                        tokio::time::sleep(Duration::from_millis(5)).await;
                    }
                    s => panic!("{url}: status {s}"),
                }
            }
            (ok, shed)
        }));
    }
    let (mut slow, mut fast) = ((0, 0), (0, 0));
    for (i, t) in tasks.into_iter().enumerate() {
        let (ok, shed) = t.await.unwrap();
        let sum = if i < 32 { &mut slow } else { &mut fast };
        sum.0 += ok;
        sum.1 += shed;
    }
    assert!(
        slow.0 > 0 && slow.1 > 0,
        "slow route: ok {} shed {}",
        slow.0,
        slow.1
    );
    assert!(
        fast.0 > 0 && fast.1 == 0,
        "fast route: ok {} shed {}",
        fast.0,
        fast.1
    );
}
