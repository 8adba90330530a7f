//! The README's results block: a short table between `<!-- results:begin -->` and
//! `<!-- results:end -->`, written by `seda lab results --readme`. Nothing outside the markers
//! changes.

use std::fmt::Write as _;

use anyhow::{Result, bail};

use super::{RunDir, ScenarioResult, cell, number, utc};

/// The line that opens the block.
pub const BEGIN: &str = "<!-- results:begin -->";
/// The line that closes it.
pub const END: &str = "<!-- results:end -->";

/// How long a scenario's `about` may be in the README before it is cut at a word.
const ABOUT_CHARS: usize = 60;
/// How long the headline cell may grow to take a second figure: the README stays short.
const HEADLINE_CHARS: usize = 70;

/// `about` without its trailing citation in parentheses, cut at a word near [`ABOUT_CHARS`].
pub fn shorten(about: &str) -> String {
    let mut s = about.trim();
    if s.ends_with(')')
        && let Some(open) = s.rfind(" (")
    {
        s = s[..open].trim_end();
    }
    if s.chars().count() <= ABOUT_CHARS {
        return s.to_string();
    }
    let cut: String = s.chars().take(ABOUT_CHARS).collect();
    let cut = match cut.rfind(' ') {
        Some(i) => &cut[..i],
        None => &cut,
    };
    format!("{}…", cut.trim_end_matches([',', ':', ';']))
}

/// The scenario's first headline figure, and its second where both fit in [`HEADLINE_CHARS`].
fn headline(r: &ScenarioResult) -> String {
    let mut cell = String::new();
    for (path, v) in r.headline_figures().into_iter().take(2) {
        let figure = format!("`{path}` {}", number(v));
        if cell.is_empty() {
            cell = figure;
        } else if cell.chars().count() + 2 + figure.chars().count() <= HEADLINE_CHARS {
            cell = format!("{cell}; {figure}");
        }
    }
    cell
}

fn verdict(r: &ScenarioResult) -> String {
    if r.skipped().is_some() {
        return "skipped (a peer is missing)".to_string();
    }
    match r.verdict.as_str() {
        "pass" => "pass".to_string(),
        "fail" => "**fail**".to_string(),
        _ if r.inconclusive() => "inconclusive (machine loaded)".to_string(),
        v => v.to_string(),
    }
}

/// The block's lines (without the markers), linking to the full page at `page_link`.
pub fn block(run: &RunDir, page_link: &str) -> String {
    let rs = &run.results;
    let first = rs.iter().map(|r| r.started_unix_s).min().unwrap_or(0);
    let quick = rs.iter().filter(|r| r.quick).count();
    let form = match quick {
        n if n == rs.len() => "quick",
        0 => "full",
        _ => "quick and full",
    };
    let builds: Vec<String> = {
        let mut b: Vec<String> = rs.iter().filter_map(|r| r.build.clone()).collect();
        b.sort();
        b.dedup();
        b
    };
    let build = match builds.as_slice() {
        [] => String::new(),
        b => format!(" of the {} build", b.join(" and ")),
    };
    let mut commits: Vec<&str> = rs.iter().filter_map(|r| r.commit.as_deref()).collect();
    commits.sort_unstable();
    commits.dedup();
    let commit = match commits.as_slice() {
        [one] => format!(" at commit `{one}`"),
        _ => String::new(),
    };
    let total = crate::scenarios::all().len();
    let mut s = format!(
        "<!-- Written by `seda lab results --readme`: edits are overwritten. -->\n\n\
         From the {form} form{build}{commit}, run on {} UTC ({} CPUs). ",
        &utc(first)[..10],
        rs.first().map_or(0, |r| r.machine.cpus)
    );
    if rs.len() < total {
        let _ = write!(
            s,
            "This run covered {} of the {total} scenarios; `seda lab run all` runs every one. ",
            rs.len()
        );
    }
    let loaded = rs.iter().filter(|r| r.inconclusive()).count();
    if loaded > 0 {
        let _ = write!(
            s,
            "{loaded} of them ran while other processes loaded the machine: their verdict is \
             *inconclusive* and their figures decide nothing. "
        );
    }
    let _ = write!(
        s,
        "Every claim checked, with the paper's figure beside ours: [{page_link}]({page_link}).\n\n\
         | scenario | what it shows | verdict | headline figures |\n|---|---|---|---|\n"
    );
    for r in rs {
        let _ = writeln!(
            s,
            "| `{}` | {} | {} | {} |",
            r.scenario,
            cell(&shorten(&r.about)),
            verdict(r),
            cell(&headline(r))
        );
    }
    for m in &run.missing {
        let _ = writeln!(s, "| `{m}` | | could not run | |");
    }
    s
}

