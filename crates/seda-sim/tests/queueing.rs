//! Validation against queueing theory: M/M/1 and M/M/c mean response times within 5%.

use seda_sim::{Dist, Population, SimConfig, SourceConfig, StageConfig, simulate};

fn mmc_sim(servers: u32, rho: f64, customers: f64, seed: u64) -> f64 {
    let lambda = rho * f64::from(servers); // mu = 1
    let stage = StageConfig {
        servers,
        service: Dist::exp(1.0),
        queue_cap: None,
        drop_expired: false,
    };
    let open = Population::Open {
        rate_per_s: lambda,
        poisson: true,
        start_s: 0.0,
        end_s: f64::INFINITY,
    };
    let duration = customers / lambda;
    let mut cfg = SimConfig::new(duration, stage, vec![SourceConfig::new(open)]);
    cfg.seed = seed;
    cfg.bucket_s = duration / 10.0;
    cfg.warmup_s = duration / 20.0;
    let r = simulate(cfg).unwrap();
    let total = &r.metrics.total;
    assert_eq!(total.rejected + total.expired, 0);
    r.metrics.mean_response_s()
}

/// Mean response time of M/M/c with mu = 1 (Erlang C).
fn mmc_theory(c: u32, rho: f64) -> f64 {
    let a = rho * f64::from(c);
    let mut term = 1.0;
    let mut sum = 0.0;
    for k in 0..c {
        if k > 0 {
            term *= a / f64::from(k);
        }
        sum += term;
    }
    let last = term * a / f64::from(c) * (f64::from(c) / (f64::from(c) - a));
    let erlang_c = last / (sum + last);
    erlang_c / (f64::from(c) - a) + 1.0
}

#[test]
fn erlang_c_matches_mm1() {
    for rho in [0.5, 0.8, 0.9] {
        assert!((mmc_theory(1, rho) - 1.0 / (1.0 - rho)).abs() < 1e-9);
    }
}

#[test]
fn mm1_mean_response_within_5_percent() {
    for (rho, customers) in [(0.5, 300_000.0), (0.8, 1_000_000.0), (0.9, 2_000_000.0)] {
        let sim = mmc_sim(1, rho, customers, 11);
        let theory = mmc_theory(1, rho);
        let err = sim / theory - 1.0;
        println!(
            "M/M/1 rho {rho}: sim {sim:.4} theory {theory:.4} error {:.2}%",
            err * 100.0
        );
        assert!(
            err.abs() < 0.05,
            "M/M/1 rho {rho}: sim {sim} theory {theory}"
        );
    }
}

#[test]
fn mmc_mean_response_within_5_percent() {
    for (rho, customers) in [(0.5, 300_000.0), (0.8, 1_000_000.0), (0.9, 2_000_000.0)] {
        let sim = mmc_sim(4, rho, customers, 12);
        let theory = mmc_theory(4, rho);
        let err = sim / theory - 1.0;
        println!(
            "M/M/4 rho {rho}: sim {sim:.4} theory {theory:.4} error {:.2}%",
            err * 100.0
        );
        assert!(
            err.abs() < 0.05,
            "M/M/4 rho {rho}: sim {sim} theory {theory}"
        );
    }
}

#[test]
fn deterministic_service_halves_the_wait_md1() {
    // M/D/1 (Pollaczek-Khinchine): W = rho / (2 mu (1 - rho)) + 1/mu; at rho 0.8: 3.0.
    let stage = StageConfig {
        servers: 1,
        service: Dist::Deterministic { mean_s: 1.0 },
        queue_cap: None,
        drop_expired: false,
    };
    let open = Population::Open {
        rate_per_s: 0.8,
        poisson: true,
        start_s: 0.0,
        end_s: f64::INFINITY,
    };
    let mut cfg = SimConfig::new(500_000.0, stage, vec![SourceConfig::new(open)]);
    cfg.bucket_s = 50_000.0;
    cfg.warmup_s = 10_000.0;
    let mean = simulate(cfg).unwrap().metrics.mean_response_s();
    assert!((mean / 3.0 - 1.0).abs() < 0.05, "M/D/1 mean {mean}");
}

/// A Jackson network: stage 0 (M/M/1, rho 0.8) sends half of its output to stage 1 (M/M/1,
/// rho 0.4), the rest leaves. Mean response: 1/(1 - 0.8) + 0.5 x 1/(1 - 0.4) = 5.833.
#[test]
fn jackson_network_mean_response_within_5_percent() {
    use seda_sim::StageNode;
    let mm1 = || StageConfig {
        servers: 1,
        service: Dist::exp(1.0),
        queue_cap: None,
        drop_expired: false,
    };
    let open = Population::Open {
        rate_per_s: 0.8,
        poisson: true,
        start_s: 0.0,
        end_s: f64::INFINITY,
    };
    let mut cfg = SimConfig::new(1_000_000.0, mm1(), vec![SourceConfig::new(open)]);
    cfg.next = vec![(0.5, 1)];
    cfg.more_stages = vec![StageNode {
        stage: mm1(),
        admission: None,
        next: vec![],
    }];
    cfg.bucket_s = 100_000.0;
    cfg.warmup_s = 50_000.0;
    let r = simulate(cfg).unwrap();
    let mean = r.metrics.mean_response_s();
    let theory = 5.0 + 0.5 / 0.6;
    let [s0, s1] = [&r.stages[0], &r.stages[1]];
    assert_eq!(
        s0.arrived,
        r.metrics.buckets.iter().map(|b| b.offered).sum::<u64>()
    );
    let share = s1.arrived as f64 / s0.served as f64;
    assert!((share - 0.5).abs() < 0.01, "routed share {share}");
    assert_eq!(s0.rejected + s0.expired + s1.rejected + s1.expired, 0);
    println!("Jackson network: sim {mean:.4} theory {theory:.4}");
    assert!(
        (mean / theory - 1.0).abs() < 0.05,
        "mean {mean} vs {theory}"
    );
}

#[test]
fn bad_routes_are_errors() {
    let mm1 = StageConfig {
        servers: 1,
        service: Dist::exp(1.0),
        queue_cap: None,
        drop_expired: false,
    };
    let mut cfg = SimConfig::new(10.0, mm1.clone(), vec![]);
    cfg.next = vec![(0.5, 3)];
    assert!(simulate(cfg).unwrap_err().contains("routes"));
    let mut cfg = SimConfig::new(10.0, mm1, vec![]);
    cfg.next = vec![(0.7, 0), (0.7, 0)];
    assert!(simulate(cfg).unwrap_err().contains("more than 1"));
}
