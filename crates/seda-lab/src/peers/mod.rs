//! Launchers for the web servers the lab compares: our `seda serve static`, nginx, Apache
//! (`mpm_prefork` with a fixed pool of 150 processes, as in SOSP'01) and lighttpd.
//!
//! Each launcher writes a complete config file into a work directory and returns a
//! [`Command`](std::process::Command) ready to spawn: the server runs in the foreground on `127.0.0.1:<port>`, serves
//! the given document root, and writes its logs, pid file and temp files under the work
//! directory. No system config, pid file or log is read or touched.
//!
//! The peers themselves and what a missing one means come from `seda_peers`, re-exported here:
//! [`missing`] (a scenario's skip, or with `SEDA_REQUIRE_PEERS=1` its failure; through
//! [`crate::Lab::skip`]) and [`skip`] (a test's).
//!
//! ```no_run
//! use std::path::Path;
//! use seda_lab::peers;
//!
//! let cmd = peers::nginx::command(Path::new("/tmp/www"), 8081, Path::new("/tmp/nginx-run"));
//! match cmd {
//!     Ok(mut cmd) => { let _child = cmd.spawn(); }
//!     Err(e) => eprintln!("skipping nginx: {e}"), // "nginx is not installed: apt-get install nginx-light"
//! }
//! ```
//!
//! # Stopping
//!
//! Stop a server with SIGTERM to the spawned pid (what [`crate::Child`] does): the parent stops
//! its workers. Not SIGKILL: nginx's worker and Apache's 150 processes were seen to go on
//! serving on the port after their parent was killed. Apache's parent signals its whole process
//! group when it stops, so its command gives it a session of its own (see [`apache`]).
//!
//! # Privileges
//!
//! Run as root, nginx and Apache drop their workers to `www-data` (Apache refuses to serve as
//! root), so the document root must be readable by others; the launchers check this and say
//! so. lighttpd stays the invoking user: it opens its error log after dropping privileges, so
//! it could not write into a work directory the invoking user created.

pub mod apache;
pub mod gunicorn;
pub mod lighttpd;
pub mod nginx;
pub mod seda;

use std::fmt;
use std::io;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Why a server cannot be launched.
#[derive(Debug)]
pub enum PeerError {
    /// The server's binary is not on `PATH` nor in the sbin directories.
    NotInstalled {
        /// The server's name.
        server: &'static str,
        /// The Debian package that provides it.
        package: &'static str,
    },
    /// A path cannot be written into a config file (it holds a quote, a backslash, `$` or a
    /// line break) or is not valid UTF-8.
    BadPath(PathBuf),
    /// The document root cannot be read by the unprivileged user the workers run as.
    Unreadable {
        /// The server's name.
        server: &'static str,
        /// The directory that lacks the permission.
        path: PathBuf,
    },
    /// Writing the config file or creating the work directory failed.
    Io {
        /// What was being done.
        what: String,
        /// The error.
        source: io::Error,
    },
}

impl fmt::Display for PeerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PeerError::NotInstalled { server, package } => {
                write!(f, "{server} is not installed: apt-get install {package}")
            }
            PeerError::BadPath(p) => write!(
                f,
                "the path {} cannot go into a server's config file: use a UTF-8 path without \
                 quotes, backslashes, '$' or line breaks",
                p.display()
            ),
            PeerError::Unreadable { server, path } => write!(
                f,
                "{server}'s workers run as www-data and cannot read {}: serve a directory \
                 readable by others (for example under /tmp)",
                path.display()
            ),
            PeerError::Io { what, source } => write!(f, "cannot {what}: {source}"),
        }
    }
}

impl std::error::Error for PeerError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            PeerError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

pub use seda_peers::{
    ALL, APACHE, CHROMEDRIVER, CHROMIUM, CURL, GUNICORN, HAPROXY, LIGHTTPD, MARIADB, NGINX,
    POSTGRESQL, PROMETHEUS, PROMTOOL, PSYCOPG2, Peer, Required, find_binary, missing, required,
    skip,
};

/// A peer a scenario needs that cannot be used here, and why: what a scenario hands to
/// [`crate::Lab::skip`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Absent {
    /// The peer.
    pub peer: &'static Peer,
    /// Why it cannot be used ("not installed", "nothing listens on ...").
    pub why: String,
}

