//! The resource and termination levers' goals (issues 13 and 14) checked in the simulator:
//! fixed seeds, virtual time, so every figure is deterministic; each test prints its figures.

use seda_sim::levers::TargetPlan;
use seda_sim::scenarios::{follow_target, pool_control, thesis_open};

#[test]
fn arx_one_step_prediction_error_is_within_10_percent_on_each_plant() {
    for plant in &pool_control::PLANTS {
        let best = pool_control::best_fixed(plant, 1).unwrap().per_s;
        let steps: Vec<(f64, f64)> = pool_control::STEPS
            .iter()
            .enumerate()
            .map(|(j, f)| (j as f64 * pool_control::STEP_S, f * best))
            .collect();
        let sizer = pool_control::sizer("p", TargetPlan::Steps(steps)).unwrap();
        let r = pool_control::run_plant(plant, sizer, 4, 180.0, 1).unwrap();
        let e = r.arx_error.expect("the model fitted");
        println!("{}: ARX one-step error {e:.3}", plant.name);
        assert!(e <= 0.10, "{}: {e}", plant.name);
    }
}

#[test]
fn p_control_follows_a_step_within_3_periods_with_steady_error_within_5_percent() {
    for plant in &pool_control::PLANTS {
        let best = pool_control::best_fixed(plant, 1).unwrap().per_s;
        let targets: Vec<f64> = pool_control::STEPS.iter().map(|f| f * best).collect();
        let steps: Vec<(f64, f64)> = targets
            .iter()
            .enumerate()
            .map(|(j, &t)| (j as f64 * pool_control::STEP_S, t))
            .collect();
        let sizer = pool_control::sizer("p", TargetPlan::Steps(steps)).unwrap();
        let r = pool_control::run_plant(plant, sizer, 4, 180.0, 1).unwrap();
        let t = pool_control::tracking(&r.periods, &targets);
        println!("{}: {t:?}", plant.name);
        assert!(t.settle_periods <= 3.0, "{}: {t:?}", plant.name);
        assert!(t.steady_error <= 0.05, "{}: {t:?}", plant.name);
    }
}

/// Every law on the contention plant, over several seeds: the first addition past the knee
/// (13 to 21 threads) lowers the throughput by more than the noise, but a noise margin learned
/// from the model's errors, which that move's miss inflates, read it as within the noise: PD
/// went on to 45 threads (0.81 of the best fixed pool, seed 1) and P and PI to 37 (0.68 on
/// one seed).
#[test]
fn every_law_finds_the_contention_plants_knee_on_every_seed() {
    let plant = pool_control::PLANTS
        .iter()
        .find(|p| p.name == "contention")
        .expect("the contention plant");
    let best = pool_control::best_fixed(plant, 1).unwrap().per_s;
    for law in ["p", "pi", "pd"] {
        for seed in 1..=8 {
            let sizer =
                pool_control::sizer(law, TargetPlan::Steps(vec![(0.0, 2.0 * best)])).unwrap();
            let r = pool_control::run_plant(plant, sizer, 4, 120.0, seed).unwrap();
            let reached = pool_control::mean_throughput(&r.periods, 60.0) / best;
            assert!(
                reached >= 0.9,
                "{law}, seed {seed}: {reached:.3} of the best fixed pool"
            );
        }
    }
}

