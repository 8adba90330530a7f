//! `results.md`: when and on what the run ran, one row per claim across every scenario, the
//! known shortfalls, and a summary per scenario.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use super::{RunDir, ScenarioResult, cell, number, utc};
use crate::outcome::Check;

/// A claim's verdict on the page: *held*, **FAILED**, *observed (not enforced)*, *known
/// shortfall*, or *scenario inconclusive* when the machine was loaded during the scenario.
pub fn verdict(check: &Check, scenario: &ScenarioResult) -> String {
    let own = match (check.passed, check.enforced, check.shortfall) {
        (true, true, _) => "held",
        (true, false, false) => "held (observed)",
        (true, false, true) => "held (a known shortfall, met this run)",
        (false, true, _) => "**FAILED**",
        (false, false, false) => "did not hold: observed (not enforced)",
        (false, false, true) => "known shortfall",
    };
    if scenario.inconclusive() {
        format!("scenario inconclusive ({})", own.replace("**", ""))
    } else {
        own.to_string()
    }
}

/// A scenario's verdict on the page.
pub fn scenario_verdict(r: &ScenarioResult) -> String {
    if let Some(why) = r.skipped() {
        return format!("skipped: {why}");
    }
    match r.verdict.as_str() {
        "pass" => "pass".to_string(),
        "fail" => "**FAIL**".to_string(),
        v if r.inconclusive() => match r.loaded_loads() {
            (0, _, _) => v.to_string(),
            (n, of, why) => format!(
                "inconclusive: {n} of {of} loads ran on a loaded machine; the first: {}",
                why.join("; ")
            ),
        },
        "" => "no verdict recorded".to_string(),
        v => v.to_string(),
    }
}

/// Distinct values of `f` over the results, in first-seen order.
fn distinct(run: &RunDir, f: impl Fn(&ScenarioResult) -> String) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for r in &run.results {
        let x = f(r);
        if !v.contains(&x) {
            v.push(x);
        }
    }
    v
}

/// The distinct values the results recorded of a field (`commit`, `build`), and how many
/// results recorded none.
fn recorded(run: &RunDir, f: impl Fn(&ScenarioResult) -> Option<String>) -> (Vec<String>, usize) {
    let mut values: Vec<String> = Vec::new();
    for v in run.results.iter().filter_map(&f) {
        if !values.contains(&v) {
            values.push(v);
        }
    }
    let none = run.results.iter().filter(|r| f(r).is_none()).count();
    (values, none)
}

/// " (N result(s) recorded none)" when some did not.
fn unrecorded(none: usize) -> String {
    match none {
        0 => String::new(),
        n => format!(" ({n} result(s) recorded none)"),
    }
}

fn scenario_cell(r: &ScenarioResult, links: bool) -> String {
    if links {
        format!("[`{0}`]({0}/report.md)", r.scenario)
    } else {
        format!("`{}`", r.scenario)
    }
}

/// One claim's row of a table: scenario, claim, paper, ours, then `last` (the verdict).
fn claim_row(s: &mut String, r: &ScenarioResult, c: &Check, links: bool, last: &str) {
    let _ = writeln!(
        s,
        "| {} | {} | {} | {} | {last} |",
        scenario_cell(r, links),
        cell(&c.claim),
        cell(c.paper.as_deref().unwrap_or("")),
        cell(&c.detail),
    );
}

