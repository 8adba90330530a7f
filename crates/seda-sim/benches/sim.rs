//! Simulator throughput: events per second on M/M/c at utilisation 0.9, over the number of
//! servers (and so of pending events).

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use seda_sim::{Dist, Population, SimConfig, SourceConfig, StageConfig, simulate};

fn mmc(servers: u32, duration_s: f64) -> SimConfig {
    let stage = StageConfig {
        servers,
        service: Dist::exp(1.0),
        queue_cap: None,
        drop_expired: false,
    };
    let open = Population::Open {
        rate_per_s: 0.9 * f64::from(servers),
        poisson: true,
        start_s: 0.0,
        end_s: f64::INFINITY,
    };
    let mut cfg = SimConfig::new(duration_s, stage, vec![SourceConfig::new(open)]);
    cfg.bucket_s = duration_s;
    cfg.tick_s = duration_s;
    cfg
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("mmc_rho_0.9");
    g.sample_size(10);
    for servers in [1u32, 100, 10_000] {
        let duration = 200_000.0 / f64::from(servers);
        let events = simulate(mmc(servers, duration))
            .map(|r| r.events)
            .unwrap_or(0);
        g.throughput(Throughput::Elements(events));
        g.bench_with_input(BenchmarkId::from_parameter(servers), &servers, |b, &s| {
            b.iter(|| simulate(mmc(s, duration)).map(|r| r.events))
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
