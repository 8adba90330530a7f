//! The programs and services beside Rust that the tests and the lab run against ("peers":
//! nginx, Apache, lighttpd, HAProxy, Chromium and chromedriver, Prometheus, PostgreSQL,
//! MariaDB, gunicorn with psycopg2, curl), and the one function that decides what a missing
//! one means: [`missing`].
//!
//! On a user's machine a peer may be absent: what needs it is skipped, with the reason on
//! stderr and one line in the file `SEDA_SKIP_LOG` names (`cargo xtask test` sets it, and ends
//! with one line naming every skip). CI sets `SEDA_REQUIRE_PEERS=1`: there a missing peer is a
//! failure that names the Debian package to install, never a test that passes having checked
//! nothing.
//!
//! ```no_run
//! // In a test:
//! if seda_peers::HAPROXY.find().is_none() {
//!     seda_peers::skip("proxy test haproxy_weights", &seda_peers::HAPROXY, "not installed");
//!     return;
//! }
//! ```
//!
//! A lab scenario calls [`missing`] and turns its error into the scenario's (so that
//! `seda lab run` fails); `seda_lab::peers` re-exports all of this crate.

#![warn(missing_docs)]

use std::fmt;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// Set to `1`, a missing peer fails what needs it instead of skipping it (`.ci/run` sets it).
pub const REQUIRE_VAR: &str = "SEDA_REQUIRE_PEERS";
/// The file a skip appends its line to, when set (`cargo xtask test` sets it).
pub const SKIP_LOG_VAR: &str = "SEDA_SKIP_LOG";

/// A program or service a test or a scenario needs, and how to get it on Debian.
#[derive(Debug, PartialEq, Eq)]
pub struct Peer {
    /// Its name in messages.
    pub name: &'static str,
    /// The Debian package that provides it.
    pub package: &'static str,
    /// Its program, looked for on `PATH` and in the sbin directories, where it is one.
    pub program: Option<&'static str>,
    /// What it takes beyond installing the package (a server that must be running), or "".
    pub setup: &'static str,
}

impl Peer {
    /// Where its program is installed, if it is (`None` for a service without one).
    pub fn find(&self) -> Option<PathBuf> {
        self.program.and_then(find_binary)
    }
}

impl fmt::Display for Peer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)
    }
}

/// nginx (`seda_lab::peers::nginx`, the static-file comparison, `seda-load`'s tests).
pub const NGINX: Peer = program("nginx", "nginx-light", "nginx");
/// Apache with `mpm_prefork` (the static-file comparison).
pub const APACHE: Peer = program("Apache", "apache2", "apache2");
/// lighttpd (the static-file comparison).
pub const LIGHTTPD: Peer = program("lighttpd", "lighttpd", "lighttpd");
/// HAProxy (a fixed connection limit in front of a service; the cluster's balancer).
pub const HAPROXY: Peer = program("HAProxy", "haproxy", "haproxy");
/// Headless Chromium (the dashboard in a real browser).
pub const CHROMIUM: Peer = program("Chromium", "chromium", "chromium");
/// chromedriver, Chromium's WebDriver server.
pub const CHROMEDRIVER: Peer = program("chromedriver", "chromium-driver", "chromedriver");
/// The Prometheus server (scrapes `/metrics`).
pub const PROMETHEUS: Peer = program("Prometheus", "prometheus", "prometheus");
/// promtool, Prometheus's checker of the exposition format.
pub const PROMTOOL: Peer = program("promtool", "prometheus", "promtool");
/// gunicorn (a stock Python service behind the proxy).
pub const GUNICORN: Peer = program("gunicorn", "gunicorn", "gunicorn");
/// psycopg2, for gunicorn's Python to reach PostgreSQL.
pub const PSYCOPG2: Peer = service("psycopg2", "python3-psycopg2", "");
/// curl built with HTTP/2 (Debian's is), the h2c client.
pub const CURL: Peer = program("curl", "curl", "curl");
/// PostgreSQL, running where the tests and the lab look for it.
pub const POSTGRESQL: Peer = service(
    "PostgreSQL",
    "postgresql",
    ", running on 127.0.0.1:5432 with a database `test` that user postgres reaches without a \
     password",
);
/// MariaDB, running where the tests look for it.
pub const MARIADB: Peer = service(
    "MariaDB",
    "mariadb-server",
    ", running on 127.0.0.1:3306 with a database `test` that user root reaches without a \
     password",
);

/// Every peer (`.ci/packages` must list each one's package).
pub const ALL: [&Peer; 13] = [
    &NGINX,
    &APACHE,
    &LIGHTTPD,
    &HAPROXY,
    &CHROMIUM,
    &CHROMEDRIVER,
    &PROMETHEUS,
    &PROMTOOL,
    &GUNICORN,
    &PSYCOPG2,
    &CURL,
    &POSTGRESQL,
    &MARIADB,
];

/// A peer that is a program on `PATH` and needs nothing beyond its package.
const fn program(name: &'static str, package: &'static str, program: &'static str) -> Peer {
    Peer {
        name,
        package,
        program: Some(program),
        setup: "",
    }
}

/// A peer without a program of its own to find (a library, or a server that must be running):
/// `setup` says what it takes beyond the package.
const fn service(name: &'static str, package: &'static str, setup: &'static str) -> Peer {
    Peer {
        name,
        package,
        program: None,
        setup,
    }
}

/// The database server behind a store's name as the mail tests spell it (`postgres`,
/// `mysql`).
///
/// # Panics
///
/// For any other name.
pub fn database(name: &str) -> &'static Peer {
    match name {
        "postgres" | "postgresql" => &POSTGRESQL,
        "mysql" | "mariadb" => &MARIADB,
        other => panic!("no database peer called {other:?}"),
    }
}

