//! The resource and termination levers' goals (issues 13 and 14) checked in the simulator:
//! fixed seeds, virtual time, so every figure is deterministic; each test prints its figures.

use seda_sim::levers::{FixedPool, TargetPlan};
use seda_sim::scenarios::{pool_control, thesis_open};

#[test]
fn arx_one_step_prediction_error_is_within_10_percent_on_each_plant() {
    for plant in &pool_control::PLANTS {
        let (_, _, best) = pool_control::best_fixed(plant, 1).unwrap();
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
        let (_, _, best) = pool_control::best_fixed(plant, 1).unwrap();
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

#[test]
fn self_tuning_pool_reaches_95_percent_of_the_best_fixed_pool_with_overshoot_within_20_percent() {
    for plant in &pool_control::PLANTS {
        let (sweep, best_n, best) = pool_control::best_fixed(plant, 1).unwrap();
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
            pool_control::run_plant(plant, Box::new(FixedPool(best_n)), best_n, 40.0, 1).unwrap();
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
