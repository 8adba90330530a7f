//! The proxy's upstream connections: one kept and reused while it stays open, replaced when the
//! upstream closes it, and pooled again only after a whole response, read or streamed.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use http::{Request, Response, header};
use http_body_util::{BodyExt, Empty, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioIo};
use seda_proxy::{Proxy, ProxyConfig};

/// Above the size the proxy reads whole (`BUFFER_BELOW`, 64 KiB): streamed.
const BIG: usize = 200 * 1024;

/// An upstream that counts the connections it accepts: `/close` answers with
/// `Connection: close` (hyper then closes the connection), `/big` with [`BIG`] bytes, the rest
/// with `ok`.
async fn upstream(accepted: Arc<AtomicUsize>) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            accepted.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let svc = service_fn(|req: Request<Incoming>| async move {
                    let response = match req.uri().path() {
                        "/close" => Response::builder()
                            .header(header::CONNECTION, "close")
                            .body(Full::new(Bytes::from_static(b"ok"))),
                        "/big" => Response::builder().body(Full::new(vec![7u8; BIG].into())),
                        _ => Response::builder().body(Full::new(Bytes::from_static(b"ok"))),
                    };
                    Ok::<_, Infallible>(response.unwrap())
                });
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), svc)
                    .await;
            });
        }
    });
    addr
}

async fn get(url: &str) -> (u16, Bytes) {
    let client = Client::builder(TokioExecutor::new()).build_http::<Empty<Bytes>>();
    let resp = client.get(url.parse().unwrap()).await.unwrap();
    let status = resp.status().as_u16();
    (status, resp.into_body().collect().await.unwrap().to_bytes())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_upstream_connection_serves_requests_in_turn_until_the_upstream_closes_it() {
    let accepted = Arc::new(AtomicUsize::new(0));
    let up = upstream(Arc::clone(&accepted)).await;
    let config =
        format!("listen = \"127.0.0.1:0\"\n[[route]]\nprefix = \"/\"\nupstream = \"http://{up}\"");
    let proxy = Proxy::bind(ProxyConfig::from_toml(&config).unwrap())
        .await
        .unwrap();
    let url = format!("http://{}", proxy.local_addr().unwrap());
    tokio::spawn(proxy.serve());

    for _ in 0..5 {
        assert_eq!(
            get(&format!("{url}/a")).await,
            (200, Bytes::from_static(b"ok"))
        );
    }
    assert_eq!(
        accepted.load(Ordering::SeqCst),
        1,
        "short answers reuse one connection"
    );

    // A streamed body gives its connection back at its end.
    for _ in 0..3 {
        let (status, body) = get(&format!("{url}/big")).await;
        assert_eq!((status, body.len()), (200, BIG));
        assert!(body.iter().all(|&b| b == 7));
    }
    assert_eq!(
        accepted.load(Ordering::SeqCst),
        1,
        "streamed answers reuse it too"
    );

    // The upstream closes the connection after this answer: the next request gets a new one.
    assert_eq!(get(&format!("{url}/close")).await.0, 200);
    for _ in 0..3 {
        assert_eq!(
            get(&format!("{url}/a")).await,
            (200, Bytes::from_static(b"ok"))
        );
    }
    assert_eq!(accepted.load(Ordering::SeqCst), 2);
}
