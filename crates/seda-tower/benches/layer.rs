//! What the layer adds to one request: a bare service against the same service behind the
//! layer, with each kind of controller, in one run. The inner service answers at once, so the
//! difference is the layer's own cost (admission, timing, the controller's bookkeeping).

use std::convert::Infallible;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use seda_control::{ResponseTimeConfig, ResponseTimeController};
use seda_tower::{DEADLINE_HEADER, Deadlines, SedaLayer};
use tower::{Service, ServiceBuilder, ServiceExt};

type Req = http::Request<()>;

async fn answer(_r: Req) -> Result<http::Response<String>, Infallible> {
    Ok(http::Response::new(String::new()))
}

fn bench(c: &mut Criterion) {
    // With its timer: a request with a deadline arms one.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let mut group = c.benchmark_group("per_request");
    let mut bare = tower::service_fn(answer);
    group.bench_function(BenchmarkId::new("bare", ""), |b| {
        b.iter(|| {
            rt.block_on(async {
                bare.ready()
                    .await
                    .unwrap()
                    .call(Req::new(()))
                    .await
                    .unwrap()
            })
        })
    });
    let target = Duration::from_secs(1);
    let mut ours = ServiceBuilder::new()
        .layer(SedaLayer::response_time(target).unwrap().http())
        .service_fn(answer);
    group.bench_function(BenchmarkId::new("layer", "response_time_tuned"), |b| {
        b.iter(|| {
            rt.block_on(async {
                ours.ready()
                    .await
                    .unwrap()
                    .call(Req::new(()))
                    .await
                    .unwrap()
            })
        })
    });
    let controller = ResponseTimeController::new(ResponseTimeConfig {
        max_rate_per_s: 1e12,
        initial_rate_per_s: 1e12,
        bucket_depth: 1e12,
        ..ResponseTimeConfig::new(target)
    })
    .unwrap();
    let mut wc03 = ServiceBuilder::new()
        .layer(SedaLayer::new(controller).http())
        .service_fn(answer);
    group.bench_function(BenchmarkId::new("layer", "response_time"), |b| {
        b.iter(|| {
            rt.block_on(async {
                wc03.ready()
                    .await
                    .unwrap()
                    .call(Req::new(()))
                    .await
                    .unwrap()
            })
        })
    });
    // The same layer reading a 10 s budget from every request: the door's check, the
    // deadline in the extensions, a timer armed per request, a response time recorded.
    let mut timed = ServiceBuilder::new()
        .layer(
            SedaLayer::response_time(target)
                .unwrap()
                .http()
                .deadlines(Deadlines::new())
                .unwrap(),
        )
        .service_fn(answer);
    let with_budget = || {
        http::Request::builder()
            .header(DEADLINE_HEADER, "10000")
            .body(())
            .unwrap()
    };
    group.bench_function(
        BenchmarkId::new("layer", "response_time_tuned+deadlines"),
        |b| {
            b.iter(|| {
                rt.block_on(async {
                    timed
                        .ready()
                        .await
                        .unwrap()
                        .call(with_budget())
                        .await
                        .unwrap()
                })
            })
        },
    );
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