#[test]
fn self_tuning_pool_reaches_95_percent_of_the_best_fixed_pool_with_overshoot_within_20_percent() {
    for plant in &pool_control::PLANTS {
        let pool_control::BestFixed {
            sweep,
            threads: best_n,
            per_s: best,
        } = pool_control::best_fixed(plant, 1).unwrap();
        // The sweep really has an interior optimum on the contention plant.
        if plant.name == "contention" {
            assert!(sweep.last().unwrap().1 < 0.8 * best, "{sweep:?}");
        }
        let sizer = pool_control::sizer("p", TargetPlan::Steps(vec![(0.0, 2.0 * best)])).unwrap();
        let r = pool_control::run_plant(plant, sizer, 4, 120.0, 1).unwrap();
        let reached = pool_control::mean_throughput(&r.periods, 60.0);
        let targets: Vec<f64> = pool_control::STEPS.iter().map(|f| f * best).collect();
        let steps: Vec<(f64, f64)> = targets
            .iter()
            .enumerate()
            .map(|(j, &t)| (j as f64 * pool_control::STEP_S, t))
            .collect();
        let sizer = pool_control::sizer("p", TargetPlan::Steps(steps)).unwrap();
        let track = pool_control::run_plant(plant, sizer, 4, 180.0, 1).unwrap();
        let t = pool_control::tracking(&track.periods, &targets);
        println!(
            "{}: best fixed {best_n} threads {best:.0}/s; self-tuning {reached:.0}/s ({:.3}); {t:?}",
            plant.name,
            reached / best
        );
        assert!(
            reached >= 0.95 * best,
            "{}: {reached} vs {best}",
            plant.name
        );
        assert!(t.thread_overshoot <= 0.20, "{}: {t:?}", plant.name);
        // A fixed pool of the best size is what it is compared with: the same plant, measured.
        let fixed =
            pool_control::run_plant(plant, pool_control::fixed(best_n), best_n, 40.0, 1).unwrap();
        assert!(pool_control::mean_throughput(&fixed.periods, 10.0) > 0.9 * best);
    }
}

#[test]
fn thesis_open_serves_90_percent_of_all_within_target_rejecting_at_most_4_percent() {
    let mut of_all = Vec::new();
    for name in thesis_open::VARIANTS {
        let r = thesis_open::run_variant(name, 1).unwrap();
        let s = thesis_open::summary(name, &r);
        let all = s.extra_f64("within_target_of_all").unwrap();
        println!(
            "{name}: within target of all {all:.3}, of processed {:.3}, rejected {:.3}",
            s.extra_f64("within_target_of_processed").unwrap(),
            s.rejected_fraction
        );
        of_all.push((all, s.rejected_fraction));
    }
    let (ours, rejected) = of_all[0];
    assert!(ours >= 0.90, "{ours}");
    assert!(rejected <= 0.04, "{rejected}");
    assert!(
        of_all[1..].iter().all(|&(seda, _)| ours > seda),
        "{of_all:?}"
    );
}

#[test]
fn the_p90_follows_a_target_changed_at_run_time() {
    let r = follow_target::run_steps(1).unwrap();
    let p90: Vec<f64> = (0..follow_target::TARGETS.len())
        .map(|i| {
            let s = follow_target::phase_summary(&r, i);
            let p = s.p90_completed_s.unwrap();
            println!(
                "target {:.2} s: settled p90 {p:.3} s ({:.2} x)",
                s.target_s,
                s.extra_f64("p90_over_target").unwrap()
            );
            assert!(p <= 1.5 * s.target_s, "{p} against {}", s.target_s);
            p
        })
        .collect();
    // The target is halved, then loosened past the first: the p90 goes down, then up.
    assert!(p90[1] < p90[0] && p90[2] > p90[1], "{p90:?}");
}

#[test]
fn sert_doubles_throughput_during_the_shift_and_serves_85_percent_within_1s() {
    use seda_sim::scenarios::sert;
    let mut s = Vec::new();
    for name in sert::SHIFT_VARIANTS {
        let r = sert::run_shift_variant(name, 1).unwrap();
        let sum = sert::shift_summary(name, &r);
        println!(
            "{name}: throughput {:.1}/s, mean response {:.3} s, within 1 s {:.3}, terminated {:.3}",
            sum.throughput_per_s.unwrap(),
            sum.extra_f64("mean_response_s").unwrap(),
            sum.extra_f64("within_1s_fraction").unwrap(),
            sum.extra_f64("terminated_fraction").unwrap()
        );
        s.push(sum);
    }
    let (alone, sert) = (&s[0], &s[1]);
    assert!(
        sert.throughput_per_s.unwrap() >= 2.0 * alone.throughput_per_s.unwrap(),
        "{:?} vs {:?}",
        sert.throughput_per_s,
        alone.throughput_per_s
    );
    let within = sert.extra_f64("within_1s_fraction").unwrap();
    assert!(within >= 0.85, "{within}");
}

