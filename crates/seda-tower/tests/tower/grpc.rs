//! The gRPC form of the layer in front of a real tonic server on 127.0.0.1, called by a real
//! tonic client: rejections are RESOURCE_EXHAUSTED with pushback, a retrying client honours
//! the pushback, `grpc-timeout` is the call's deadline, and termination answers
//! RESOURCE_EXHAUSTED.
//!
//! The services have designed capacity: a semaphore of K permits, each held a stated time per
//! call. Timings are chosen so that every assertion is about order (a retry no sooner than
//! the pushback, a deadline no sooner than its timeout), never about speed.

#[path = "../../examples/grpc/proto.rs"]
mod proto;
#[path = "../../examples/grpc/retry.rs"]
mod retry;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http::HeaderMap;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use proto::{WorkClient, WorkReply, WorkRequest, WorkServer};
use retry::{Pushback, PushbackPolicy};
use seda_control::peers::{ConcurrencyLimiter, LimitAlgorithm};
use seda_control::terminate::FixedThreshold;
use seda_control::{RejectReason, Time};
use seda_tower::{GrpcSedaLayer, REJECT_HEADER, RETRY_PUSHBACK_HEADER, SedaLayer};
use tokio::sync::{Semaphore, mpsc, oneshot, watch};
use tonic::metadata::MetadataValue;
use tonic::{Code, Request, Status};
use tower::{ServiceBuilder, ServiceExt};

use crate::common::Open;

/// A limit that never moves: the project's `ConcurrencyLimiter` enforcing this many calls at once,
/// so that which call is refused is known in advance.
struct Fixed(f64);

impl LimitAlgorithm for Fixed {
    fn name(&self) -> &'static str {
        "fixed"
    }
    fn limit(&self) -> f64 {
        self.0
    }
    fn on_sample(&mut self, _now: Time, _rtt: Duration, _inflight: usize, _did_drop: bool) {}
}

/// Serves `service` behind `layer` on 127.0.0.1 and connects a tonic client to it.
async fn serve<C>(layer: GrpcSedaLayer<C>, service: WorkServer) -> (WorkClient, String)
where
    C: seda_tower::Classify<http::Request<tonic::body::Body>> + Clone + Send + Sync + 'static,
{
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let uri = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(
        tonic::transport::Server::builder()
            .layer(layer)
            .add_service(service)
            .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener)),
    );
    (WorkClient::connect(uri.clone()).await.unwrap(), uri)
}

/// Calls `Do` over plain HTTP/2 (hyper) with a `grpc-timeout` header. tonic's client enforces
/// that timeout itself and gives up as CANCELLED at the same moment the server's deadline
/// passes, so only a client that waits shows what the server answers.
async fn call_waiting(uri: &str, grpc_timeout: &'static str, name: &str) -> HeaderMap {
    let client = Client::builder(TokioExecutor::new())
        .http2_only(true)
        .build_http::<Full<Bytes>>();
    let message = prost::Message::encode_to_vec(&work(name));
    // gRPC's framing: not compressed, then the message's length, big-endian.
    let mut body = vec![0u8];
    body.extend(u32::try_from(message.len()).unwrap().to_be_bytes());
    body.extend(message);
    let request = http::Request::post(format!("{uri}{}", proto::DO_PATH))
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .header("grpc-timeout", grpc_timeout)
        .body(Full::new(Bytes::from(body)))
        .unwrap();
    let response = client.request(request).await.unwrap();
    assert_eq!(response.status(), 200);
    let mut metadata = response.headers().clone();
    let body = response.into_body().collect().await.unwrap();
    // A trailers-only response has its status in the headers, any other in the trailers.
    if let Some(trailers) = body.trailers() {
        metadata.extend(trailers.clone());
    }
    metadata
}

/// A service of `permits` permits, each held `hold` per call: `permits / hold` calls a second.
fn capacity(permits: usize, hold: Duration) -> WorkServer {
    let permits = Arc::new(Semaphore::new(permits));
    WorkServer::new(move |req: WorkRequest| {
        let permits = Arc::clone(&permits);
        async move {
            let _permit = permits.acquire().await;
            tokio::time::sleep(hold).await;
            Ok(WorkReply { message: req.name })
        }
    })
}