/// Finds `name` on `PATH`, then in the sbin directories (which a non-root `PATH` often lacks).
pub fn find_binary(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let sbin = ["/usr/sbin", "/usr/local/sbin", "/sbin"].map(PathBuf::from);
    std::env::split_paths(&path)
        .chain(sbin)
        .map(|dir| dir.join(name))
        .find(|p| {
            p.metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// Whether `SEDA_REQUIRE_PEERS=1`: a missing peer is then a failure.
pub fn required() -> bool {
    std::env::var(REQUIRE_VAR).is_ok_and(|v| v == "1")
}

/// A peer that was required (`SEDA_REQUIRE_PEERS=1`) and is missing: what needed it, and
/// what to install.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Required {
    /// What needed it: a test or a scenario.
    pub what: String,
    /// The peer.
    pub peer: &'static Peer,
    /// Why it cannot be used here.
    pub why: String,
}

impl fmt::Display for Required {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Required { what, peer, why } = self;
        write!(
            f,
            "{what} needs {peer}, which is missing here ({why}), and {REQUIRE_VAR}=1 requires \
             it: apt-get install {}{}",
            peer.package, peer.setup
        )
    }
}

impl std::error::Error for Required {}

/// What a test or a scenario that needs `peer` must do when it is missing (`why`: not
/// installed, not answering...). `what` names the test or scenario.
///
/// With `SEDA_REQUIRE_PEERS=1` it returns the failure, naming the Debian package to install.
/// Otherwise the caller skips: one line, `<what>: <peer> (<why>)`, is appended to the file
/// `SEDA_SKIP_LOG` names (where set) and the reason goes to stderr.
///
/// # Errors
///
/// [`Required`] when `SEDA_REQUIRE_PEERS=1`: fail, do not skip.
pub fn missing(what: &str, peer: &'static Peer, why: &str) -> Result<(), Required> {
    let log = std::env::var_os(SKIP_LOG_VAR).map(PathBuf::from);
    decide(what, peer, why, required(), log.as_deref())
}

/// [`missing`] for a test: returns (the test then returns, skipped) or panics when peers are
/// required.
///
/// # Panics
///
/// When `SEDA_REQUIRE_PEERS=1`, with the message of [`Required`].
#[track_caller]
pub fn skip(what: &str, peer: &'static Peer, why: &str) {
    if let Err(e) = missing(what, peer, why) {
        panic!("{e}");
    }
}

fn decide(
    what: &str,
    peer: &'static Peer,
    why: &str,
    required: bool,
    log: Option<&Path>,
) -> Result<(), Required> {
    // One line each: the skip log is read line by line.
    let one_line = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let (what, why) = (one_line(what), one_line(why));
    if required {
        return Err(Required { what, peer, why });
    }
    // Not "skipped: ...": that is how `cargo xtask test`'s last line begins.
    eprintln!(
        "skipping {what}: {peer} is missing ({why}); apt-get install {}{} to run it",
        peer.package, peer.setup
    );
    let line = format!("{what}: {peer} ({why})");
    if let Some(path) = log {
        // One write of a whole line to a file opened for appending: lines from tests running
        // at once do not interleave.
        let appended = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .and_then(|mut f| f.write_all(format!("{line}\n").as_bytes()));
        if let Err(e) = appended {
            eprintln!("cannot append to {} ({SKIP_LOG_VAR}): {e}", path.display());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_log(tag: &str) -> PathBuf {
        let p = std::env::temp_dir().join(format!("seda-peers-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_file(&p);
        p
    }

    #[test]
    fn a_skip_appends_one_line_per_call() {
        let log = temp_log("skip");
        decide("test a", &HAPROXY, "not installed", false, Some(&log)).unwrap();
        decide(
            "test b",
            &POSTGRESQL,
            "connection\nrefused",
            false,
            Some(&log),
        )
        .unwrap();
        let text = std::fs::read_to_string(&log).unwrap();
        assert_eq!(
            text,
            "test a: HAProxy (not installed)\ntest b: PostgreSQL (connection refused)\n"
        );
        let _ = std::fs::remove_file(&log);
    }

    #[test]
    fn a_required_peer_fails_naming_its_package_and_logs_nothing() {
        let log = temp_log("required");
        let e = decide("lab cluster", &HAPROXY, "not installed", true, Some(&log)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "lab cluster needs HAProxy, which is missing here (not installed), and \
             SEDA_REQUIRE_PEERS=1 requires it: apt-get install haproxy"
        );
        assert!(!log.exists(), "a failure is not a skip");
        let e = decide("mail", &MARIADB, "refused", true, None).unwrap_err();
        assert!(
            e.to_string()
                .contains("apt-get install mariadb-server, running on")
        );
    }

    #[test]
    fn ci_installs_every_peers_package() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../.ci/packages");
        let text = std::fs::read_to_string(path).expect(".ci/packages");
        let listed: Vec<&str> = text.split_whitespace().collect();
        for peer in ALL {
            assert!(
                listed.contains(&peer.package),
                ".ci/packages lacks {} ({peer})",
                peer.package
            );
        }
    }

    #[test]
    fn programs_are_found_on_path_or_in_sbin() {
        assert!(find_binary("sh").is_some());
        assert!(find_binary("no-such-program-anywhere").is_none());
        assert!(POSTGRESQL.find().is_none(), "a service has no program");
        assert_eq!(database("mysql"), &MARIADB);
    }
}