/// The page for `run`. With `links`, scenario names link to their `report.md` (the page sits
/// in the output directory); `commit_now` is the checkout's commit, named only when the results
/// recorded none of their own.
pub fn render(run: &RunDir, links: bool, commit_now: Option<&str>) -> String {
    let rs = &run.results;
    let mut s = String::from(
        "# Lab results\n\n<!-- Written by `seda lab results`: edits are overwritten. -->\n\n",
    );
    s += "Each scenario of `seda lab` reproduces an experiment of the papers on this \
          machine and checks the papers' claims against what it measured. This page lists \
          every claim of one run directory, from each scenario's `result.json`: the paper's \
          figure where the claim states one, ours, and the verdict. Every figure here is one a \
          scenario measured and wrote; `seda lab results DIR` writes the page again.\n\n";

    s += &about_run(run, commit_now);

    // Every claim.
    let checks: Vec<(&ScenarioResult, &Check)> = rs
        .iter()
        .flat_map(|r| r.checks.iter().map(move |c| (r, c)))
        .collect();
    let held = checks
        .iter()
        .filter(|(_, c)| c.passed && c.enforced)
        .count();
    let enforced = checks.iter().filter(|(_, c)| c.enforced).count();
    let loaded = checks
        .iter()
        .filter(|(r, c)| c.enforced && r.inconclusive())
        .count();
    let loaded = match loaded {
        0 => String::new(),
        n => format!(" ({n} of them in scenarios the machine's load made inconclusive)"),
    };
    let _ = write!(
        s,
        "## Claims\n\n{held} of {enforced} enforced claims held{loaded}. A claim *held*, or \
         **FAILED** (it is enforced: the scenario fails); *observed (not enforced)* is a claim \
         a short run cannot decide either way, reported and never failing a run; a *known \
         shortfall* is a goal not met yet (listed again below); *scenario inconclusive*: the \
         machine was loaded during the scenario, so none of its claims decides anything.\n\n\
         | scenario | claim | paper | ours | verdict |\n|---|---|---|---|---|\n"
    );
    for (r, c) in &checks {
        claim_row(&mut s, r, c, links, &verdict(c, r));
    }
    if checks.is_empty() {
        s += "| | no scenario checked a claim | | | |\n";
    }

    // Known shortfalls.
    s += "\n## Known shortfalls\n\nGoals the code does not meet yet: checked and reported in \
          every run, never failing one.\n\n";
    let short: Vec<&(&ScenarioResult, &Check)> =
        checks.iter().filter(|(_, c)| c.shortfall).collect();
    if short.is_empty() {
        s += "None in this run.\n";
    } else {
        s += "| scenario | goal | paper | ours | this run |\n|---|---|---|---|---|\n";
        for (r, c) in short {
            claim_row(
                &mut s,
                r,
                c,
                links,
                if c.passed { "met" } else { "not met" },
            );
        }
    }

    s += &scenarios_table(run, links);
    s
}

