//! Termination in the layer, on a real axum server over real sockets: a request running past
//! the threshold has its future dropped (what it held is released) and is answered 503
//! `terminated`; requests that finish in time are untouched.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::Router;
use axum::routing::get;
use http_body_util::Empty;
use hyper::body::Bytes;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use seda_control::terminate::{FixedThreshold, SertConfig, SertThreshold};
use seda_tower::{REJECT_HEADER, SedaLayer, TERMINATED, Terminated};
use tokio::sync::oneshot;
use tower::{ServiceBuilder, ServiceExt};

use crate::common::Open;

/// A resource a handler holds; its release is seen by the test through the channel closing.
struct Held(#[allow(dead_code)] oneshot::Sender<()>);

async fn serve(app: Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_request_is_terminated_and_releases_what_it_held() {
    let layer = SedaLayer::new(Open)
        .terminate(FixedThreshold(Duration::from_millis(300)))
        .unwrap()
        .http();
    let stats = layer.stats();
    let (held_tx, held_rx) = oneshot::channel::<()>();
    let held = Arc::new(std::sync::Mutex::new(Some(held_tx)));
    let finished = Arc::new(AtomicBool::new(false));
    let f = Arc::clone(&finished);
    let app = Router::new()
        .route(
            "/slow",
            get(move || {
                let guard = held.lock().unwrap().take().map(Held);
                let finished = Arc::clone(&f);
                async move {
                    let _guard = guard;
                    tokio::time::sleep(Duration::from_secs(60)).await;
                    finished.store(true, Ordering::SeqCst);
                    "slow"
                }
            }),
        )
        .route(
            "/fast",
            get(|| async {
                tokio::time::sleep(Duration::from_millis(5)).await;
                "fast"
            }),
        )
        .layer(layer);
    let base = serve(app).await;
    let client = Client::builder(TokioExecutor::new()).build_http::<Empty<Bytes>>();

    let slow = {
        let (client, uri) = (client.clone(), format!("{base}/slow").parse().unwrap());
        tokio::spawn(async move { client.get(uri).await.unwrap() })
    };
    for _ in 0..20 {
        let r = client.get(format!("{base}/fast").parse().unwrap()).await;
        assert_eq!(r.unwrap().status(), 200, "a fast request must be untouched");
    }
    // A bound so a broken layer fails the test instead of hanging it for a minute.
    let slow = tokio::time::timeout(Duration::from_secs(20), slow)
        .await
        .expect("the slow request was never terminated")
        .unwrap();
    assert_eq!(slow.status(), 503);
    assert_eq!(slow.headers()[REJECT_HEADER], TERMINATED);
    assert!(slow.headers().contains_key("retry-after"));
    // The handler's future was dropped: its resource is released, and it never finished.
    assert!(held_rx.await.is_err(), "the held resource was not released");
    assert!(!finished.load(Ordering::SeqCst));

    let s = stats.stats();
    assert_eq!(
        (s.admitted, s.completed, s.terminated, s.dropped),
        (21, 20, 1, 0)
    );
    let t = s.termination.expect("the layer terminates");
    assert_eq!((t.kind, t.threshold), ("fixed", Duration::from_millis(300)));
}

#[tokio::test]
async fn non_http_services_get_a_typed_terminated_error() {
    let layer = SedaLayer::new(Open)
        .terminate(FixedThreshold(Duration::from_millis(50)))
        .unwrap();
    let stats = layer.stats();
    let svc = ServiceBuilder::new()
        .layer(layer)
        .service_fn(|slow: bool| async move {
            if slow {
                tokio::time::sleep(Duration::from_secs(60)).await;
            }
            Ok::<_, std::convert::Infallible>(slow)
        });
    assert!(!svc.clone().oneshot(false).await.unwrap());
    let err = svc.oneshot(true).await.unwrap_err();
    let t = err.downcast_ref::<Terminated>().expect("Terminated");
    assert_eq!(t.threshold(), Duration::from_millis(50));
    let s = stats.stats();
    assert_eq!((s.completed, s.terminated), (1, 1));
}

#[test]
fn a_layer_takes_one_terminator_and_none_by_default() {
    let layer = SedaLayer::new(Open);
    assert_eq!(layer.stats().stats().termination, None);
    let sert = SertThreshold::new(SertConfig::new(
        Duration::from_millis(100),
        Duration::from_secs(2),
    ));
    let layer = layer.terminate(sert).unwrap();
    let err = layer
        .clone()
        .terminate(FixedThreshold(Duration::from_secs(1)))
        .unwrap_err();
    assert!(err.to_string().contains("already terminates"), "{err}");
    let t = layer.stats().stats().termination.unwrap();
    assert_eq!((t.kind, t.threshold), ("sert", Duration::from_secs(2)));
}