#[test]
fn admission_alone_loses_throughput_to_long_requests_and_sert_keeps_it() {
    use seda_sim::scenarios::sert_motivation::{LONG_SHARES, run_point};
    let (lo, hi) = (LONG_SHARES[0], LONG_SHARES[LONG_SHARES.len() - 1]);
    // Seeds 1-4 gave admission alone 35-37% of its throughput at 10% long, a mean response
    // time 126-137 x that at 0.1%, and SERT 2.43-2.59 x its throughput at 10%.
    for seed in 1..=4 {
        let f = |variant: &str, share: f64| {
            let s = run_point(variant, share, seed).unwrap();
            let tput = s.throughput_per_s.unwrap();
            let mean = s.extra_f64("mean_response_s").unwrap();
            println!("seed {seed} {variant} at {share}: {tput:.1}/s, mean {mean:.3} s");
            (tput, mean)
        };
        let (ac_lo, ac_lo_mean) = f("admission", lo);
        let (ac_hi, ac_hi_mean) = f("admission", hi);
        let (sert_hi, _) = f("admission+sert", hi);
        assert!(ac_hi < 0.5 * ac_lo, "seed {seed}: {ac_hi} against {ac_lo}");
        assert!(
            ac_hi_mean >= 10.0 * ac_lo_mean,
            "seed {seed}: {ac_hi_mean} against {ac_lo_mean}"
        );
        assert!(
            sert_hi >= 2.0 * ac_hi,
            "seed {seed}: {sert_hi} against {ac_hi}"
        );
    }
}

#[test]
fn eager_clients_send_again_when_the_reply_is_late() {
    use seda_sim::{Dist, Population, SimConfig, SourceConfig, StageConfig, simulate};
    // One server of 1 s service, 10 clients with 0.2 s patience and no think: a closed loop
    // would offer 10 requests over the first second; eager clients offer one per 0.2 s each.
    let eager = Population::Eager {
        clients: 10,
        patience: Dist::Deterministic { mean_s: 0.2 },
        think: Dist::Deterministic { mean_s: 0.0 },
        start_s: 0.0,
        end_s: f64::INFINITY,
    };
    let stage = StageConfig {
        servers: 1,
        service: Dist::Deterministic { mean_s: 1.0 },
        queue_cap: None,
        drop_expired: false,
    };
    let mut cfg = SimConfig::new(1.05, stage, vec![SourceConfig::new(eager)]);
    cfg.bucket_s = 0.05;
    let r = simulate(cfg).unwrap();
    // Sends at 0, 0.2, 0.4, 0.6, 0.8, 1.0 (the reply at 1.0 for the first client's first one
    // makes it send then, not again at 1.0 by patience).
    assert_eq!(r.metrics.total.offered, 60, "{:?}", r.metrics.total.offered);
    assert_eq!(r.metrics.total.completed, 1);
}

#[test]
fn a_request_past_the_threshold_is_cut_and_frees_its_server() {
    use seda_control::terminate::FixedThreshold;
    use seda_sim::levers::{Levers, Termination};
    use seda_sim::{Dist, Population, SimConfig, SourceConfig, StageConfig, simulate};
    use std::time::Duration;
    // One server; every request takes 1 s; the threshold is 0.3 s, so each is
    // cut at 0.3 s and the next starts at once: over 3 s, 10 cut, none completed.
    let open = Population::Open {
        rate_per_s: 100.0,
        poisson: false,
        start_s: 0.0,
        end_s: f64::INFINITY,
    };
    let stage = StageConfig {
        servers: 1,
        service: Dist::Deterministic { mean_s: 1.0 },
        queue_cap: None,
        drop_expired: false,
    };
    let mut cfg = SimConfig::new(3.0 + 1e-6, stage, vec![SourceConfig::new(open)]);
    cfg.levers = Levers::new();
    cfg.levers.termination = Some(Termination {
        terminator: Box::new(FixedThreshold(Duration::from_millis(300))),
    });
    let r = simulate(cfg).unwrap();
    assert_eq!(r.metrics.total.terminated, 10);
    assert_eq!(r.metrics.total.completed, 0);
    assert_eq!(r.stages[0].terminated, 10);
}

