//! `index.html` after `seda lab run all`: one page linking every scenario's report, result and
//! plots, with whether its claims held, so a whole run can be read from one place.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// One scenario's line on the index.
#[derive(Debug, Clone)]
pub struct IndexEntry {
    /// Scenario name (its directory under the output directory).
    pub name: String,
    /// "all claims hold", "some claims do not hold", or why it could not run.
    pub status: String,
    /// Whether it passed.
    pub passed: bool,
    /// Wall-clock seconds it took.
    pub elapsed_s: f64,
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The PNG plots in `dir`, by name.
fn plots(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter_map(|e| e.file_name().into_string().ok())
                .filter(|n| n.ends_with(".png"))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Writes `<out>/index.html` for `entries`; returns its path.
pub fn write_index(out: &Path, entries: &[IndexEntry]) -> Result<PathBuf> {
    let mut html = String::from(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>seda lab</title>\n\
         <style>body{font:14px system-ui,sans-serif;margin:1.5em}td,th{padding:4px 8px;\
         text-align:left;vertical-align:top}.ok{color:#2a7a2a}.no{color:#b00020}\
         img{height:120px;margin:2px;border:1px solid #ddd}</style></head><body>\n\
         <h1>seda lab</h1>\n<table><tr><th>scenario</th><th>claims</th><th>time</th>\
         <th>files</th><th>plots</th></tr>\n",
    );
    for e in entries {
        let name = escape(&e.name);
        let dir = out.join(&e.name);
        let _ = write!(
            html,
            "<tr><td><a href=\"{name}/report.md\">{name}</a></td><td class=\"{}\">{}</td>\
             <td>{:.0} s</td><td>",
            if e.passed { "ok" } else { "no" },
            escape(&e.status),
            e.elapsed_s
        );
        for f in ["report.md", "result.json"] {
            if dir.join(f).is_file() {
                let _ = write!(html, "<a href=\"{name}/{f}\">{f}</a> ");
            }
        }
        html += "</td><td>";
        for p in plots(&dir) {
            let p = escape(&p);
            let _ = write!(
                html,
                "<a href=\"{name}/{p}\"><img src=\"{name}/{p}\" alt=\"{p}\"></a>"
            );
        }
        html += "</td></tr>\n";
    }
    html += "</table></body></html>\n";
    let path = out.join("index.html");
    std::fs::write(&path, html).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_every_scenario_its_files_and_plots() {
        let out = std::env::temp_dir().join(format!("seda-lab-index-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&out);
        std::fs::create_dir_all(out.join("a")).expect("dir");
        std::fs::write(out.join("a/report.md"), "r").expect("write");
        std::fs::write(out.join("a/spike.png"), "p").expect("write");
        let entries = [
            IndexEntry {
                name: "a".into(),
                status: "all claims hold".into(),
                passed: true,
                elapsed_s: 3.0,
            },
            IndexEntry {
                name: "b".into(),
                status: "could not run: <nginx> missing".into(),
                passed: false,
                elapsed_s: 0.0,
            },
        ];
        let path = write_index(&out, &entries).expect("index");
        let html = std::fs::read_to_string(path).expect("read");
        assert!(html.contains("href=\"a/report.md\""));
        assert!(html.contains("src=\"a/spike.png\""));
        assert!(!html.contains("a/result.json"), "only files that exist");
        assert!(html.contains("&lt;nginx&gt;"), "escaped");
        assert!(html.contains("class=\"no\""));
        let _ = std::fs::remove_dir_all(&out);
    }
}
