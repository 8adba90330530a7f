//! The results page: every claim of a run's `result.json` files on one Markdown page
//! (`results.md`), and the short table the README carries between its markers.
//!
//! `seda lab run` writes `<out>/results.md` after its scenarios; `seda lab results <out>`
//! writes it again from the `result.json` files alone, and with `--page` and `--readme` also
//! the repository's `docs/results.md` and the README's block ([`readme::splice`]). Nothing on
//! either is typed by hand: each figure is one a scenario measured and wrote.

use std::path::{Component, Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::machine::Machine;
use crate::outcome::Check;
use crate::provenance::git_commit;

pub mod page;
pub mod readme;

/// One scenario's `result.json`, as far as the page reads it. Fields a `result.json` written
/// before they existed lacks read as empty.
#[derive(Debug, Clone, Deserialize)]
pub struct ScenarioResult {
    /// Scenario name.
    pub scenario: String,
    /// One line: what it shows.
    #[serde(default)]
    pub about: String,
    /// The figures of the papers it reproduces.
    #[serde(default)]
    pub paper: String,
    /// Quick form (else full).
    #[serde(default)]
    pub quick: bool,
    /// When it started, seconds since the Unix epoch.
    #[serde(default)]
    pub started_unix_s: u64,
    /// Wall-clock seconds it took.
    #[serde(default)]
    pub elapsed_s: f64,
    /// The machine it ran on.
    #[serde(default)]
    pub machine: Machine,
    /// The checkout's commit when it ran (`None`: not a git checkout, or not recorded).
    #[serde(default)]
    pub commit: Option<String>,
    /// `release` or `debug` (`None`: not recorded).
    #[serde(default)]
    pub build: Option<String>,
    /// Headline figures by path (`null`: not measured).
    #[serde(default)]
    pub headline: Map<String, Value>,
    /// The claims, checked.
    #[serde(default)]
    pub checks: Vec<Check>,
    /// `pass`, `fail` or `loaded: inconclusive`.
    #[serde(default)]
    pub verdict: String,
    /// The configuration; `skipped` says why a scenario checked nothing.
    #[serde(default)]
    pub config: Value,
    /// The machine's watch; `loads[].loaded_because` says why a run was inconclusive.
    #[serde(default)]
    pub health: Value,
}

impl ScenarioResult {
    /// Why the scenario checked nothing (a peer this machine lacks), if it did not.
    pub fn skipped(&self) -> Option<&str> {
        self.config.get("skipped").and_then(Value::as_str)
    }

    /// Whether the machine was loaded during it: its claims then decide nothing.
    pub fn inconclusive(&self) -> bool {
        self.verdict.starts_with("loaded")
    }

    /// How many of the scenario's loads the watch found loaded, of how many, and the first
    /// loaded one's reasons (the others usually repeat them with other percentages).
    pub fn loaded_loads(&self) -> (usize, usize, Vec<String>) {
        let loads = self.health.get("loads").and_then(Value::as_array);
        let reasons = |load: &Value| -> Vec<String> {
            let why = load.get("loaded_because").and_then(Value::as_array);
            why.into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        };
        let all: Vec<Vec<String>> = loads.into_iter().flatten().map(reasons).collect();
        let loaded: Vec<&Vec<String>> = all.iter().filter(|w| !w.is_empty()).collect();
        let first = loaded.first().map(|w| w.to_vec()).unwrap_or_default();
        (loaded.len(), all.len(), first)
    }

    /// The headline figures in the order the scenario declares them (the JSON object's keys
    /// come back sorted), then any it no longer declares.
    pub fn headline_figures(&self) -> Vec<(String, Option<f64>)> {
        let declared = crate::scenarios::find(&self.scenario).map_or(&[][..], |s| s.headline());
        let mut paths: Vec<&str> = declared
            .iter()
            .copied()
            .filter(|p| self.headline.contains_key(*p))
            .collect();
        for k in self.headline.keys() {
            if !paths.contains(&k.as_str()) {
                paths.push(k);
            }
        }
        paths
            .into_iter()
            .map(|p| (p.to_string(), self.headline.get(p).and_then(Value::as_f64)))
            .collect()
    }
}

/// The `result.json` files of one output directory.
#[derive(Debug, Clone)]
pub struct RunDir {
    /// The output directory.
    pub dir: PathBuf,
    /// Each scenario's result, in `seda lab list`'s order (names it does not know last).
    pub results: Vec<ScenarioResult>,
    /// Scenarios with a directory here but no `result.json`: they could not run (or still run).
    pub missing: Vec<String>,
}

impl RunDir {
    /// Reads every `<dir>/<scenario>/result.json`, each replaced by
    /// `<dir>/again/<scenario>/result.json` where the lab test ran it once more.
    ///
    /// # Errors
    ///
    /// When `dir` cannot be read, holds no `result.json`, or one of them is not a result.
    pub fn read(dir: &Path) -> Result<RunDir> {
        let entries = std::fs::read_dir(dir).with_context(|| {
            format!(
                "cannot read {}: give the --out directory of a `seda lab run`",
                dir.display()
            )
        })?;
        let mut results = Vec::new();
        let mut missing = Vec::new();
        for e in entries {
            let e = e.with_context(|| format!("cannot read {}", dir.display()))?;
            if !e.path().is_dir() {
                continue;
            }
            let path = e.path().join("result.json");
            match std::fs::read_to_string(&path) {
                Ok(text) => {
                    let r: ScenarioResult = serde_json::from_str(&text)
                        .with_context(|| format!("{} is not a lab result", path.display()))?;
                    results.push(r);
                }
                Err(_) => {
                    let name = e.file_name().to_string_lossy().into_owned();
                    if crate::scenarios::find(&name).is_ok() {
                        missing.push(name);
                    }
                }
            }
        }
        // The lab test runs an inconclusive scenario once more into `<dir>/again`: that
        // rerun, where it wrote a result, is the scenario's result.
        if let Ok(again) = RunDir::read(&dir.join("again")) {
            for rerun in again.results {
                results.retain(|r| r.scenario != rerun.scenario);
                missing.retain(|m| *m != rerun.scenario);
                results.push(rerun);
            }
        }
        if results.is_empty() {
            bail!(
                "no result.json under {}: run `seda lab run NAME --out {}` first",
                dir.display(),
                dir.display()
            );
        }
        let rank = |name: &str| {
            let all = crate::scenarios::all();
            all.iter()
                .position(|s| s.name() == name)
                .unwrap_or(all.len())
        };
        results.sort_by(|a, b| {
            (rank(&a.scenario), &a.scenario).cmp(&(rank(&b.scenario), &b.scenario))
        });
        missing.sort_by_key(|n| rank(n));
        Ok(RunDir {
            dir: dir.to_path_buf(),
            results,
            missing,
        })
    }
}

/// Writes `<out>/results.md` from the `result.json` files in `out`; with `page`, the same page
/// there too (without links into `out`, which a repository does not hold), and with `readme`,
/// that file's results block, linking to `page` (or to `<out>/results.md`). Returns the paths
/// written.
///
/// # Errors
///
/// When `out` holds no results, `readme` has no results block, or a file cannot be written.
pub fn write(out: &Path, page: Option<&Path>, readme: Option<&Path>) -> Result<Vec<PathBuf>> {
    let run = RunDir::read(out)?;
    let commit_now = git_commit();
    let own = out.join("results.md");
    // The README first: a file without the markers writes nothing.
    let readme = match readme {
        Some(r) => {
            let text = std::fs::read_to_string(r)
                .with_context(|| format!("cannot read {}", r.display()))?;
            let base = r.parent().unwrap_or(Path::new(""));
            let link = relative(base, page.unwrap_or(&own));
            let text = readme::splice(&text, &readme::block(&run, &link))
                .with_context(|| format!("cannot update {}", r.display()))?;
            Some((r, text))
        }
        None => None,
    };
    let mut written = Vec::new();
    write_file(&own, &page::render(&run, true, commit_now.as_deref()))?;
    written.push(own);
    if let Some(p) = page {
        write_file(p, &page::render(&run, false, commit_now.as_deref()))?;
        written.push(p.to_path_buf());
    }
    if let Some((r, text)) = readme {
        write_file(r, &text)?;
        written.push(r.to_path_buf());
    }
    Ok(written)
}

fn write_file(path: &Path, text: &str) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
}

