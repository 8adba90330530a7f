//! Events per second on M/M/1 at utilisation 0.9: `cargo run --release -p seda-sim --example mm1`.

use seda_sim::{Dist, Population, SimConfig, SourceConfig, StageConfig, simulate};

fn main() {
    let stage = StageConfig {
        servers: 1,
        service: Dist::exp(1.0),
        queue_cap: None,
        drop_expired: false,
    };
    let open = Population::Open {
        rate_per_s: 0.9,
        poisson: true,
        start_s: 0.0,
        end_s: f64::INFINITY,
    };
    let mut cfg = SimConfig::new(5_000_000.0, stage, vec![SourceConfig::new(open)]);
    cfg.bucket_s = 100_000.0;
    cfg.warmup_s = 100_000.0;
    match simulate(cfg) {
        Ok(r) => println!(
            "M/M/1 rho 0.9: mean response {:.3} s (theory 10), {} events in {:.3} s: {:.2e} events/s",
            r.metrics.mean_response_s(),
            r.events,
            r.wall_s,
            r.events_per_s()
        ),
        Err(e) => eprintln!("error: {e}"),
    }
}
