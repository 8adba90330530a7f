//! The refusal policies over real sockets: a client that resends at once on its own
//! connection while others flood a route whose upstream cannot meet its target, so the route
//! refuses. What is asserted is the policy, whatever the controller admits: with `close:N` the
//! connection is closed right after the Nth refusal in a row and never before; with `delay:D`
//! no refusal arrives sooner than D after its request was sent (timers never fire early).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use seda_proxy::{Proxy, ProxyConfig};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// How long a test waits for the route to refuse before it gives up (it refuses within the
/// controller's first ticks: every answer takes 20 x its target).
const LIMIT: Duration = Duration::from_secs(15);

/// An upstream that answers every request after 20 ms.
async fn slow_upstream() -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let svc = service_fn(|_req: Request<Incoming>| async {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    Ok::<_, Infallible>(Response::new(Full::new(Bytes::from_static(b"page"))))
                });
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), svc)
                    .await;
            });
        }
    });
    addr
}

/// A proxy with a 1 ms target in front of the slow upstream, under `refusal`, and 32 clients
/// flooding it until the test ends (the controller admits at least 10 requests in flight
/// whatever the target, so the flood must hold more).
async fn refusing_proxy(refusal: &str) -> SocketAddr {
    let up = slow_upstream().await;
    let config = ProxyConfig::from_toml(&format!(
        "listen = \"127.0.0.1:0\"\nrefusal = \"{refusal}\"\n\
         [[route]]\nprefix = \"/\"\nupstream = \"http://{up}\"\ntarget_ms = 1\n"
    ))
    .unwrap();
    let proxy = Proxy::bind(config).await.unwrap();
    let addr = proxy.local_addr().unwrap();
    tokio::spawn(proxy.serve());
    for _ in 0..32 {
        tokio::spawn(async move {
            loop {
                let Ok(mut c) = Conn::open(addr).await else {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    continue;
                };
                while c.get().await.is_some() {}
            }
        });
    }
    addr
}

/// One response's status and whether it said `Connection: close`.
struct Answer {
    status: u16,
    close: bool,
}

/// A raw HTTP/1.1 connection, to see what the proxy does to the socket.
struct Conn {
    stream: TcpStream,
    buf: Vec<u8>,
}

impl Conn {
    async fn open(addr: SocketAddr) -> std::io::Result<Conn> {
        let stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        Ok(Conn {
            stream,
            buf: Vec::new(),
        })
    }

    /// `GET /` and its answer; `None` when the connection is closed.
    async fn get(&mut self) -> Option<Answer> {
        self.stream
            .write_all(b"GET / HTTP/1.1\r\nHost: test\r\n\r\n")
            .await
            .ok()?;
        let head_end = loop {
            if let Some(i) = self.buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
            if self.fill().await == 0 {
                return None;
            }
        };
        let head = String::from_utf8_lossy(&self.buf[..head_end]).to_ascii_lowercase();
        let status = head.get(9..12)?.parse().ok()?;
        let length: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .map_or(0, |v| v.trim().parse().unwrap_or(0));
        while self.buf.len() < head_end + length {
            if self.fill().await == 0 {
                return None;
            }
        }
        self.buf.drain(..head_end + length);
        Some(Answer {
            status,
            close: head.lines().any(|l| l == "connection: close"),
        })
    }

    /// Reads more; 0 at the end of the stream (or an error).
    async fn fill(&mut self) -> usize {
        let mut chunk = [0u8; 4096];
        match self.stream.read(&mut chunk).await {
            Ok(n) => {
                self.buf.extend_from_slice(&chunk[..n]);
                n
            }
            Err(_) => 0,
        }
    }

    /// Whether the peer closed the connection (the next read sees its end).
    async fn closed_by_peer(&mut self) -> bool {
        tokio::time::timeout(Duration::from_secs(5), self.fill())
            .await
            .is_ok_and(|n| n == 0)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_after_n_closes_the_connection_after_the_nth_refusal_in_a_row() {
    let addr = refusing_proxy("close:3").await;
    let end = Instant::now() + LIMIT;
    let mut closes = 0;
    while Instant::now() < end && closes < 3 {
        let mut c = Conn::open(addr).await.unwrap();
        let mut in_a_row = 0;
        loop {
            let a = c
                .get()
                .await
                .expect("an answer before the proxy says it closes");
            if a.status == 503 {
                in_a_row += 1;
            } else {
                assert_eq!(a.status, 200);
                in_a_row = 0;
            }
            if a.close {
                assert_eq!(a.status, 503, "only a refusal closes the connection");
                assert_eq!(in_a_row, 3, "closed after the third refusal in a row");
                assert!(c.closed_by_peer().await, "the proxy closed the socket");
                closes += 1;
                break;
            }
            assert!(in_a_row < 3, "a third refusal in a row did not close");
            assert!(Instant::now() < end, "no close within {LIMIT:?}");
        }
    }
    assert_eq!(closes, 3, "three connections closed by the policy");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delayed_refusal_is_not_answered_before_its_pause() {
    let addr = refusing_proxy("delay:200ms").await;
    let mut c = Conn::open(addr).await.unwrap();
    let end = Instant::now() + LIMIT;
    let mut refused = 0;
    while refused < 3 {
        assert!(Instant::now() < end, "{refused} refusals within {LIMIT:?}");
        let sent = Instant::now();
        let a = c.get().await.expect("an answer");
        if a.status == 503 {
            let took = sent.elapsed();
            assert!(
                took >= Duration::from_millis(200),
                "a refusal after {took:?}"
            );
            assert!(!a.close, "a delayed refusal keeps the connection");
            refused += 1;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_policy_refusals_are_answered_at_once_and_keep_the_connection() {
    let addr = refusing_proxy("none").await;
    let mut c = Conn::open(addr).await.unwrap();
    let end = Instant::now() + LIMIT;
    let mut refused = 0;
    // Many refusals in a row on one connection: none closes it.
    while refused < 50 {
        assert!(Instant::now() < end, "{refused} refusals within {LIMIT:?}");
        let a = c.get().await.expect("the connection stays open");
        assert!(!a.close);
        refused += u32::from(a.status == 503);
    }
}