/// `to` as a link from a file in `from_dir` (`/` between components); `to` itself when the two
/// share no root (one absolute, one relative).
fn relative(from_dir: &Path, to: &Path) -> String {
    let abs = |p: &Path| {
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            std::env::current_dir().unwrap_or_default().join(p)
        }
    };
    let norm = |p: PathBuf| -> Vec<String> {
        let mut v: Vec<String> = Vec::new();
        for c in p.components() {
            match c {
                Component::ParentDir => {
                    v.pop();
                }
                Component::Normal(s) => v.push(s.to_string_lossy().into_owned()),
                _ => {}
            }
        }
        v
    };
    let (from, to_c) = (norm(abs(from_dir)), norm(abs(to)));
    let common = from.iter().zip(&to_c).take_while(|(a, b)| a == b).count();
    let mut parts: Vec<String> = vec!["..".to_string(); from.len() - common];
    parts.extend(to_c[common..].iter().cloned());
    if parts.is_empty() {
        return to.display().to_string();
    }
    parts.join("/")
}

/// A Markdown table cell: `|` escaped, lines joined.
pub(crate) fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace(['\n', '\r'], " ")
}

/// A figure as the page prints it: three decimals below 10, fewer above.
pub(crate) fn number(v: Option<f64>) -> String {
    match v {
        None => "not measured".to_string(),
        Some(x) if x.abs() >= 100.0 => format!("{x:.0}"),
        Some(x) if x.abs() >= 10.0 => format!("{x:.1}"),
        Some(x) => format!("{x:.3}"),
    }
}

