use std::time::Duration;

use super::*;
use crate::peers::AimdLimitConfig;
use crate::{DEFAULT_DROP_THRESHOLD, ResponseTimeConfig};

fn map(kv: &[(&str, f64)]) -> BTreeMap<String, f64> {
    kv.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

#[test]
fn every_kind_builds_with_defaults_and_names_itself() {
    for e in catalogue() {
        let c = e.build(&BTreeMap::new()).unwrap();
        // A variant (`response_time_tuned_trim`) names the controller it configures.
        assert!(
            e.name.starts_with(c.name()),
            "{} built {}",
            e.name,
            c.name()
        );
        assert!(!e.about.is_empty() && !e.source.is_empty());
    }
}

#[test]
fn unknown_kind_lists_the_valid_ones() {
    let e = build_admission("red", &BTreeMap::new())
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("unknown admission kind `red`"), "{e}");
    for kind in names() {
        assert!(e.contains(kind), "{e}");
    }
}

#[test]
fn unknown_parameter_lists_the_valid_ones() {
    let e = build_admission("vegas", &map(&[("target_s", 1.0)]))
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("`target_s`") && e.contains("probe_multiplier"),
        "{e}"
    );
}

#[test]
fn bad_values_are_errors_not_panics() {
    let cases: &[(&str, &[(&str, f64)])] = &[
        ("response_time", &[("target_s", -1.0)]),
        ("response_time", &[("target_s", 0.0)]),
        ("response_time", &[("nreq", 1.5)]),
        ("response_time", &[("adj_d", 0.5)]),
        ("response_time", &[("alpha", f64::NAN)]),
        (
            "response_time",
            &[("min_rate_per_s", 10.0), ("max_rate_per_s", 1.0)],
        ),
        ("multiclass", &[("classes", 0.0)]),
        ("multiclass", &[("classes", 2.0), ("class5_target_s", 1.0)]),
        ("gradient2", &[("min_limit", 0.0)]),
        ("aimd_limit", &[("backoff_ratio", 1.5)]),
        ("envoy_gradient", &[("min_rtt_request_count", 0.0)]),
        ("codel", &[("interval_s", 0.0)]),
        ("degradation", &[("q_min", 2.0)]),
        ("selective_dropper", &[("threshold_s", -0.1)]),
        ("response_time_tuned", &[("setpoint", 0.0)]),
        ("response_time_tuned", &[("adapt_s", 0.0)]),
        ("response_time_tuned", &[("min_queue", 0.5)]),
        ("response_time_tuned", &[("adj_d", 1.2)]), // an AIMD constant it does not use
    ];
    for (kind, kv) in cases {
        assert!(
            build_admission(kind, &map(kv)).is_err(),
            "{kind} {kv:?} should fail"
        );
    }
}

#[test]
fn parameters_reach_the_controller() {
    let c = build_admission("response_time", &map(&[("initial_rate_per_s", 42.0)])).unwrap();
    assert_eq!(c.state()[0], ("rate_per_s", 42.0));
    let c = build_admission("multiclass", &map(&[("classes", 3.0)])).unwrap();
    assert_eq!(c.state().len(), 3);
    let mut c = build_admission("selective_dropper", &map(&[("threshold_s", 0.5)])).unwrap();
    assert!(!c.on_dequeue(Duration::ZERO, Duration::from_millis(500)));
    assert!(c.on_dequeue(Duration::ZERO, Duration::from_millis(501)));
}

#[test]
fn aiming_sets_the_target_where_a_controller_takes_one() {
    let t = Duration::from_millis(400);
    let aimed = |n: &str| entry(n).unwrap().aimed(t);
    for n in [
        "response_time",
        "response_time_tuned",
        "multiclass",
        "degradation",
    ] {
        assert_eq!(aimed(n)["target_s"], 0.4, "{n}");
    }
    assert_eq!(aimed("aimd_limit")["timeout_s"], 0.4);
    assert_eq!(aimed("selective_dropper")["threshold_s"], 0.2);
    for n in ["vegas", "gradient2", "envoy_gradient", "codel"] {
        assert!(aimed(n).is_empty(), "{n}");
        assert!(!entry(n).unwrap().takes_target());
    }
    let extra = map(&[("setpoint", 0.5)]);
    let c = entry("response_time_tuned_trim")
        .unwrap()
        .build_aimed(t, &extra)
        .unwrap();
    assert_eq!(c.name(), "response_time_tuned");
}

#[test]
fn defaults_are_the_configs_defaults() {
    assert_eq!(
        ResponseTimeConfig::DEFAULT_TARGET,
        Duration::from_secs(1),
        "WC03's Figure 10 target"
    );
    assert_eq!(AimdLimitConfig::default().timeout, Duration::from_secs(5));
    assert_eq!(DEFAULT_DROP_THRESHOLD, Duration::from_millis(80));
    let rt = entry("response_time").unwrap().parameters();
    assert!(
        rt.contains(&"target_s") && rt.contains(&"bucket_depth"),
        "{rt:?}"
    );
    assert_eq!(
        entry("codel").unwrap().parameters(),
        ["target_delay_s", "interval_s"]
    );
}

#[test]
fn errors_are_typed_and_keep_their_source() {
    use std::error::Error;
    let e = build_admission("aimd_limit", &map(&[("backoff_ratio", 1.5)]))
        .err()
        .unwrap();
    match &e {
        CatalogueError::Invalid { controller, source } => {
            assert_eq!(*controller, "aimd_limit");
            assert_eq!(source.param, "backoff_ratio");
        }
        other => panic!("{other:?}"),
    }
    assert!(e.source().is_some());
    let e = build_admission("codel", &map(&[("interval_s", -1.0)]))
        .err()
        .unwrap();
    assert!(matches!(e, CatalogueError::BadValue { .. }), "{e:?}");
    let listing = listing();
    for n in names() {
        assert!(listing.contains(n));
    }
}
