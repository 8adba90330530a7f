//! What the layer adds to one request: a bare service against the same service behind the
//! layer, with each kind of controller, in one run. The inner service answers at once, so the
//! difference is the layer's own cost (admission, timing, the controller's bookkeeping).
//!
//! Each figure is the CPU time of the bench's thread per request ([`thread_cpu_time`] around
//! each sample), not wall time: on a shared machine wall time also counts the time the
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

/// The CPU time the calling thread has used so far: `seda::thread_cpu_time`, repeated here
/// because this crate is published without `seda` (a path-only dev-dependency would be
/// dropped from the package and the bench would not build).
fn thread_cpu_time() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Duration::new(
        u64::try_from(t.tv_sec).unwrap_or(0),
        u32::try_from(t.tv_nsec).unwrap_or(0),
    )
}

/// The thread's CPU time for `n` requests made by `make` through `svc`, each awaited in its own
/// `block_on`.
fn batch<S, M>(rt: &tokio::runtime::Runtime, svc: &mut S, n: u64, make: &M) -> Duration
where
    S: Service<Req, Response = Res, Error = Infallible>,
    M: Fn() -> Req,
{
    let start = thread_cpu_time();
    for _ in 0..n {
        let response = rt.block_on(async {
            match svc.ready().await {
                Ok(ready) => ready.call(make()).await,
                Err(never) => match never {},
            }
        });
        std::hint::black_box(response).ok();
    }
    thread_cpu_time().saturating_sub(start)
}

/// The CPU time of `svc` answering requests made by `make`.
fn per_request<S, M>(group: &mut Group<'_>, rt: &Runtime, id: BenchmarkId, mut svc: S, make: M)
where
    S: Service<Req, Response = Res, Error = Infallible>,
    M: Fn() -> Req,
{
    group.bench_function(id, |b| b.iter_custom(|n| batch(rt, &mut svc, n, &make)));
}

/// What `layered` costs over `bare`, both answering requests made by `make`: each sample
/// times a batch through each, one after the other, and reports the difference, so that a
/// change in the machine's load during the run moves both alike (the goal's figure: the
/// layer's CPU per request over the bare service). A sample where the bare batch took longer
/// reports zero.
fn overhead<B, L, M>(
    group: &mut Group<'_>,
    rt: &Runtime,
    id: BenchmarkId,
    mut bare: B,
    mut layered: L,
    make: M,
) where
    B: Service<Req, Response = Res, Error = Infallible>,
    L: Service<Req, Response = Res, Error = Infallible>,
    M: Fn() -> Req,
{
    group.bench_function(id, |b| {
        b.iter_custom(|n| {
            let bare = batch(rt, &mut bare, n, &make);
            batch(rt, &mut layered, n, &make).saturating_sub(bare)
        })
    });
}

type Group<'a> = BenchmarkGroup<'a, criterion::measurement::WallTime>;
type Runtime = tokio::runtime::Runtime;

fn bench(c: &mut Criterion) {
    // With its timer: a request with a deadline arms one.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let target = Duration::from_secs(1);
    let tuned = || {
        ServiceBuilder::new()
            .layer(SedaLayer::response_time(target).unwrap().http())
            .service_fn(answer)
    };
    // The same layer reading a 10 s budget from every request: the door's check, the
    // deadline in the extensions, a response time recorded (the service answers at once, so
    // no timer is armed). The bare service gets the same requests, to compare with.
    let timed = || {
        ServiceBuilder::new()
            .layer(
                SedaLayer::response_time(target)
                    .unwrap()
                    .http()
                    .deadlines(Deadlines::new())
                    .unwrap(),
            )
            .service_fn(answer)
    };
    let plain = || Req::new(());
    let with_budget = || {
        let mut r = Req::new(());
        r.headers_mut()
            .insert(DEADLINE_HEADER, http::HeaderValue::from_static("10000"));
        r
    };
    let bare = || tower::service_fn(answer);

    let mut group = c.benchmark_group("per_request");
    per_request(&mut group, &rt, BenchmarkId::new("bare", ""), bare(), plain);
    let id = BenchmarkId::new("layer", "response_time_tuned");
    per_request(&mut group, &rt, id, tuned(), plain);
    let controller = ResponseTimeController::new(ResponseTimeConfig {
        max_rate_per_s: 1e12,
        initial_rate_per_s: 1e12,
        bucket_depth: 1e12,
        ..ResponseTimeConfig::new(target)
    })
    .unwrap();
    let wc03 = ServiceBuilder::new()
        .layer(SedaLayer::new(controller).http())
        .service_fn(answer);
    let id = BenchmarkId::new("layer", "response_time");
    per_request(&mut group, &rt, id, wc03, plain);
    let id = BenchmarkId::new("bare", "with_budget");
    per_request(&mut group, &rt, id, bare(), with_budget);
    let id = BenchmarkId::new("layer", "response_time_tuned+deadlines");
    per_request(&mut group, &rt, id, timed(), with_budget);
    group.finish();

    let mut group = c.benchmark_group("over_bare");
    let id = BenchmarkId::new("layer", "response_time_tuned");
    overhead(&mut group, &rt, id, bare(), tuned(), plain);
    let id = BenchmarkId::new("layer", "response_time_tuned+deadlines");
    overhead(&mut group, &rt, id, bare(), timed(), with_budget);
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