/// The page's opening list: when the run ran, on which code and machine, in which form, and
/// how its scenarios ended.
fn about_run(run: &RunDir, commit_now: Option<&str>) -> String {
    let rs = &run.results;
    let mut s = String::new();
    let first = rs.iter().map(|r| r.started_unix_s).min().unwrap_or(0);
    let last = rs
        .iter()
        .map(|r| r.started_unix_s + r.elapsed_s.max(0.0) as u64)
        .max()
        .unwrap_or(0);
    let total_s: f64 = rs.iter().map(|r| r.elapsed_s).sum();
    let (from, to) = (utc(first), utc(last));
    let to = match to.split_once(' ') {
        Some((day, time)) if from.starts_with(day) => time.to_string(),
        _ => to,
    };
    let _ = writeln!(
        s,
        "- **Ran**: {from} to {to} UTC, {} scenario(s), {:.0} min of runs",
        rs.len(),
        total_s / 60.0
    );
    let (commits, no_commit) = recorded(run, |r| r.commit.clone());
    let commit = match (commits.as_slice(), commit_now) {
        ([], Some(now)) => format!(
            "commit not recorded by these results (the checkout is at `{now}` as this page is \
             written)"
        ),
        ([], None) => "commit not recorded".to_string(),
        (v, _) => format!("commit `{}`{}", v.join("`, `"), unrecorded(no_commit)),
    };
    let (builds, no_build) = recorded(run, |r| r.build.clone());
    let build = match builds.as_slice() {
        [] => "build not recorded".to_string(),
        v => format!("{} build{}", v.join(" and "), unrecorded(no_build)),
    };
    let _ = writeln!(
        s,
        "- **Code**: {commit}; {build}; seda {}",
        distinct(run, |r| r.machine.seda_version.clone()).join(", ")
    );
    let machines = distinct(run, |r| {
        let m = &r.machine;
        format!(
            "`{}`, {}, {} CPUs, {:.1} GiB, Linux {}",
            m.host,
            m.cpu_name(),
            m.cpus,
            m.memory_gib,
            m.kernel
        )
    });
    let loads: Vec<f64> = rs.iter().map(|r| r.machine.load_average_1m).collect();
    let lo = loads.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = loads.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let load = if hi - lo < 0.005 {
        format!("{lo:.2}")
    } else {
        format!("{lo:.2}-{hi:.2}")
    };
    let _ = writeln!(
        s,
        "- **Machine**: {}; load average at each scenario's start {load}",
        machines.join("; ")
    );
    let quick: Vec<&str> = rs
        .iter()
        .filter(|r| r.quick)
        .map(|r| r.scenario.as_str())
        .collect();
    let form = match quick.len() {
        n if n == rs.len() => "quick (each scenario about a minute, as the tests run it)".into(),
        0 => "full (the papers' durations)".to_string(),
        _ => format!("mixed: quick for {}, full for the rest", quick.join(", ")),
    };
    let _ = writeln!(s, "- **Form**: {form}");
    let skipped = rs.iter().filter(|r| r.skipped().is_some()).count();
    let passed = rs
        .iter()
        .filter(|r| r.verdict == "pass" && r.skipped().is_none())
        .count();
    let _ = write!(
        s,
        "- **Scenarios**: {passed} passed, {} failed, {} inconclusive (the machine was \
         loaded), {skipped} skipped for a missing peer",
        rs.iter().filter(|r| r.verdict == "fail").count(),
        rs.iter().filter(|r| r.inconclusive()).count(),
    );
    if !run.missing.is_empty() {
        let _ = write!(
            s,
            "; no `result.json` (could not run): {}",
            run.missing.join(", ")
        );
    }
    let ran: BTreeSet<&str> = rs.iter().map(|r| r.scenario.as_str()).collect();
    let absent = crate::scenarios::all()
        .iter()
        .filter(|sc| !ran.contains(sc.name()) && !run.missing.iter().any(|m| m == sc.name()))
        .count();
    if absent > 0 {
        let _ = write!(
            s,
            "; {absent} of `seda lab list`'s {} not in this run",
            crate::scenarios::all().len()
        );
    }
    s += "\n\n";

    s
}

/// One row a scenario: what it reproduces, its verdict and its headline figures.
fn scenarios_table(run: &RunDir, links: bool) -> String {
    let rs = &run.results;
    let mut s = String::new();
    s += "\n## Scenarios\n\n| scenario | reproduces | verdict | elapsed | headline figures |\n\
          |---|---|---|---|---|\n";
    for r in rs {
        let figures: Vec<String> = r
            .headline_figures()
            .into_iter()
            .map(|(path, v)| format!("`{}` {}", cell(&path), number(v)))
            .collect();
        let _ = writeln!(
            s,
            "| {} | {} | {} | {:.0} s | {} |",
            scenario_cell(r, links),
            cell(&r.paper),
            cell(&scenario_verdict(r)),
            r.elapsed_s,
            figures.join("<br>")
        );
    }
    for m in &run.missing {
        let _ = writeln!(s, "| `{m}` | | no `result.json`: it could not run | | |");
    }
    if links {
        s += "\nEach scenario's `report.md` (linked above) sets its figures beside the paper's, \
              with its plots and the machine's health during each load.\n";
    } else {
        s += "\nEach scenario's `report.md`, beside its `result.json` and plots in the run \
              directory, sets its figures beside the paper's, with its plots and the machine's \
              health during each load.\n";
    }
    s
}

#[cfg(test)]
mod tests {
    use super::super::{RunDir, fixture, write};
    use super::*;

    fn rendered(test: &str, links: bool) -> String {
        let d = fixture::run_dir(test);
        let run = RunDir::read(&d).expect("read");
        let page = render(&run, links, None);
        let _ = std::fs::remove_dir_all(&d);
        page
    }

