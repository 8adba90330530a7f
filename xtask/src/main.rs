//! The project's own commands: `cargo xtask <task>` (the alias is in `.cargo/config.toml`).
//!
//! `cargo xtask test [ARGS...]` is the README's test command and what CI runs: every test of
//! the workspace in release (so the lab's scenarios run the release `seda`, as users run it),
//! then one line naming what was skipped for want of a peer (nginx, HAProxy, PostgreSQL...).
//! Tests and scenarios record their skips through `seda_peers::missing` into the file
//! `SEDA_SKIP_LOG` names, which this sets to a fresh file under the target directory.

use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, ExitStatus};

const USAGE: &str = "usage: cargo xtask test [ARGS...]

  test    cargo test --workspace --release [ARGS...], then one last line naming each peer
          whose absence skipped a test or lab scenario: `skipped: none`, or
          `skipped: N for want of a peer: <peer> xK (<why>), ...; each one in <log>`.
          Exits with cargo's status.
          With SEDA_REQUIRE_PEERS=1 (as in CI) a missing peer fails what needs it instead.";

fn main() -> ExitCode {
    let mut args = std::env::args_os().skip(1);
    match args.next().as_ref().and_then(|a| a.to_str()) {
        Some("test") => test(args.collect()),
        Some("help" | "-h" | "--help") => {
            println!("{USAGE}");
            ExitCode::SUCCESS
        }
        Some(other) => {
            eprintln!("xtask: no task `{other}`\n\n{USAGE}");
            ExitCode::from(2)
        }
        None => {
            eprintln!("{USAGE}");
            ExitCode::from(2)
        }
    }
}

/// `cargo test --workspace --release ARGS`, with a fresh skip log, then its summary line.
fn test(args: Vec<OsString>) -> ExitCode {
    let log = target_dir().join("seda-skipped.log");
    let fresh = std::fs::create_dir_all(target_dir()).and_then(|()| std::fs::write(&log, ""));
    if let Err(e) = fresh {
        eprintln!("xtask: cannot create the skip log {}: {e}", log.display());
        return ExitCode::FAILURE;
    }
    // The cargo that runs us (`cargo xtask` sets CARGO), so that a toolchain override holds.
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = Command::new(&cargo)
        .args(["test", "--workspace", "--release"])
        .args(&args)
        .env("SEDA_SKIP_LOG", &log)
        .status();
    let status = match status {
        Ok(s) => s,
        Err(e) => {
            eprintln!(
                "xtask: cannot run {}: {e} (is Rust's cargo installed and on PATH?)",
                cargo.to_string_lossy()
            );
            return ExitCode::FAILURE;
        }
    };
    match std::fs::read_to_string(&log) {
        Ok(text) => println!("{}", skip_line(&text, &log)),
        Err(e) => println!("skipped: unknown (cannot read {}: {e})", log.display()),
    }
    ExitCode::from(exit_code(status))
}

/// Where cargo builds: `CARGO_TARGET_DIR`, or the workspace's `target/`.
fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target"),
    }
}

/// The last line: `skipped: none`, or each missing peer with how many tests and scenarios it
/// kept from running and the first reason given, in the order they were met, then where the
/// whole list is (`log`: one line per skip, `WHAT: PEER (WHY)`). A line of every skip in full
/// ran to 6,000 characters on a machine with only Rust, most of it one database error
/// repeated.
fn skip_line(text: &str, log: &Path) -> String {
    let mut peers: Vec<(&str, &str, Vec<&str>)> = Vec::new();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let (what, peer, why) = split_skip(line);
        match peers.iter_mut().find(|(p, _, _)| *p == peer) {
            Some((_, _, whats)) if !whats.contains(&what) => whats.push(what),
            Some(_) => {}
            None => peers.push((peer, why, vec![what])),
        }
    }
    if peers.is_empty() {
        return "skipped: none".to_string();
    }
    let total: usize = peers.iter().map(|(_, _, w)| w.len()).sum();
    let each: Vec<String> = peers
        .iter()
        .map(|(peer, why, whats)| format!("{peer} x{} ({})", whats.len(), short(why)))
        .collect();
    format!(
        "skipped: {total} for want of a peer: {}; each one in {}",
        each.join(", "),
        log.display()
    )
}

/// `WHAT: PEER (WHY)` as its parts: the peer is the first word after a `": "` that a `" ("`
/// follows (a peer's name has no space; WHAT and WHY may hold colons and brackets). A line
/// of another shape is its own peer.
fn split_skip(line: &str) -> (&str, &str, &str) {
    for (at, _) in line.match_indices(": ") {
        let rest = &line[at + 2..];
        let Some(space) = rest.find(' ') else {
            continue;
        };
        if let Some(why) = rest[space..].strip_prefix(" (") {
            let why = why.strip_suffix(')').unwrap_or(why);
            return (&line[..at], &rest[..space], why);
        }
    }
    (line, line, "")
}

/// A reason cut to its first 60 characters.
fn short(why: &str) -> String {
    match why.char_indices().nth(60) {
        Some((at, _)) => format!("{}...", &why[..at]),
        None => why.to_string(),
    }
}

/// Cargo's exit status as ours (a signal as a shell reports it, 128 + its number).
fn exit_code(status: ExitStatus) -> u8 {
    let code = status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(1);
    u8::try_from(code).unwrap_or(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_counts_each_peers_skips_once_in_order() {
        let log = Path::new("target/seda-skipped.log");
        assert_eq!(skip_line("", log), "skipped: none");
        assert_eq!(skip_line("\n  \n", log), "skipped: none");
        let text = "lab cluster: HAProxy (not installed)\n\
                    seda-mail soak: MariaDB (cannot connect to mysql://root@127.0.0.1:3306/test: \
                    DriverError { Connection refused (os error 111) })\n\
                    lab cluster: HAProxy (not installed)\n\
                    seda-cli test metrics (promtool): promtool (not installed)\n\
                    lab proxy-spike: HAProxy (not installed)\n";
        assert_eq!(
            skip_line(text, log),
            "skipped: 4 for want of a peer: HAProxy x2 (not installed), MariaDB x1 (cannot \
             connect to mysql://root@127.0.0.1:3306/test: DriverEr...), promtool x1 \
             (not installed); each one in target/seda-skipped.log"
        );
    }

    #[test]
    fn a_skip_splits_at_the_peer_whatever_its_parts_hold() {
        assert_eq!(
            split_skip("seda-cli test m (promtool): promtool (no: (really))"),
            ("seda-cli test m (promtool)", "promtool", "no: (really)")
        );
        assert_eq!(split_skip("odd line"), ("odd line", "odd line", ""));
    }

    #[test]
    fn cargos_status_is_ours() {
        let status = |raw| ExitStatus::from_raw(raw);
        assert_eq!(exit_code(status(0)), 0);
        assert_eq!(exit_code(status(101 << 8)), 101);
        assert_eq!(exit_code(status(9)), 137, "SIGKILL");
    }
}
