//! The four servers of the sweep, each started once as a pinned child process.

use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use anyhow::Result;

use crate::child::{Child, free_port};
use crate::lab::Lab;
use crate::peers::{self, Absent, Peer, PeerError, seda::SedaSettings};

/// A server under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Server {
    /// `seda serve static` (the seeds' Haboob).
    Seda,
    /// nginx, one worker: the single-process event-driven design (the paper's Flash).
    Nginx,
    /// Apache `mpm_prefork`, a fixed pool of 150 processes (the paper's Apache).
    Apache,
    /// lighttpd, one process: another single-process event-driven server.
    Lighttpd,
}

impl Server {
    /// In the order they run: ours first, so a broken build fails before the peers' time is
    /// spent.
    pub const ALL: [Server; 4] = [
        Server::Seda,
        Server::Nginx,
        Server::Apache,
        Server::Lighttpd,
    ];

    /// The name in results, plots and summary keys.
    pub fn name(self) -> &'static str {
        match self {
            Server::Seda => "seda",
            Server::Nginx => "nginx",
            Server::Apache => "apache",
            Server::Lighttpd => "lighttpd",
        }
    }

    /// The peer it is, for every server but ours.
    pub fn peer(self) -> Option<&'static Peer> {
        match self {
            Server::Seda => None,
            Server::Nginx => Some(&peers::NGINX),
            Server::Apache => Some(&peers::APACHE),
            Server::Lighttpd => Some(&peers::LIGHTTPD),
        }
    }

    /// How it is configured, for `result.json` and the report.
    pub fn describe(self) -> &'static str {
        match self {
            Server::Seda => {
                "seda serve static: 1 front-end thread, 200 MB page cache (Haboob's), backlog 4096"
            }
            Server::Nginx => "nginx: 1 worker process, sendfile, backlog 4096",
            Server::Apache => {
                "Apache mpm_prefork: fixed pool of 150 processes, KeepAlive On, sendfile, \
                 backlog 4096"
            }
            Server::Lighttpd => "lighttpd: 1 process, sendfile, backlog 4096",
        }
    }

    /// The command that starts it, with its config written under `work_dir`; a peer that is not
    /// installed (or cannot read `root`) gives the reason to skip it.
    pub fn command(
        self,
        lab: &Lab,
        root: &Path,
        port: u16,
        work_dir: &Path,
    ) -> Result<Command, PeerError> {
        match self {
            Server::Seda => peers::seda::command(
                &lab.seda_bin,
                root,
                port,
                work_dir,
                &SedaSettings::default(),
            ),
            Server::Nginx => peers::nginx::command(root, port, work_dir),
            Server::Apache => peers::apache::command(root, port, work_dir),
            Server::Lighttpd => peers::lighttpd::command(root, port, work_dir),
        }
    }
}

/// A started server.
#[derive(Debug)]
pub struct Running {
    /// Where it listens.
    pub addr: SocketAddr,
    /// The process (stopped with SIGTERM on drop; each server's parent stops its workers).
    pub child: Child,
}

/// Why a server did not run.
pub enum NotRun {
    /// A peer that is not installed: skipped, or a failure where peers are required
    /// ([`Lab::skip`]).
    Missing(Absent),
    /// A peer that cannot be configured here: skip it and say why.
    Skip(String),
    /// Installed but it failed to start: an error for our server, a recorded failure for a peer.
    Failed(anyhow::Error),
}

/// Starts `server` serving `root`, pinned to the server core, and waits until it listens.
pub fn start(lab: &Lab, server: Server, root: &Path) -> Result<Running, NotRun> {
    let port = free_port().map_err(NotRun::Failed)?;
    let work_dir = lab.file(server.name());
    let cmd = server.command(lab, root, port, &work_dir).map_err(|e| {
        match server.peer().and_then(|peer| Absent::from_error(peer, &e)) {
            Some(absent) => NotRun::Missing(absent),
            None if matches!(e, PeerError::Unreadable { .. }) => NotRun::Skip(e.to_string()),
            None => NotRun::Failed(e.into()),
        }
    })?;
    let mut child = lab.spawn(server.name(), &cmd).map_err(NotRun::Failed)?;
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    // Apache forks its 150 processes at start; 20 s is ample on a loaded machine.
    child
        .wait_port(addr, Duration::from_secs(20))
        .map_err(NotRun::Failed)?;
    Ok(Running { addr, child })
}