    #[test]
    fn the_page_says_when_and_on_what() {
        let page = rendered("header", true);
        assert!(
            page.contains("- **Ran**: 2026-11-30 00:53 to 00:56 UTC"),
            "{page}"
        );
        assert!(
            page.contains(
                "- **Code**: commit `ee22c88a1b2c` (1 result(s) recorded none); \
             release build (1 result(s) recorded none); seda 0.1.0"
            ),
            "{page}"
        );
        assert!(
            page.contains("`lab1`, Test CPU, 2 CPUs, 7.8 GiB, Linux 6.1.0"),
            "{page}"
        );
        assert!(page.contains("- **Form**: quick"), "{page}");
        assert!(
            page.contains("0 passed, 1 failed, 1 inconclusive"),
            "{page}"
        );
        assert!(page.contains("1 skipped"), "{page}");
        assert!(
            page.contains("no `result.json` (could not run): goodput"),
            "{page}"
        );
    }

    #[test]
    fn one_row_per_claim_with_its_verdict() {
        let page = rendered("claims", true);
        let row = |claim: &str| {
            page.lines()
                .find(|l| l.starts_with('|') && l.contains(claim))
                .unwrap_or_else(|| panic!("no row for {claim}:\n{page}"))
                .to_string()
        };
        assert_eq!(
            row("p90 stays near"),
            "| [`mail-spike`](mail-spike/report.md) | p90 stays near the target | \
             WC03 Fig. 10: p90 ~1 s | ours 0.339 s \\| target 0.5 s | held |"
        );
        assert!(row("rejects the excess").ends_with("| **FAILED** |"));
        assert!(row("ours leads").ends_with("| did not hold: observed (not enforced) |"));
        assert!(row("p90 within 1.1").ends_with("| scenario inconclusive (FAILED) |"));
        assert!(
            page.contains("1 of 3 enforced claims held (1 of them in scenarios"),
            "{page}"
        );
        // Every table row has as many cells as its header: an unescaped `|` would add one.
        for l in page.lines().filter(|l| l.starts_with("| ")) {
            assert_eq!(l.replace("\\|", "").matches('|').count(), 6, "{l}");
        }
    }

    #[test]
    fn shortfalls_have_their_own_section() {
        let page = rendered("shortfall", false);
        let section = page
            .split("## Known shortfalls")
            .nth(1)
            .and_then(|s| s.split("## Scenarios").next())
            .expect("section");
        assert!(section.contains(
            "| `mail-spike` | PostgreSQL within 5% of the best pool |  | 0.93 of it | not met |"
        ));
        assert!(!section.contains("rejects the excess"));
        assert!(
            !page.contains("report.md)"),
            "no links when the page leaves the run dir"
        );
    }

    #[test]
    fn each_scenario_is_summed_up_with_its_headline() {
        let page = rendered("summary", true);
        assert!(
            page.contains(
                "| [`mail-spike`](mail-spike/report.md) | WC03 Figures 7, 10 | **FAIL** | 52 s | \
             `ours/goodput_fraction_of_capacity` 0.981<br>`ours/within_target_of_admitted` \
             not measured |"
            ),
            "{page}"
        );
        assert!(page.contains(
            "inconclusive: 1 of 2 loads ran on a loaded machine; the first: the hypervisor took 36%"
        ));
        assert!(page.contains("skipped: haproxy is not installed"));
        assert!(page.contains("| `goodput` | | no `result.json`: it could not run | | |"));
    }

    #[test]
    fn write_puts_the_page_in_the_run_dir_and_where_asked() {
        let d = fixture::run_dir("write");
        let docs = d.join("docs/results.md");
        let written = write(&d, Some(&docs), None).expect("write");
        assert_eq!(written, [d.join("results.md"), docs.clone()]);
        let own = std::fs::read_to_string(d.join("results.md")).expect("read");
        let copy = std::fs::read_to_string(&docs).expect("read");
        assert!(own.contains("(mail-spike/report.md)") && !copy.contains("report.md)"));
        let _ = std::fs::remove_dir_all(&d);
    }
}
