//! `seda sim` end to end: JSON shape, the spike goals for our controller, clear errors.

use std::process::Command;

fn seda(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_seda"))
        .args(args)
        .output()
        .expect("run seda")
}

#[test]
fn spike_json_has_the_summary_fields_and_the_tuned_controller_meets_the_goals() {
    let out = seda(&[
        "sim",
        "spike",
        "--controller",
        "response_time_tuned",
        "--json",
        "--seed",
        "3",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let run = &v["runs"][0];
    let s = &run["summary"];
    for key in [
        "controller",
        "target_s",
        "p90_admitted_s",
        "p90_admitted_after_settle_s",
        "settle_time_s",
        "goodput_per_s",
        "capacity_per_s",
        "rejected_fraction",
    ] {
        assert!(!s[key].is_null(), "missing {key} in {s}");
    }
    assert!(run["series"].as_array().is_some_and(|a| a.len() >= 60));
    let f = |k: &str| s[k].as_f64().unwrap();
    assert!(f("settle_time_s") <= 2.0, "{s}");
    assert!(
        f("p90_admitted_after_settle_s") <= 1.2 * f("target_s"),
        "{s}"
    );
    assert!(f("goodput_per_s") >= 0.9 * f("capacity_per_s"), "{s}");
}

#[test]
fn bad_names_give_clear_errors() {
    let out = seda(&["sim", "nope"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("valid: spike"));
    let out = seda(&["sim", "spike", "--controller", "nope"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("valid kinds"));
    let out = seda(&["sim", "spike", "--controller", "vegas", "--param", "x"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("NAME=VALUE"));
}

/// Asserts that each of `keys` is a number in `s` (`label` names the scenario).
fn assert_numbers(label: &str, s: &serde_json::Value, keys: &[&str]) {
    for key in keys {
        assert!(s[key].is_number(), "{label} {key}: {s}");
    }
}

#[test]
fn the_levers_scenarios_print_the_summary_keys_the_issues_name() {
    let json = |args: &[&str]| -> serde_json::Value {
        let out = seda(args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).expect("JSON")
    };
    let within = [
        "within_target_of_all",
        "within_target_of_processed",
        "rejected_fraction",
    ];
    let sert = [
        "throughput_per_s",
        "mean_response_s",
        "within_1s_fraction",
        "terminated_fraction",
        "throughput_loss",
    ];
    let v = json(&["sim", "pool-control", "--controller", "p", "--json"]);
    for plant in v["plants"].as_array().expect("plants") {
        assert_numbers(
            "pool-control",
            &plant["runs"][0]["summary"],
            &[
                "steady_error",
                "settle_periods",
                "thread_overshoot",
                "fraction_of_best_fixed",
                "arx_error",
            ],
        );
    }
    let v = json(&["sim", "thesis-open", "--json"]);
    for (_, run) in v["runs"].as_object().expect("runs") {
        assert_numbers("thesis-open", &run["summary"], &within);
    }
    let v = json(&["sim", "follow-target", "--json"]);
    for phase in v["phases"].as_array().expect("phases") {
        assert_numbers("follow-target", phase, &["p90_over_target"]);
        assert_numbers("follow-target", phase, &within);
    }
    assert_numbers("follow-target", &v["summary"], &within);
    let v = json(&["sim", "sert-shift", "--json"]);
    for (_, run) in v["runs"].as_object().expect("runs") {
        assert_numbers("sert-shift", &run["summary"], &sert);
    }
    let v = json(&["sim", "sert-motivation", "--json"]);
    let points = v["points"].as_array().expect("points");
    // Each variant at each long share.
    assert_eq!(points.len(), 10, "{v}");
    for p in points {
        assert_numbers("sert-motivation", &p["summary"], &sert);
        assert!(
            p["variant"].is_string() && p["long_share"].is_number(),
            "{p}"
        );
    }
    let out = seda(&["sim", "pool-control", "--controller", "nope"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("hill_climbing"));
}
