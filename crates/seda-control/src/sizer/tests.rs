//! The registry's sizers on one deterministic plant, against the thread targets the runtime's
//! sizers gave before they moved here (`seda/src/sizer.rs`'s `TargetSizer`, recorded on
//! 2026-12-07 by running that code on this plant): the move changed no decision.

use super::{OutsideTargets, Sizer, SizerPeriod, SizerSettings};
use super::{fixed, hill_climbing, self_tuning};
use crate::selftune::Law;

/// What the registry builds each sizer with (`catalogue/sizers.rs`).
type Build = fn(&SizerSettings) -> Box<dyn Sizer>;

/// 30 one-second periods from 4 threads on a plant serving 50 events/s per thread up to 12
/// threads and 2.5/s less per thread past it (with a small wobble); asked 400/s at run time,
/// then 700/s at run time (more than any size gives) over a global 250/s, then the global
/// 250/s alone. Returns the targets and the last ARX error.
fn drive(build: Build, law: Law) -> (Vec<usize>, Option<f64>) {
    let mut settings = SizerSettings::new(1, 32);
    settings.initial_threads = 4;
    settings.law = law;
    let mut sizer = build(&settings);
    let mut threads = sizer.initial_threads(4);
    let mut seq = Vec::new();
    for i in 0..30u64 {
        let per_s = 50.0 * (threads.min(12) as f64) - 2.5 * (threads.saturating_sub(12) as f64)
            + (i % 3) as f64;
        let targets = match i {
            0..10 => OutsideTargets {
                run_time: Some(400.0),
                global: None,
            },
            10..20 => OutsideTargets {
                run_time: Some(700.0),
                global: Some(250.0),
            },
            _ => OutsideTargets {
                run_time: None,
                global: Some(250.0),
            },
        };
        let p = SizerPeriod {
            secs: 1.0,
            completions: per_s as u64,
            arrivals: 500,
            busy_secs: Some(threads as f64 * 0.9),
            threads,
            targets,
            ..SizerPeriod::default()
        };
        threads = sizer.update(&p).max(1);
        assert_eq!(sizer.report().threads_target, Some(threads));
        seq.push(threads);
    }
    (seq, sizer.report().arx_error)
}

#[test]
fn thread_targets_are_those_the_runtime_gave_before_the_registry() {
    let (fixed, e) = drive(fixed::build, Law::P);
    assert_eq!(fixed, vec![4; 30]);
    assert_eq!(e, None);
    let (hill, _) = drive(hill_climbing::build, Law::P);
    assert_eq!(
        hill,
        [
            4, 5, 5, 4, 4, 5, 5, 4, 6, 8, 8, 7, 7, 9, 12, 11, 12, 13, 13, 14, 14, 15, 15, 15, 16,
            17, 17, 17, 17, 18
        ]
    );
    let steered = |at_10| {
        let mut v = vec![5, 7, 8, 8, 8, 8, 8, 8, 8, 8, at_10, 13];
        v.extend([12; 8]);
        v.extend([8, 6, 5, 5, 5, 5, 5, 5, 5, 5]);
        v
    };
    for (law, at_10, arx) in [
        (Law::P, 12, 0.014974497818483413),
        (Law::Pi, 12, 0.014974497818483413),
        (Law::Pd, 11, 0.018078747754380817),
    ] {
        let (seq, e) = drive(self_tuning::build, law);
        assert_eq!(seq, steered(at_10), "{law:?}");
        let e = e.unwrap();
        assert!((e - arx).abs() < 1e-12, "{law:?}: {e}");
    }
}
