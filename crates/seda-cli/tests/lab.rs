//! Runs every lab scenario in its quick form, as CI does, and checks each `result.json`: the
//! papers' qualitative claims (checked by the scenario with tolerances a noisy two-core machine
//! meets), the summary's key names, and that the plots and report were written.

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
    assert!(
        r["summary"].as_object().is_some_and(|s| !s.is_empty()),
        "{name}: empty summary"
    );
    let checks = r["checks"].as_array().expect("checks");
    assert!(!checks.is_empty(), "{name}: no claims checked");
    for c in checks {
        if c["passed"] != true && c["enforced"] != false {
            problems.push(format!("{name}: {} ({})", c["claim"], c["detail"]));
        }
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

fn run(args: &[&str], dir: &Path) -> bool {
    Command::new(env!("CARGO_BIN_EXE_seda"))
        .args(args)
        .arg("--out")
        .arg(dir)
        .status()
        .expect("run seda lab run")
        .success()
}

#[test]
fn every_quick_scenario_bears_out_its_papers_claims() {
    // Kept after the run (under target/tmp) so a failure can be read in its report.md.
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("lab-quick");
    let _ = std::fs::remove_dir_all(&dir);
    let names = scenarios();
    assert!(names.contains(&"mail-spike".to_string()));
    run(&["lab", "run", "all", "--quick"], &dir);
    let mut problems = Vec::new();
    for name in &names {
        let first = check_result(&dir, name);
        if first.is_empty() {
            continue;
        }
        // A scenario whose claims failed runs once more: on a shared two-core machine a stall
        // of a few seconds (another program, disk writeback) can spoil one short run. The
        // claims must hold on the second run; the first run's failures are printed.
        eprintln!(
            "{name} failed its claims once, running it again:\n{}",
            first.join("\n")
        );
        run(&["lab", "run", name, "--quick"], &dir);
        problems.extend(check_result(&dir, name));
    }
    assert!(
        problems.is_empty(),
        "claims that did not hold twice (reports in {}):\n{}",
        dir.display(),
        problems.join("\n")
    );
}
