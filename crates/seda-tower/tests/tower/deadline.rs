//! Deadlines in the layer, on real axum servers over real sockets: a request that cannot finish
//! in time is refused before the service runs, an admitted one is cut when its deadline passes
//! (its future dropped), and a handler sends the next tier less budget than it got.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::routing::get;
use axum::{Extension, Router};
use http::{HeaderMap, Request, StatusCode};
use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use seda_tower::{
    DEADLINE, DEADLINE_HEADER, Deadlines, GRPC_TIMEOUT, REJECT_HEADER, RequestDeadline, SedaLayer,
    parse_deadline_ms,
};
use tokio::sync::oneshot;

use crate::common::Open;

async fn serve(app: Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

type Http = Client<HttpConnector, Empty<Bytes>>;

fn client() -> Http {
    Client::builder(TokioExecutor::new()).build_http()
}

/// GET `url` with `headers`; the status, the reject header and the body.
async fn get_with(
    client: &Http,
    url: &str,
    headers: &[(&str, &str)],
) -> (StatusCode, HeaderMap, String) {
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

/// A route that counts its calls and answers after holding the request `hold`.
fn counted(calls: &Arc<AtomicUsize>, hold: Duration) -> Router {
    let c = Arc::clone(calls);
    Router::new().route(
        "/",
        get(move || {
            c.fetch_add(1, Ordering::SeqCst);
            async move {
                tokio::time::sleep(hold).await;
                "done"
            }
        }),
    )
}

#[tokio::test]
async fn a_spent_budget_is_refused_before_the_service_runs() {
    let layer = SedaLayer::new(Open)
        .http()
        .deadlines(Deadlines::new())
        .unwrap();
    let stats = layer.stats();
    let calls = Arc::new(AtomicUsize::new(0));
    let base = serve(counted(&calls, Duration::ZERO).layer(layer)).await;
    let c = client();

    for header in [(DEADLINE_HEADER, "0"), (GRPC_TIMEOUT, "0m")] {
        let (status, headers, _) = get_with(&c, &base, &[header]).await;
        assert_eq!(status, StatusCode::GATEWAY_TIMEOUT, "{header:?}");
        assert_eq!(headers[REJECT_HEADER], DEADLINE);
        // Retrying the same request gives it even less time: no Retry-After.
        assert!(!headers.contains_key("retry-after"));
    }
    assert_eq!(
        calls.load(Ordering::SeqCst),
        0,
        "a refused request reached the service"
    );

    // No deadline, and a malformed one (ignored, counted): served.
    assert_eq!(get_with(&c, &base, &[]).await.0, StatusCode::OK);
    assert_eq!(
        get_with(&c, &base, &[(DEADLINE_HEADER, "-5")]).await.0,
        StatusCode::OK
    );
    assert_eq!(calls.load(Ordering::SeqCst), 2);

    let s = stats.stats();
    let d = s.deadline.expect("the layer reads deadlines");
    assert_eq!(
        (d.refused_passed, d.refused_predicted, d.cut, d.malformed),
        (2, 0, 0, 1)
    );
    // Refused at the door: never admitted, so the controller never saw them.
    assert_eq!((s.admitted, s.completed), (2, 2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_budget_below_recent_response_times_is_refused_at_the_door() {
    // Every request holds 200 ms, so every response takes at least that: a 100 ms budget
    // cannot be met, whatever the machine's speed.
    let hold = Duration::from_millis(200);
    let layer = SedaLayer::new(Open)
        .http()
        .deadlines(Deadlines::new())
        .unwrap();
    let stats = layer.stats();
    let calls = Arc::new(AtomicUsize::new(0));
    let base = serve(counted(&calls, hold).layer(layer)).await;
    let c = client();

    // Before the layer has seen 16 responses it predicts nothing: admitted, then cut.
    let (status, _, _) = get_with(&c, &base, &[(DEADLINE_HEADER, "100")]).await;
    assert_eq!(status, StatusCode::GATEWAY_TIMEOUT);
    assert_eq!(calls.load(Ordering::SeqCst), 1);

    let warm: Vec<_> = (0..16)
        .map(|_| {
            let (c, base) = (c.clone(), base.clone());
            tokio::spawn(async move { get_with(&c, &base, &[]).await.0 })
        })
        .collect();
    for w in warm {
        assert_eq!(w.await.unwrap(), StatusCode::OK);
    }
    assert_eq!(calls.load(Ordering::SeqCst), 17);
    let predicted = stats
        .stats()
        .deadline
        .unwrap()
        .predicted
        .expect("16 responses seen");
    assert!(predicted >= hold, "{predicted:?}");

    let (status, headers, _) = get_with(&c, &base, &[(DEADLINE_HEADER, "100")]).await;
    assert_eq!(status, StatusCode::GATEWAY_TIMEOUT);
    assert_eq!(headers[REJECT_HEADER], DEADLINE);
    assert_eq!(
        calls.load(Ordering::SeqCst),
        17,
        "a predicted miss reached the service"
    );

    // A budget the service can meet is admitted.
    let (status, _, _) = get_with(&c, &base, &[(GRPC_TIMEOUT, "10S")]).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(calls.load(Ordering::SeqCst), 18);

    let d = stats.stats().deadline.unwrap();
    assert_eq!((d.refused_passed, d.refused_predicted, d.cut), (0, 1, 1));
}

/// A resource a handler holds; its release is seen by the test through the channel closing.
struct Held(#[allow(dead_code)] oneshot::Sender<()>);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admitted_request_is_cut_at_its_deadline_and_its_future_dropped() {
    let layer = SedaLayer::new(Open)
        .http()
        .deadlines(Deadlines::new())
        .unwrap();
    let stats = layer.stats();
    let (held_tx, held_rx) = oneshot::channel::<()>();
    let held = Arc::new(std::sync::Mutex::new(Some(held_tx)));
    let (started_tx, started_rx) = oneshot::channel::<()>();
    let started = Arc::new(std::sync::Mutex::new(Some(started_tx)));
    let finished = Arc::new(AtomicUsize::new(0));
    let f = Arc::clone(&finished);
    let app = Router::new()
        .route(
            "/",
            get(move || {
                let guard = held.lock().unwrap().take().map(Held);
                let started = started.lock().unwrap().take();
                let finished = Arc::clone(&f);
                async move {
                    let _guard = guard;
                    if let Some(s) = started {
                        let _ = s.send(());
                    }
                    tokio::time::sleep(Duration::from_secs(60)).await;
                    finished.fetch_add(1, Ordering::SeqCst);
                    "late"
                }
            }),
        )
        .layer(layer);
    let base = serve(app).await;
    let c = client();

    let reply = tokio::spawn(async move { get_with(&c, &base, &[(DEADLINE_HEADER, "300")]).await });
    started_rx.await.expect("the handler ran");
    // A bound so a broken layer fails the test instead of hanging it for a minute.
    let (status, headers, _) = tokio::time::timeout(Duration::from_secs(20), reply)
        .await
        .expect("the request was never cut")
        .unwrap();
    assert_eq!(status, StatusCode::GATEWAY_TIMEOUT);
    assert_eq!(headers[REJECT_HEADER], DEADLINE);
    assert!(
        held_rx.await.is_err(),
        "the handler's future was not dropped"
    );
    assert_eq!(finished.load(Ordering::SeqCst), 0);

    let s = stats.stats();
    assert_eq!(
        (s.admitted, s.completed, s.dropped, s.terminated),
        (1, 0, 0, 0)
    );
    assert_eq!(s.deadline.unwrap().cut, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handler_sends_the_next_tier_less_budget_than_it_got() {
    // The back tier echoes the budget it was given.
    let back = serve(Router::new().route(
        "/",
        get(|headers: HeaderMap| async move {
            headers
                .get(DEADLINE_HEADER)
                .map_or("none".to_string(), |v| v.to_str().unwrap().to_string())
        }),
    ))
    .await;
    // The front tier reads its deadline and propagates it on its call to the back.
    let layer = SedaLayer::new(Open)
        .http()
        .deadlines(Deadlines::new().default_budget(Duration::from_millis(1500)))
        .unwrap();
    let front = serve(
        Router::new()
            .route(
                "/",
                get(
                    move |Extension(deadline): Extension<RequestDeadline>| async move {
                        let mut req = Request::get(back.as_str()).body(Empty::new()).unwrap();
                        let sent = deadline.propagate(req.headers_mut());
                        let resp = client().request(req).await.unwrap();
                        let got = resp.into_body().collect().await.unwrap().to_bytes();
                        format!("{} {}", sent.as_millis(), String::from_utf8_lossy(&got))
                    },
                ),
            )
            .layer(layer),
    )
    .await;
    let c = client();
    for (headers, budget_ms) in [
        (&[(DEADLINE_HEADER, "4000")][..], 4000),
        (&[(GRPC_TIMEOUT, "3S")][..], 3000),
        (&[][..], 1500),
    ] {
        let (status, _, body) = get_with(&c, &front, headers).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let (sent, seen) = body.split_once(' ').unwrap();
        let seen = parse_deadline_ms(seen.as_bytes()).expect("the back tier got a budget");
        assert_eq!(sent, seen.as_millis().to_string());
        // Less than the front got, by at least the propagation allowance.
        assert!(
            seen <= Duration::from_millis(budget_ms - 5),
            "{headers:?}: {seen:?}"
        );
        assert!(seen > Duration::ZERO, "{headers:?}");
    }
}

#[test]
fn a_runtime_without_a_timer_serves_the_request_without_its_deadline() {
    use tower::{Service, ServiceBuilder, ServiceExt};
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let layer = SedaLayer::new(Open)
        .http()
        .deadlines(Deadlines::new())
        .unwrap();
    let stats = layer.stats();
    let mut svc = ServiceBuilder::new()
        .layer(layer)
        .service_fn(|_r: Request<()>| async {
            // Pending once, so the layer arms its deadline timer.
            tokio::task::yield_now().await;
            Ok::<_, std::convert::Infallible>(http::Response::new(String::from("ok")))
        });
    let req = Request::get("/")
        .header(DEADLINE_HEADER, "5000")
        .body(())
        .unwrap();
    let resp = rt
        .block_on(async { svc.ready().await.unwrap().call(req).await })
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(stats.stats().completed, 1);
}