#[test]
fn a_pool_resized_each_period_serves_with_its_new_size() {
    use seda_control::sizer::{Sizer, SizerPeriod, SizerReport};
    use seda_sim::levers::{Levers, PoolControl};
    use seda_sim::{Dist, Population, SimConfig, SourceConfig, StageConfig, simulate};
    // 2 servers, then 8 from the first period on: saturated, 1 s service, 10 s.
    #[derive(Debug)]
    struct Grow;
    impl Sizer for Grow {
        fn name(&self) -> &'static str {
            "grow"
        }
        fn update(&mut self, _p: &SizerPeriod) -> usize {
            8
        }
        fn report(&self) -> SizerReport {
            SizerReport::default()
        }
    }
    let users = Population::Closed {
        users: 50,
        think: Dist::Deterministic { mean_s: 0.0 },
        reject_wait: None,
        start_s: 0.0,
        end_s: f64::INFINITY,
    };
    let stage = StageConfig {
        servers: 2,
        service: Dist::Deterministic { mean_s: 1.0 },
        queue_cap: None,
        drop_expired: false,
    };
    let mut cfg = SimConfig::new(10.5, stage, vec![SourceConfig::new(users)]);
    cfg.levers = Levers::new();
    cfg.levers.period_s = 2.0;
    cfg.levers.pool = Some(PoolControl {
        sizer: Box::new(Grow),
        plan: None,
        max_servers: 6,
    });
    let r = simulate(cfg).unwrap();
    // 2 servers for 2 s (4 done), then 6 (clamped to max) for 8.5 s (48 done by 10).
    assert_eq!(r.metrics.total.completed, 4 + 6 * 8);
    assert_eq!(r.periods[0].servers, 2);
    assert!(r.periods[1..].iter().all(|p| p.servers == 6));
}

/// Issue 55's goal for our adaptive threshold where it is met in steady state (virtual time,
/// seed 1): within 5% of the best fixed threshold on throughput loss and mean response time,
/// ranking at 150% and 200%, index matching at every load from 80% to 200% (ranking below 150%
/// is a trade-off no one threshold wins on both axes, see the README).
#[test]
fn our_threshold_is_within_5_percent_of_the_best_fixed_one_where_the_goal_is_met() {
    use seda_sim::scenarios::sert::{run_threshold_point, workloads};
    for (name, service, fixed) in workloads() {
        let capacity = 2.0 / service.mean_s();
        let loads: &[f64] = if name == "ranking" {
            &[1.5, 2.0]
        } else {
            &[0.8, 1.0, 1.25, 1.5, 2.0]
        };
        for &load in loads {
            let run = |kind: &str, f: f64| {
                run_threshold_point(&service, capacity, load, kind, f, 1).unwrap()
            };
            let ours = run("ours", 0.0);
            let fixed: Vec<_> = fixed.iter().map(|&f| run("fixed", f)).collect();
            for (key, slack) in [("throughput_loss", 0.01), ("mean_response_s", 0.005)] {
                let best = fixed
                    .iter()
                    .map(|s| s.extra_f64(key).unwrap())
                    .fold(f64::INFINITY, f64::min);
                let x = ours.extra_f64(key).unwrap();
                assert!(
                    x <= best * 1.05 + slack,
                    "{name} at {load}: {key} {x} against the best fixed {best}"
                );
            }
        }
    }
}
