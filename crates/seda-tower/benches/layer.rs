//! What the layer adds to one request: a bare service against the same service behind the
//! layer, with each kind of controller, in one run. The inner service answers at once, so the
//! difference is the layer's own cost (admission, timing, the controller's bookkeeping).
//!
//! Each figure is the CPU time of the bench's thread per request (`seda::thread_cpu_time`
//! around each sample), not wall time: on a shared machine wall time also counts the time the
//! thread waited for a core, which moves with whatever else runs. `examples/layer_cost.rs`
//! drives the same services for callgrind's instruction counts.

use std::convert::Infallible;
use std::time::Duration;

use criterion::{BenchmarkGroup, BenchmarkId, Criterion, criterion_group, criterion_main};
use seda_control::{ResponseTimeConfig, ResponseTimeController};
use seda_tower::{DEADLINE_HEADER, Deadlines, SedaLayer};
use tower::{Service, ServiceBuilder, ServiceExt};

type Req = http::Request<()>;
type Res = http::Response<String>;

async fn answer(_r: Req) -> Result<Res, Infallible> {
    Ok(http::Response::new(String::new()))
}

/// Times `svc` answering requests made by `make`, each awaited in its own `block_on`.
fn per_request<S, M>(
    group: &mut BenchmarkGroup<'_, criterion::measurement::WallTime>,
    rt: &tokio::runtime::Runtime,
    id: BenchmarkId,
    mut svc: S,
    make: M,
) where
    S: Service<Req, Response = Res, Error = Infallible>,
    M: Fn() -> Req,
{
    group.bench_function(id, |b| {
        b.iter_custom(|iters| {
            let start = seda::thread_cpu_time();
            for _ in 0..iters {
                let response = rt.block_on(async {
                    match svc.ready().await {
                        Ok(ready) => ready.call(make()).await,
                        Err(never) => match never {},
                    }
                });
                std::hint::black_box(response).ok();
            }
            seda::thread_cpu_time().saturating_sub(start)
        })
    });
}

fn bench(c: &mut Criterion) {
    // With its timer: a request with a deadline arms one.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let mut group = c.benchmark_group("per_request");
    let plain = || Req::new(());
    per_request(
        &mut group,
        &rt,
        BenchmarkId::new("bare", ""),
        tower::service_fn(answer),
        plain,
    );
    let target = Duration::from_secs(1);
    per_request(
        &mut group,
        &rt,
        BenchmarkId::new("layer", "response_time_tuned"),
        ServiceBuilder::new()
            .layer(SedaLayer::response_time(target).unwrap().http())
            .service_fn(answer),
        plain,
    );
    let controller = ResponseTimeController::new(ResponseTimeConfig {
        max_rate_per_s: 1e12,
        initial_rate_per_s: 1e12,
        bucket_depth: 1e12,
        ..ResponseTimeConfig::new(target)
    })
    .unwrap();
    per_request(
        &mut group,
        &rt,
        BenchmarkId::new("layer", "response_time"),
        ServiceBuilder::new()
            .layer(SedaLayer::new(controller).http())
            .service_fn(answer),
        plain,
    );
    // The same layer reading a 10 s budget from every request: the door's check, the
    // deadline in the extensions, a response time recorded (the service answers at once, so
    // no timer is armed). The bare service gets the same requests, to compare with.
    let with_budget = || {
        let mut r = Req::new(());
        r.headers_mut()
            .insert(DEADLINE_HEADER, http::HeaderValue::from_static("10000"));
        r
    };
    per_request(
        &mut group,
        &rt,
        BenchmarkId::new("bare", "with_budget"),
        tower::service_fn(answer),
        with_budget,
    );
    per_request(
        &mut group,
        &rt,
        BenchmarkId::new("layer", "response_time_tuned+deadlines"),
        ServiceBuilder::new()
            .layer(
                SedaLayer::response_time(target)
                    .unwrap()
                    .http()
                    .deadlines(Deadlines::new())
                    .unwrap(),
            )
            .service_fn(answer),
        with_budget,
    );
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
