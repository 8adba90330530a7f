//! Where a result came from: the build (release or debug) and the git commit, written into
//! each `result.json`. Its own module because both the scenario runner and the outcome writer
//! stamp them, and the results page only reads them back.

use std::process::Command;

/// The build this program is, written to each `result.json` as `build`.
pub const BUILD: &str = if cfg!(debug_assertions) {
    "debug"
} else {
    "release"
};

/// The commit of the git checkout in the current directory (12 hex digits, `-dirty` when
/// tracked files changed), or `None` when `git rev-parse` does not work here.
pub fn git_commit() -> Option<String> {
    let out = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let mut commit = String::from_utf8(out.stdout).ok()?.trim().to_string();
    if commit.is_empty() {
        return None;
    }
    let dirty = Command::new("git")
        .args(["status", "--porcelain", "--untracked-files=no"])
        .output()
        .is_ok_and(|o| o.status.success() && !o.stdout.is_empty());
    if dirty {
        commit += "-dirty";
    }
    Some(commit)
}