/// `unix_s` as `YYYY-MM-DD HH:MM` (UTC).
pub(crate) fn utc(unix_s: u64) -> String {
    seda_mail::html::date(i64::try_from(unix_s).unwrap_or(i64::MAX))
}

/// A fixture for the page's and the README block's tests: an output directory with the
/// `result.json` files of three scenarios (one with a failed, an observed and a shortfall
/// claim, one loaded, one skipped), and a directory without one.
#[cfg(test)]
pub(crate) mod fixture {
    use std::path::PathBuf;

    use serde_json::json;

    /// A fresh directory under the system's temporary one, named for the test.
    pub fn dir(test: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("seda-results-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).expect("create fixture dir");
        d
    }

    /// Writes the fixture into a fresh directory; returns it.
    pub fn run_dir(test: &str) -> PathBuf {
        let d = dir(test);
        let machine = json!({"host": "lab1", "cpus": 2, "cpu_model": "Test CPU", "memory_gib": 7.8,
            "kernel": "6.1.0", "load_average_1m": 0.25, "seda_version": "0.1.0"});
        let results = [
            json!({
                "scenario": "mail-spike",
                "about": "e-mail service under a flash crowd: no control vs our per-stage \
                          controller vs a 128-connection limit (WC03 Figures 7, 10)",
                "paper": "WC03 Figures 7, 10", "quick": true,
                "started_unix_s": 1_796_000_000u64, "elapsed_s": 52.4,
                "machine": machine, "commit": "ee22c88a1b2c", "build": "release",
                "headline": {"ours/goodput_fraction_of_capacity": 0.9812,
                             "ours/within_target_of_admitted": null},
                "checks": [
                    {"claim": "p90 stays near the target", "passed": true,
                     "detail": "ours 0.339 s | target 0.5 s", "enforced": true,
                     "paper": "WC03 Fig. 10: p90 ~1 s"},
                    {"claim": "rejects the excess", "passed": false,
                     "detail": "rejected 0.01", "enforced": true},
                    {"claim": "ours leads every peer", "passed": false,
                     "detail": "Vegas 0.99 against 0.96", "enforced": false},
                    {"claim": "PostgreSQL within 5% of the best pool", "passed": false,
                     "detail": "0.93 of it", "enforced": false, "shortfall": true}
                ],
                "passed": false, "verdict": "fail", "config": {},
            }),
            json!({
                "scenario": "dynamic-groups", "about": "four groups join", "paper": "FAIR07",
                "quick": true, "started_unix_s": 1_796_000_100u64, "elapsed_s": 40.0,
                "machine": machine, "commit": "ee22c88a1b2c", "build": "release",
                "headline": {"self_tuning/p90_x_target": 0.367},
                "checks": [{"claim": "p90 within 1.1 x the target", "passed": false,
                            "detail": "1.4 x", "enforced": true}],
                "passed": false, "verdict": "loaded: inconclusive", "config": {},
                "health": {"loads": [{"loaded_because": []},
                                     {"loaded_because": ["the hypervisor took 36%"]}]},
            }),
            json!({
                "scenario": "cluster", "about": "HAProxy over 3 replicas", "paper": "",
                "quick": true, "started_unix_s": 1_796_000_200u64, "elapsed_s": 0.5,
                "machine": machine, "headline": {}, "checks": [], "passed": true,
                "verdict": "pass", "config": {"skipped": "haproxy is not installed"},
            }),
        ];
        for r in results {
            let name = r["scenario"].as_str().expect("name").to_string();
            std::fs::create_dir_all(d.join(&name)).expect("create");
            std::fs::write(d.join(name).join("result.json"), r.to_string()).expect("write");
        }
        std::fs::create_dir_all(d.join("goodput")).expect("create");
        std::fs::create_dir_all(d.join(".cache")).expect("create");
        d
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_results_in_list_order_and_names_the_missing() {
        let d = fixture::run_dir("read");
        let run = RunDir::read(&d).expect("read");
        let names: Vec<&str> = run.results.iter().map(|r| r.scenario.as_str()).collect();
        assert_eq!(names, ["mail-spike", "cluster", "dynamic-groups"]);
        assert_eq!(
            run.missing,
            ["goodput"],
            "a known scenario's dir without result.json"
        );
        let spike = &run.results[0];
        assert!(spike.checks[0].paper.is_some() && spike.checks[3].shortfall);
        assert!(!spike.checks[3].enforced);
        assert_eq!(spike.headline_figures()[0].1, Some(0.9812));
        assert_eq!(run.results[1].skipped(), Some("haproxy is not installed"));
        let (loaded, loads, why) = run.results[2].loaded_loads();
        assert_eq!((loaded, loads), (1, 2));
        assert_eq!(why, ["the hypervisor took 36%"]);
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_rerun_in_again_replaces_the_first_run() {
        let d = fixture::run_dir("again");
        let rerun = d.join("again").join("dynamic-groups");
        std::fs::create_dir_all(&rerun).expect("create");
        let first = std::fs::read_to_string(d.join("dynamic-groups").join("result.json"));
        let mut r: Value = serde_json::from_str(&first.expect("first run")).expect("json");
        r["verdict"] = "pass".into();
        r["checks"][0]["passed"] = true.into();
        std::fs::write(rerun.join("result.json"), r.to_string()).expect("write");
        let run = RunDir::read(&d).expect("read");
        let names: Vec<&str> = run.results.iter().map(|r| r.scenario.as_str()).collect();
        assert_eq!(
            names,
            ["mail-spike", "cluster", "dynamic-groups"],
            "no duplicate"
        );
        assert_eq!(run.results[2].verdict, "pass", "the rerun's result");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn an_empty_directory_is_an_error_that_says_what_to_run() {
        let d = fixture::dir("empty");
        let e = RunDir::read(&d).expect_err("no results");
        assert!(format!("{e:#}").contains("seda lab run"), "{e:#}");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn dates_are_utc() {
        assert_eq!(utc(0), "1970-01-01 00:00");
        assert_eq!(utc(951_782_400), "2000-02-29 00:00");
        assert_eq!(utc(1_796_000_000), "2026-11-30 00:53");
    }

    #[test]
    fn links_are_relative_to_the_readme() {
        let base = Path::new("/repo");
        assert_eq!(
            relative(base, Path::new("/repo/docs/results.md")),
            "docs/results.md"
        );
        assert_eq!(
            relative(Path::new("/repo/docs"), Path::new("/repo/x.md")),
            "../x.md"
        );
        assert_eq!(
            relative(Path::new(""), Path::new("docs/results.md")),
            "docs/results.md"
        );
    }

    #[test]
    fn cells_escape_pipes() {
        assert_eq!(cell("a | b\nc"), "a \\| b c");
        assert_eq!(number(Some(46_050.2)), "46050");
        assert_eq!(number(Some(0.98123)), "0.981");
        assert_eq!(number(None), "not measured");
    }

    #[test]
    fn checks_keep_their_json_shape() {
        let enforced = serde_json::to_value(Check::new("c", true, "d")).expect("json");
        assert_eq!(enforced["enforced"], true);
        assert!(enforced.get("shortfall").is_none() && enforced.get("paper").is_none());
        let short = Check::shortfall("c", false, "d").paper("WC03 Fig. 10: p90 ~1 s");
        let v = serde_json::to_value(&short).expect("json");
        assert_eq!(v["enforced"], false);
        assert_eq!(v["shortfall"], true);
        assert_eq!(v["paper"], "WC03 Fig. 10: p90 ~1 s");
        assert_eq!(short.kind(), "known shortfall");
        assert_eq!(Check::observed("c", false, "d").kind(), "observed");
    }
}
