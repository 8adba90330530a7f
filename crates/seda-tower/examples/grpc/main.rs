//! The layer in front of a tonic server, and tonic clients that honour its pushback.
//!
//! `cargo run --release -p seda-tower --example grpc -- [callers] [seconds]` starts a gRPC
//! service of known capacity on 127.0.0.1 (two permits, each held 100 ms per call: 20 calls a
//! second) behind `SedaLayer::response_time(300 ms).grpc()`, then drives it with `callers`
//! (16) closed-loop clients for `seconds` (5). Each client retries a refused call through
//! `PushbackPolicy` (`retry.rs`), waiting the server's `grpc-retry-pushback-ms`. It prints the
//! layer's counters every second and, at the end, what the clients saw.

mod proto;
mod retry;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use proto::{WorkClient, WorkReply, WorkRequest, WorkServer};
use retry::PushbackPolicy;
use seda_tower::SedaLayer;
use tokio::sync::Semaphore;
use tower::{ServiceBuilder, ServiceExt};

/// The service's capacity: `PERMITS` calls at once, each holding its permit `HOLD`.
const PERMITS: usize = 2;
const HOLD: Duration = Duration::from_millis(100);

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let callers: usize = args.next().map_or(Ok(16), |a| a.parse())?;
    let seconds: u64 = args.next().map_or(Ok(5), |a| a.parse())?;
    if callers == 0 || !(1..=600).contains(&seconds) {
        return Err("usage: grpc [callers >= 1] [seconds 1..=600]".into());
    }

    // The server: the layer outermost, so a refused call never reaches the service.
    let layer = SedaLayer::response_time(Duration::from_millis(300))?.grpc();
    let stats = layer.stats();
    let permits = Arc::new(Semaphore::new(PERMITS));
    let service = WorkServer::new(move |req: WorkRequest| {
        let permits = Arc::clone(&permits);
        async move {
            let _permit = permits.acquire().await;
            tokio::time::sleep(HOLD).await;
            Ok(WorkReply {
                message: format!("done for {}", req.name),
            })
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let uri = format!("http://{}", listener.local_addr()?);
    tokio::spawn(
        tonic::transport::Server::builder()
            .layer(layer)
            .add_service(service)
            .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener)),
    );
    println!(
        "serving on {uri}: {PERMITS} permits x {HOLD:?} = {} calls/s; {callers} callers for {seconds} s",
        PERMITS as f64 / HOLD.as_secs_f64()
    );

    // The clients: each call retried up to 4 times, after the server's pushback.
    let client = WorkClient::connect(uri).await?;
    let outcomes = Arc::new(Mutex::new(BTreeMap::<String, u64>::new()));
    let end = Instant::now() + Duration::from_secs(seconds);
    let mut tasks = Vec::new();
    for i in 0..callers {
        let svc = ServiceBuilder::new()
            .retry(PushbackPolicy::new(5, Duration::from_millis(100)))
            .service(client.clone());
        let outcomes = Arc::clone(&outcomes);
        tasks.push(tokio::spawn(async move {
            while Instant::now() < end {
                let req = WorkRequest {
                    name: format!("caller {i}"),
                };
                let outcome = match svc.clone().oneshot(req).await {
                    Ok(_) => "ok".to_owned(),
                    Err(status) => format!("{:?}", status.code()),
                };
                *outcomes.lock().unwrap().entry(outcome).or_default() += 1;
            }
        }));
    }

    let mut last = stats.stats();
    for second in 1..=seconds {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let now = stats.stats();
        let rejected: u64 = now.rejected.iter().map(|(_, n)| n).sum::<u64>()
            - last.rejected.iter().map(|(_, n)| n).sum::<u64>();
        println!(
            "{second:>3} s: admitted {:>4}, rejected {rejected:>4}",
            now.admitted - last.admitted
        );
        last = now;
    }
    for t in tasks {
        t.await?;
    }
    let s = stats.stats();
    println!(
        "layer: admitted {}, completed {}, rejected {:?}, dropped {}",
        s.admitted, s.completed, s.rejected, s.dropped
    );
    println!(
        "calls as the clients saw them (after retries): {:?}",
        outcomes.lock().unwrap()
    );
    Ok(())
}