/// A service of one permit, which a call holds until `open` turns true; it says on `started`
/// when a call holds the permit. The test, not a timer, decides when the place frees up.
fn gated(started: mpsc::UnboundedSender<()>, open: watch::Receiver<bool>) -> WorkServer {
    let permit = Arc::new(Semaphore::new(1));
    WorkServer::new(move |req: WorkRequest| {
        let (permit, started, mut open) = (Arc::clone(&permit), started.clone(), open.clone());
        async move {
            let _permit = permit.acquire().await;
            let _ = started.send(());
            let _ = open.wait_for(|open| *open).await;
            Ok(WorkReply { message: req.name })
        }
    })
}

fn work(name: &str) -> WorkRequest {
    WorkRequest { name: name.into() }
}

fn pushback_ms(status: &Status) -> u64 {
    let value = status.metadata().get(RETRY_PUSHBACK_HEADER);
    let value = value.unwrap_or_else(|| panic!("no pushback in {status:?}"));
    value.to_str().unwrap().parse().unwrap()
}

/// One call as the client's transport saw it.
#[derive(Debug)]
struct Attempt {
    sent: Instant,
    answered: Instant,
    code: Code,
    pushback: Option<Duration>,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_call_is_resource_exhausted_and_a_retry_waits_the_pushback() {
    // One call at a time in the layer; the first call holds the service's only permit until
    // the gate opens.
    let layer = SedaLayer::new(ConcurrencyLimiter::new(Fixed(1.0))).grpc();
    let stats = layer.stats();
    let (started_tx, mut started) = mpsc::unbounded_channel();
    let (open, gate) = watch::channel(false);
    let (client, _) = serve(layer, gated(started_tx, gate)).await;

    let first = tokio::spawn({
        let mut c = client.clone();
        async move { c.call(Request::new(work("first"))).await }
    });
    started.recv().await.unwrap();

    // A plain client is refused: RESOURCE_EXHAUSTED, not INTERNAL or UNAVAILABLE.
    let status = client
        .clone()
        .call(Request::new(work("plain")))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
    assert_eq!(pushback_ms(&status), 1000, "the default Retry-After, in ms");
    assert_eq!(status.metadata().get(REJECT_HEADER).unwrap(), "limit");
    assert!(status.message().contains("overloaded"), "{status:?}");

    // A retrying client: its first attempt is refused; the gate opens then, so the first call
    // finishes while the client waits the pushback, and a retry is served.
    let log = Arc::new(Mutex::new(Vec::<Attempt>::new()));
    let recorded = tower::service_fn({
        let (client, log) = (client.clone(), Arc::clone(&log));
        move |req: WorkRequest| {
            let (mut client, log, open) = (client.clone(), Arc::clone(&log), open.clone());
            async move {
                let sent = Instant::now();
                let out = client.call(Request::new(req)).await;
                let (code, pushback) = match &out {
                    Ok(_) => (Code::Ok, None),
                    Err(s) => match Pushback::of(s) {
                        Pushback::After(d) => (s.code(), Some(d)),
                        _ => (s.code(), None),
                    },
                };
                let answered = Instant::now();
                log.lock().unwrap().push(Attempt {
                    sent,
                    answered,
                    code,
                    pushback,
                });
                if code == Code::ResourceExhausted {
                    let _ = open.send(true);
                }
                out
            }
        }
    });
    // Five attempts at most: a loaded machine may need a third before the first call is gone.
    let retrying = ServiceBuilder::new()
        .retry(PushbackPolicy::new(5, Duration::from_millis(10)))
        .service(recorded)
        .oneshot(work("retrying"));
    let reply = tokio::time::timeout(Duration::from_secs(20), retrying)
        .await
        .expect("the retrying call never ended")
        .expect("a retry after the pushback is served");
    assert_eq!(reply.into_inner().message, "retrying");
    assert_eq!(first.await.unwrap().unwrap().into_inner().message, "first");

    let log = log.lock().unwrap();
    let (last, refused) = log.split_last().unwrap();
    assert_eq!(last.code, Code::Ok, "{log:?}");
    assert!(
        !refused.is_empty(),
        "the first attempt was not refused: {log:?}"
    );
    for (attempt, next) in refused.iter().zip(&log[1..]) {
        assert_eq!(attempt.code, Code::ResourceExhausted, "{log:?}");
        let pushback = attempt.pushback.expect("a refusal carries a pushback");
        let waited = next.sent - attempt.answered;
        assert!(
            waited >= pushback,
            "retried after {waited:?}, sooner than the pushback {pushback:?}"
        );
    }
    let s = stats.stats();
    assert_eq!((s.admitted, s.completed), (2, 2));
    // The plain call and each refused attempt.
    let refusals = 1 + refused.len() as u64;
    assert_eq!(s.rejected, vec![(RejectReason::Limit, refusals)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_response_time_controller_answers_an_overload_with_resource_exhausted() {
    // Capacity 2 permits x 50 ms = 40 calls/s; 24 closed-loop callers would wait 0.6 s each,
    // six times the 100 ms target.
    let layer = SedaLayer::response_time(Duration::from_millis(100))
        .unwrap()
        .grpc();
    let stats = layer.stats();
    let (client, _) = serve(layer, capacity(2, Duration::from_millis(50))).await;

    // Each caller calls until refused, for 2 s at most. (The controller's in-flight bound
    // starts at 10 and does not go below it: the first calls past 10 are refused.)
    let end = Instant::now() + Duration::from_secs(2);
    let mut callers = Vec::new();
    for i in 0..24 {
        let mut c = client.clone();
        callers.push(tokio::spawn(async move {
            while Instant::now() < end {
                if let Err(status) = c.call(Request::new(work(&format!("caller {i}")))).await {
                    return Some(status);
                }
            }
            None
        }));
    }
    let mut refused = 0;
    for caller in callers {
        let Some(status) = caller.await.unwrap() else {
            continue;
        };
        assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
        assert!(pushback_ms(&status) >= 1000, "{status:?}");
        refused += 1;
    }
    assert!(refused > 0, "the layer never refused an overload");
    let s = stats.stats();
    let rejected: u64 = s.rejected.iter().map(|(_, n)| n).sum();
    assert_eq!(rejected, refused, "{s:?}");
    assert_eq!(s.dropped, 0, "{s:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_past_its_grpc_timeout_is_cut_and_answered_deadline_exceeded() {
    let layer = SedaLayer::new(Open).grpc();
    let stats = layer.stats();
    let (held_tx, held_rx) = oneshot::channel::<()>();
    let held = Arc::new(Mutex::new(Some(held_tx)));
    let service = WorkServer::new(move |req: WorkRequest| {
        let guard = (req.name == "late").then(|| held.lock().unwrap().take());
        async move {
            if let Some(_guard) = guard {
                tokio::time::sleep(Duration::from_secs(60)).await;
            }
            Ok(WorkReply { message: req.name })
        }
    });
    let (_, uri) = serve(layer, service).await;

    let sent = Instant::now();
    let call = call_waiting(&uri, "300m", "late");
    let metadata = tokio::time::timeout(Duration::from_secs(20), call)
        .await
        .expect("the call was never cut");
    // tonic's server alone would answer CANCELLED (1, "Timeout expired").
    assert_eq!(metadata["grpc-status"], "4", "{metadata:?}");
    assert_eq!(metadata[REJECT_HEADER], "deadline");
    assert!(!metadata.contains_key(RETRY_PUSHBACK_HEADER));
    assert!(sent.elapsed() >= Duration::from_millis(300));
    // The handler's future was dropped: what it held is released.
    assert!(held_rx.await.is_err(), "the held resource was not released");
    let s = stats.stats();
    assert_eq!((s.admitted, s.completed, s.dropped), (1, 0, 1), "{s:?}");

    // A malformed timeout is ignored: the call runs, and is served, as if it had none.
    let metadata = call_waiting(&uri, "soon", "on time").await;
    assert_eq!(metadata["grpc-status"], "0", "{metadata:?}");
    assert_eq!(stats.stats().completed, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_terminated_call_is_resource_exhausted_with_pushback() {
    let layer = SedaLayer::new(Open)
        .terminate(FixedThreshold(Duration::from_millis(200)))
        .unwrap()
        .grpc()
        .retry_after(2);
    let stats = layer.stats();
    let service = WorkServer::new(|req: WorkRequest| async move {
        if req.name == "slow" {
            tokio::time::sleep(Duration::from_secs(60)).await;
        }
        Ok(WorkReply { message: req.name })
    });
    let (client, _) = serve(layer, service).await;
    let ok = client.clone().call(Request::new(work("fast"))).await;
    assert_eq!(ok.unwrap().into_inner().message, "fast");
    let status = tokio::time::timeout(
        Duration::from_secs(20),
        client.clone().call(Request::new(work("slow"))),
    )
    .await
    .expect("the slow call was never terminated")
    .unwrap_err();
    assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
    assert_eq!(pushback_ms(&status), 2000);
    assert_eq!(status.metadata().get(REJECT_HEADER).unwrap(), "terminated");
    let s = stats.stats();
    assert_eq!((s.admitted, s.completed, s.terminated), (2, 1, 1), "{s:?}");
}

#[tokio::test]
async fn the_http_form_reaches_a_grpc_client_as_unavailable() {
    // Why the gRPC form exists: a 503 is translated to UNAVAILABLE by gRPC clients.
    let layer = SedaLayer::new(ConcurrencyLimiter::new(Fixed(1.0))).http();
    let (started_tx, mut started) = mpsc::unbounded_channel();
    let (open, gate) = watch::channel(false);
    let service = gated(started_tx, gate);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let uri = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(
        tonic::transport::Server::builder()
            .layer(layer)
            .add_service(service)
            .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener)),
    );
    let client = WorkClient::connect(uri).await.unwrap();
    let first = tokio::spawn({
        let mut c = client.clone();
        async move { c.call(Request::new(work("first"))).await }
    });
    started.recv().await.unwrap();
    let status = client.clone().call(Request::new(work("second"))).await;
    assert_eq!(status.unwrap_err().code(), Code::Unavailable);
    open.send(true).unwrap();
    assert!(first.await.unwrap().is_ok());
}

#[test]
fn the_policy_follows_a6_on_pushback() {
    fn with(code: Code, pushback: Option<&'static str>) -> Status {
        let mut status = Status::new(code, "refused");
        if let Some(p) = pushback {
            status
                .metadata_mut()
                .insert(retry::PUSHBACK, MetadataValue::from_static(p));
        }
        status
    }
    let mut policy = PushbackPolicy::new(4, Duration::from_millis(100));
    // A pushback replaces the backoff.
    let s = with(Code::ResourceExhausted, Some("1500"));
    assert_eq!(policy.wait_after(&s), Some(Duration::from_millis(1500)));
    // Without one, the backoff, doubling.
    let s = with(Code::Unavailable, None);
    assert_eq!(policy.wait_after(&s), Some(Duration::from_millis(100)));
    assert_eq!(policy.wait_after(&s), Some(Duration::from_millis(200)));
    // Four attempts in all: no fourth retry.
    assert_eq!(policy.wait_after(&s), None);

    let mut policy = PushbackPolicy::new(4, Duration::from_millis(100));
    // A negative or unreadable pushback: do not retry.
    assert_eq!(
        policy.wait_after(&with(Code::ResourceExhausted, Some("-1"))),
        None
    );
    assert_eq!(
        policy.wait_after(&with(Code::ResourceExhausted, Some("soon"))),
        None
    );
    // Codes that are not retryable.
    assert_eq!(policy.wait_after(&with(Code::Internal, Some("10"))), None);
    assert_eq!(policy.wait_after(&with(Code::DeadlineExceeded, None)), None);
}
