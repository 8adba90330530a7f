//! The project's own commands: `cargo xtask <task>` (the alias is in `.cargo/config.toml`).
//!
//! `cargo xtask test [ARGS...]` is the README's test command and what CI runs: every test of
//! the workspace in release (so the lab's scenarios run the release `seda`, as users run it),
//! then one line naming what was skipped for want of a peer (nginx, HAProxy, PostgreSQL...).
//! Tests and scenarios record their skips through `seda_peers::missing` into the file
//! `SEDA_SKIP_LOG` names, which this sets to a fresh file under the target directory.

use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{Command, ExitCode, ExitStatus};

const USAGE: &str = "usage: cargo xtask test [ARGS...]

  test    cargo test --workspace --release [ARGS...], then one last line naming every test
          or lab scenario skipped for want of a peer: `skipped: none`, or
          `skipped: <what>: <peer> (<why>); ...`. Exits with cargo's status.
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
        Ok(text) => println!("{}", skip_line(&text)),
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

/// The last line: `skipped: none`, or each distinct line of the skip log, in order, joined by
/// "; ".
fn skip_line(log: &str) -> String {
    let mut seen: Vec<&str> = Vec::new();
    for line in log.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if !seen.contains(&line) {
            seen.push(line);
        }
    }
    if seen.is_empty() {
        "skipped: none".to_string()
    } else {
        format!("skipped: {}", seen.join("; "))
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
    fn the_line_names_each_skip_once_in_order() {
        assert_eq!(skip_line(""), "skipped: none");
        assert_eq!(skip_line("\n  \n"), "skipped: none");
        let log = "lab cluster: HAProxy (not installed)\n\
                   seda-mail soak: MariaDB (refused)\n\
                   lab cluster: HAProxy (not installed)\n";
        assert_eq!(
            skip_line(log),
            "skipped: lab cluster: HAProxy (not installed); seda-mail soak: MariaDB (refused)"
        );
    }

    #[test]
    fn cargos_status_is_ours() {
        let status = |raw| ExitStatus::from_raw(raw);
        assert_eq!(exit_code(status(0)), 0);
        assert_eq!(exit_code(status(101 << 8)), 101);
        assert_eq!(exit_code(status(9)), 137, "SIGKILL");
    }
}
