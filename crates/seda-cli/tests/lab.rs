//! Runs every lab scenario in its quick form, as CI does, and checks each `result.json`: the
//! papers' qualitative claims (checked by the scenario with tolerances a noisy two-core machine
//! meets), the summary's key names and headline figures, and that the plots and report were
//! written.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

fn scenarios() -> Vec<String> {
    let out = Command::new(env!("CARGO_BIN_EXE_seda"))
        .args(["lab", "list"])
        .output()
        .expect("run seda lab list");
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect()
}

/// The enforced claims that failed in a run the machine did not spoil (an inconclusive run,
/// "loaded", is printed with its evidence and fails nothing), or why its result is unusable.
fn check_result(dir: &Path, name: &str) -> Vec<String> {
    let mut problems = Vec::new();
    let text = match std::fs::read_to_string(dir.join(name).join("result.json")) {
        Ok(t) => t,
        Err(e) => return vec![format!("{name}: no result.json ({e})")],
    };
    let r: Value = serde_json::from_str(&text).expect("result.json is JSON");
    assert_eq!(r["scenario"], name);
    assert_eq!(r["quick"], true);
    assert!(r["machine"]["cpus"].as_u64().is_some_and(|n| n >= 1));
    // A scenario whose peers this machine lacks (HAProxy, PostgreSQL) says so and checks
    // nothing: `.ci/run` installs them, a user's machine may not have them.
    if let Some(why) = r["config"]["skipped"].as_str() {
        eprintln!("{name}: skipped ({why})");
        return problems;
    }
    assert!(
        r["summary"].as_object().is_some_and(|s| !s.is_empty()),
        "{name}: empty summary"
    );
    // `seda lab repeat` compares these across runs: each must name a figure of the summary.
    let headline = r["headline"].as_object().expect("headline");
    assert!(!headline.is_empty(), "{name}: no headline figures");
    for (path, v) in headline {
        if !v.is_number() {
            problems.push(format!(
                "{name}: headline figure {path} is not in the summary"
            ));
        }
    }
    let checks = r["checks"].as_array().expect("checks");
    assert!(!checks.is_empty(), "{name}: no claims checked");
    let failed: Vec<String> = checks
        .iter()
        .filter(|c| c["passed"] != true && c["enforced"] != false)
        .map(|c| format!("{name}: {} ({})", c["claim"], c["detail"]))
        .collect();
    match r["verdict"].as_str() {
        Some("pass") => assert!(failed.is_empty(), "{name}: pass with failed claims"),
        Some("fail") => {
            assert!(!failed.is_empty(), "{name}: fail without a failed claim");
            problems.extend(failed);
            // CI keeps only the test's output: the report's figures are what tells a cause.
            let report = std::fs::read_to_string(dir.join(name).join("report.md"));
            eprintln!("{name} failed; its report:\n{}", report.unwrap_or_default());
        }
        Some("loaded: inconclusive") => {
            let why: Vec<String> = r["health"]["loads"]
                .as_array()
                .into_iter()
                .flatten()
                .flat_map(|l| l["loaded_because"].as_array().cloned().unwrap_or_default())
                .map(|w| w.to_string())
                .collect();
            eprintln!(
                "{name}: loaded, inconclusive ({}); its failed claims, not counted:\n{}",
                why.join("; "),
                failed.join("\n")
            );
        }
        v => problems.push(format!("{name}: no verdict ({v:?})")),
    }
    for plot in r["plots"].as_array().expect("plots") {
        let stem = plot.as_str().expect("plot name");
        for ext in ["png", "svg"] {
            let p = dir.join(name).join(format!("{stem}.{ext}"));
            assert!(
                p.metadata().is_ok_and(|m| m.len() > 1000),
                "{name}: {p:?} missing"
            );
        }
    }
    let report = std::fs::read_to_string(dir.join(name).join("report.md")).expect("report.md");
    assert!(
        report.contains("Reproduces:"),
        "{name}: report without its paper"
    );
    problems
}

#[test]
fn every_quick_scenario_bears_out_its_papers_claims() {
    // Kept after the run (under target/tmp) so a failure can be read in its report.md.
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("lab-quick");
    let _ = std::fs::remove_dir_all(&dir);
    let names = scenarios();
    assert!(names.contains(&"mail-spike".to_string()));
    // Each scenario runs once: a failure is a finding, not noise to retry away. A run the
    // machine spoiled says so itself (verdict "loaded: inconclusive", with the evidence).
    let status = Command::new(env!("CARGO_BIN_EXE_seda"))
        .args(["lab", "run", "all", "--quick", "--out"])
        .arg(&dir)
        .status()
        .expect("run seda lab run all");
    let problems: Vec<String> = names.iter().flat_map(|n| check_result(&dir, n)).collect();
    assert!(
        problems.is_empty(),
        "claims that did not hold (reports in {}):\n{}",
        dir.display(),
        problems.join("\n")
    );
    assert!(status.success(), "seda lab run all failed ({status})");
}