/// `readme` with the text between its markers replaced by `block`.
///
/// # Errors
///
/// When the markers are missing, out of order, or there twice.
pub fn splice(readme: &str, block: &str) -> Result<String> {
    let (Some(begin), Some(end)) = (readme.find(BEGIN), readme.find(END)) else {
        bail!("no `{BEGIN}` ... `{END}` block: put the two markers where the table belongs");
    };
    if end < begin || readme.matches(BEGIN).count() > 1 || readme.matches(END).count() > 1 {
        bail!("the results markers must appear once each, `{BEGIN}` first");
    }
    let head = &readme[..begin + BEGIN.len()];
    let tail = &readme[end..];
    Ok(format!("{head}\n{}\n{tail}", block.trim_end()))
}

#[cfg(test)]
mod tests {
    use super::super::{RunDir, fixture, write};
    use super::*;

    #[test]
    fn about_loses_its_citation_and_is_cut_at_a_word() {
        assert_eq!(
            shorten("e-mail service under a flash crowd (WC03 Figures 7, 10)"),
            "e-mail service under a flash crowd"
        );
        let long = shorten(
            "P, PI, PD, SEDA's heuristic and hill climbing sizing a pool on emulated-backend \
             plants and the e-mail store on PostgreSQL",
        );
        assert!(
            long.ends_with('…') && long.chars().count() <= ABOUT_CHARS + 1,
            "{long}"
        );
        assert!(!long.contains("PostgreSQL"), "{long}");
    }

    #[test]
    fn the_block_has_a_row_per_scenario_and_links_the_page() {
        let d = fixture::run_dir("block");
        let run = RunDir::read(&d).expect("read");
        let b = block(&run, "docs/results.md");
        let _ = std::fs::remove_dir_all(&d);
        assert!(b.contains(
            "From the quick form of the release build at commit `ee22c88a1b2c`, run on 2026-11-30 UTC"
        ));
        assert!(b.contains("This run covered 3 of the"), "{b}");
        assert!(b.contains("1 of them ran while other processes loaded the machine"));
        assert!(b.contains("[docs/results.md](docs/results.md)"));
        assert!(
            b.contains(
                "| `mail-spike` | e-mail service under a flash crowd: no control vs our… | \
             **fail** | `ours/goodput_fraction_of_capacity` 0.981 |"
            ),
            "{b}"
        );
        assert!(b.contains(
            "| `dynamic-groups` | four groups join | inconclusive (machine loaded) | \
             `self_tuning/p90_x_target` 0.367 |"
        ));
        assert!(b.contains("| `cluster` | HAProxy over 3 replicas | skipped"));
        assert!(b.contains("| `goodput` | | could not run | |"));
    }

    #[test]
    fn only_the_marked_block_changes() {
        let readme = format!("# seda\n\nintro\n\n{BEGIN}\nold table\n{END}\n\n## After\ntext\n");
        let out = splice(&readme, "new table\n").expect("splice");
        assert_eq!(
            out,
            format!("# seda\n\nintro\n\n{BEGIN}\nnew table\n{END}\n\n## After\ntext\n")
        );
        assert_eq!(splice(&out, "new table").expect("again"), out, "idempotent");
        assert!(splice("# no markers\n", "x").is_err());
        assert!(splice(&format!("{END}\n{BEGIN}\n"), "x").is_err());
    }

    #[test]
    fn write_updates_the_readme_with_a_link_to_the_page() {
        let d = fixture::run_dir("readme");
        let readme = d.join("README.md");
        let before = format!("# seda\n\n{BEGIN}\n{END}\n\nThe rest.\n");
        std::fs::write(&readme, &before).expect("write");
        write(&d, Some(&d.join("docs/results.md")), Some(&readme)).expect("results");
        let after = std::fs::read_to_string(&readme).expect("read");
        let _ = std::fs::remove_dir_all(&d);
        assert!(after.starts_with(&format!("# seda\n\n{BEGIN}\n")));
        assert!(after.ends_with(&format!("{END}\n\nThe rest.\n")));
        assert!(
            after.contains("[docs/results.md](docs/results.md)"),
            "{after}"
        );
        assert!(after.contains("| `mail-spike` |"));
    }

    #[test]
    fn a_readme_without_markers_writes_nothing() {
        let d = fixture::run_dir("no-markers");
        let readme = d.join("README.md");
        std::fs::write(&readme, "# seda\n").expect("write");
        assert!(write(&d, None, Some(&readme)).is_err());
        assert!(!d.join("results.md").exists());
        let _ = std::fs::remove_dir_all(&d);
    }
}
