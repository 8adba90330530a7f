//! The layer's cost per request in instructions: a fixed number of requests through a service
//! that answers at once, bare or behind the layer, for callgrind to count (the criterion bench
//! `benches/layer.rs` times the same services; instruction counts repeat on a busy machine
//! where times do not).
//!
//! ```sh
//! cargo build --release -p seda-tower --example layer_cost
//! valgrind --tool=callgrind --toggle-collect='layer_cost::measured*' \
//!     --callgrind-out-file=/tmp/cg-layer target/release/examples/layer_cost layer 100000
//! python3 bench/callgrind_summary.py /tmp/cg-layer 100000 12
//! ```
//!
//! Arguments: the variant (`bare`, `bare_budget` (the bare service given `deadlines`'
//! requests), `layer` (`SedaLayer::response_time(..).http()`),
//! `response_time` (WC03's controller through `SedaLayer::new(..).http()`), `deadlines` (the
//! first layer reading a 10 s budget from every request)) and the number of requests counted
//! (default 100,000), after 10,000 not counted. Only `measured` is counted: the warm-up and the
//! setup are not.

use std::convert::Infallible;
use std::time::Duration;

use seda_control::{ResponseTimeConfig, ResponseTimeController};
use seda_tower::{DEADLINE_HEADER, Deadlines, SedaLayer};
use tower::{Service, ServiceBuilder, ServiceExt};

type Req = http::Request<()>;
type Res = http::Response<String>;

const WARM_UP: u64 = 10_000;

async fn answer(_r: Req) -> Result<Res, Infallible> {
    Ok(http::Response::new(String::new()))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let variant = args.next().unwrap_or_else(|| "layer".into());
    let n: u64 = match args.next() {
        Some(n) => n.parse().map_err(|e| format!("requests `{n}`: {e}"))?,
        None => 100_000,
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()?;
    let target = Duration::from_secs(1);
    let plain = || Req::new(());
    let with_budget = || {
        let mut r = Req::new(());
        r.headers_mut()
            .insert(DEADLINE_HEADER, http::HeaderValue::from_static("10000"));
        r
    };
    let statuses = match variant.as_str() {
        "bare" => run(&rt, tower::service_fn(answer), n, plain),
        "bare_budget" => run(&rt, tower::service_fn(answer), n, with_budget),
        "layer" => run(
            &rt,
            ServiceBuilder::new()
                .layer(SedaLayer::response_time(target)?.http())
                .service_fn(answer),
            n,
            plain,
        ),
        "response_time" => {
            let controller = ResponseTimeController::new(ResponseTimeConfig {
                max_rate_per_s: 1e12,
                initial_rate_per_s: 1e12,
                bucket_depth: 1e12,
                ..ResponseTimeConfig::new(target)
            })?;
            run(
                &rt,
                ServiceBuilder::new()
                    .layer(SedaLayer::new(controller).http())
                    .service_fn(answer),
                n,
                plain,
            )
        }
        "deadlines" => run(
            &rt,
            ServiceBuilder::new()
                .layer(
                    SedaLayer::response_time(target)?
                        .http()
                        .deadlines(Deadlines::new())?,
                )
                .service_fn(answer),
            n,
            with_budget,
        ),
        other => {
            return Err(format!(
                "unknown variant `{other}`: bare, bare_budget, layer, response_time or deadlines"
            )
            .into());
        }
    };
    let ok = statuses.iter().filter(|s| s.is_success()).count();
    println!("{variant}: {ok} of {n} requests answered 2xx");
    Ok(())
}

/// Warms `svc` up, then counts `n` requests through it; the status of each counted one.
fn run<S>(
    rt: &tokio::runtime::Runtime,
    mut svc: S,
    n: u64,
    make: impl Fn() -> Req,
) -> Vec<http::StatusCode>
where
    S: Service<Req, Response = Res, Error = Infallible>,
{
    let mut statuses = Vec::with_capacity(n as usize);
    drive(rt, &mut svc, WARM_UP, &make, &mut Vec::new());
    measured(|| drive(rt, &mut svc, n, &make, &mut statuses));
    statuses
}

/// Runs `counted`, the counted requests (callgrind's `--toggle-collect` names this function:
/// whatever runs inside it is counted).
#[inline(never)]
fn measured(counted: impl FnOnce()) {
    counted();
}

/// `n` requests, each awaited to its response as the bench does (`block_on` per request).
fn drive<S>(
    rt: &tokio::runtime::Runtime,
    svc: &mut S,
    n: u64,
    make: &impl Fn() -> Req,
    statuses: &mut Vec<http::StatusCode>,
) where
    S: Service<Req, Response = Res, Error = Infallible>,
{
    for _ in 0..n {
        let status = rt.block_on(async {
            match svc.ready().await {
                Ok(ready) => match ready.call(make()).await {
                    Ok(response) => response.status(),
                    Err(never) => match never {},
                },
                Err(never) => match never {},
            }
        });
        statuses.push(status);
    }
}