impl Absent {
    /// `peer` cannot be used, for `why`.
    pub fn new(peer: &'static Peer, why: impl Into<String>) -> Absent {
        Absent {
            peer,
            why: why.into(),
        }
    }

    /// `peer`, where launching it failed with [`PeerError::NotInstalled`]: its program (or,
    /// for Apache, a module) is not installed.
    pub fn from_error(peer: &'static Peer, e: &PeerError) -> Option<Absent> {
        match e {
            PeerError::NotInstalled { server, .. } if *server == peer.name => {
                Some(Absent::new(peer, "not installed"))
            }
            PeerError::NotInstalled { server, .. } => {
                Some(Absent::new(peer, format!("{server} is not installed")))
            }
            _ => None,
        }
    }

    /// `peer`, where its program is not installed.
    pub fn unless_installed(peer: &'static Peer) -> Option<Absent> {
        peer.find()
            .is_none()
            .then(|| Absent::new(peer, "not installed"))
    }
}

impl fmt::Display for Absent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Absent { peer, why } = self;
        write!(
            f,
            "{peer}: {why} (apt-get install {}{})",
            peer.package, peer.setup
        )
    }
}

/// The binary of `peer`, or [`PeerError::NotInstalled`].
fn require(peer: &'static Peer) -> Result<PathBuf, PeerError> {
    peer.find().ok_or(PeerError::NotInstalled {
        server: peer.name,
        package: peer.package,
    })
}

/// An absolute, UTF-8 path that is safe inside a double-quoted config string.
fn config_path(p: &Path) -> Result<String, PeerError> {
    let abs = std::path::absolute(p).map_err(|source| PeerError::Io {
        what: format!("resolve {}", p.display()),
        source,
    })?;
    match abs.to_str() {
        Some(s) if !s.contains(['"', '\\', '$', '\n', '\r']) => Ok(s.to_string()),
        _ => Err(PeerError::BadPath(p.to_path_buf())),
    }
}

/// Creates `dir` (and `dir/logs`) and writes `file` into it; returns the file's path.
fn write_config(dir: &Path, file: &str, text: &str) -> Result<PathBuf, PeerError> {
    let io = |what: String| move |source| PeerError::Io { what, source };
    let logs = dir.join("logs");
    std::fs::create_dir_all(&logs).map_err(io(format!("create {}", logs.display())))?;
    let path = dir.join(file);
    std::fs::write(&path, text).map_err(io(format!("write {}", path.display())))?;
    Ok(path)
}

/// Whether this process runs as root (the owner of `/proc/self` is the effective user).
fn running_as_root() -> bool {
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

/// Run as root, workers run as `www-data`: every ancestor of `root` must let others through
/// and `root` itself must let them list it. (Files are checked by the server when served.)
fn check_others_can_read(server: &'static str, root: &Path) -> Result<(), PeerError> {
    if !running_as_root() {
        return Ok(());
    }
    let root = std::path::absolute(root).unwrap_or_else(|_| root.to_path_buf());
    for dir in root.ancestors() {
        let needed = if dir == root { 0o005 } else { 0o001 };
        let mode = std::fs::metadata(dir).map(|m| m.permissions().mode());
        if mode.is_ok_and(|m| m & needed != needed) {
            return Err(PeerError::Unreadable {
                server,
                path: dir.to_path_buf(),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_paths_refuse_characters_that_break_configs() {
        assert!(config_path(Path::new("/tmp/www")).is_ok());
        assert!(matches!(
            config_path(Path::new("/tmp/w\"ww")),
            Err(PeerError::BadPath(_))
        ));
        assert!(matches!(
            config_path(Path::new("/tmp/$root")),
            Err(PeerError::BadPath(_))
        ));
        assert!(config_path(Path::new("relative")).unwrap().starts_with('/'));
    }

    #[test]
    fn a_missing_binary_says_how_to_install_it() {
        const NOWHERE: Peer = Peer {
            program: Some("no-such-server-binary"),
            ..NGINX
        };
        let e = require(&NOWHERE).unwrap_err();
        assert_eq!(
            e.to_string(),
            "nginx is not installed: apt-get install nginx-light"
        );
    }
}
