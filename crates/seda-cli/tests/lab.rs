//! Runs every lab scenario in its quick form, as CI does, and checks each `result.json`: the
//! papers' qualitative claims (checked by the scenario with tolerances a noisy two-core machine
//! meets), the summary's key names and headline figures, and that the plots and report were
//! written. Run through `cargo xtask test` (the README's test command), it runs the release
//! `seda`, as users run it; with `SEDA_REQUIRE_PEERS=1` (CI) a scenario that lacks a peer fails.

use std::path::Path;
use std::process::{Command, ExitStatus};

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

/// What one scenario's `result.json` says.
#[derive(Default)]
struct Checked {
    /// The enforced claims that failed in a run the machine did not spoil, or why the result
    /// is unusable.
    problems: Vec<String>,
    /// For a run the machine spoiled (verdict "loaded: inconclusive"): the evidence, and the
    /// claims that failed without counting.
    inconclusive: Option<String>,
}

/// Reads `<dir>/<name>/result.json`.
fn check_result(dir: &Path, name: &str) -> Checked {
    let mut checked = Checked::default();
    let problems = &mut checked.problems;
    let text = match std::fs::read_to_string(dir.join(name).join("result.json")) {
        Ok(t) => t,
        Err(e) => {
            // `seda lab run` printed why above ("could not run: ...").
            problems.push(format!("{name}: could not run, no result.json ({e})"));
            return checked;
        }
    };
    let r: Value = serde_json::from_str(&text).expect("result.json is JSON");
    assert_eq!(r["scenario"], name);
    assert_eq!(r["quick"], true);
    assert!(r["machine"]["cpus"].as_u64().is_some_and(|n| n >= 1));
    // A peer the machine lacks (HAProxy, PostgreSQL, nginx...) went through `Lab::skip`: the
    // scenario skipped what needs it (all of it, or one variant, server or plant), or, where
    // `SEDA_REQUIRE_PEERS=1` (CI), could not run. A skip in a required run is a failure too.
    let skipped = &r["config"]["skipped"];
    let skips: Vec<String> = match skipped {
        Value::String(why) => vec![why.clone()],
        Value::Array(all) => all
            .iter()
            .map(|s| s.as_str().map_or_else(|| s.to_string(), str::to_string))
            .collect(),
        _ => Vec::new(),
    };
    if !skips.is_empty() {
        if seda_lab::peers::required() {
            problems.push(format!(
                "{name}: skipped with SEDA_REQUIRE_PEERS=1: {}",
                skips.join("; ")
            ));
        } else {
            eprintln!("{name}: skipped ({})", skips.join("; "));
        }
    }
    if skipped.is_string() {
        return checked;
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
            let evidence = format!(
                "loaded ({}); its failed claims, not counted:\n{}",
                why.join("; "),
                failed.join("\n")
            );
            eprintln!("{name}: inconclusive: {evidence}");
            checked.inconclusive = Some(evidence);
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
    checked
}

/// `seda lab run <name> --quick --out <out>`; its exit status.
fn lab_run(name: &str, out: &Path) -> ExitStatus {
    Command::new(env!("CARGO_BIN_EXE_seda"))
        .args(["lab", "run", name, "--quick", "--out"])
        .arg(out)
        .status()
        .expect("run seda lab run")
}

#[test]
fn every_quick_scenario_bears_out_its_papers_claims() {
    // The experiments measure the `seda` users run: unoptimised, the server, the load generator
    // and SQLite are too slow for the experiments to keep their shape.
    if cfg!(debug_assertions) {
        panic!(
            "the lab's scenarios run the release `seda`: run `cargo xtask test` (the README's \
             test command) or `cargo test --release --test lab`"
        );
    }
    // Kept after the run (under target/tmp) so a failure can be read in its report.md.
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("lab-quick");
    let _ = std::fs::remove_dir_all(&dir);
    let names = scenarios();
    assert!(names.contains(&"mail-spike".to_string()));
    let mut statuses = vec![("all", lab_run("all", &dir))];
    let mut problems = Vec::new();
    let mut spoiled = Vec::new();
    for name in &names {
        let checked = check_result(&dir, name);
        problems.extend(checked.problems);
        if let Some(evidence) = checked.inconclusive {
            spoiled.push((name, evidence));
        }
    }
    // A run the machine spoiled says so itself (verdict "loaded: inconclusive", with the
    // evidence) and runs once more; a failure never does: it is a finding, not noise to retry
    // away. Inconclusive twice fails: the machine could not decide the claims.
    let again = dir.join("again");
    if !spoiled.is_empty() {
        // The second run uses the corpora and file sets the first one built.
        std::fs::create_dir_all(&again).expect("create the rerun directory");
        std::os::unix::fs::symlink("../.cache", again.join(".cache")).expect("share the cache");
    }
    for (name, first) in spoiled {
        eprintln!("{name}: inconclusive; running it once more");
        statuses.push((name, lab_run(name, &again)));
        let checked = check_result(&again, name);
        problems.extend(checked.problems);
        if let Some(second) = checked.inconclusive {
            problems.push(format!(
                "{name}: inconclusive twice, the machine was too busy to decide its claims\n\
                 first run: {first}\nsecond run: {second}"
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "claims that did not hold (reports in {}):\n{}",
        dir.display(),
        problems.join("\n")
    );
    for (name, status) in statuses {
        assert!(status.success(), "seda lab run {name} failed ({status})");
    }
}
