//! HAProxy in front of a server with `maxconn`: the fixed connection limit WC03 compares its
//! adaptive controller against ("a limit of 128 simultaneous connections").

use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use anyhow::{Result, bail};

use crate::child::{Child, free_port};
use crate::lab::Lab;

/// Where HAProxy is installed, if it is.
pub fn binary() -> Option<&'static Path> {
    [
        "/usr/sbin/haproxy",
        "/usr/bin/haproxy",
        "/usr/local/sbin/haproxy",
    ]
    .into_iter()
    .map(Path::new)
    .find(|p| p.exists())
}

/// A running HAProxy.
#[derive(Debug)]
pub struct Haproxy {
    /// Where clients connect.
    pub addr: SocketAddr,
    /// The process (stopped on drop).
    pub child: Child,
}

/// The configuration: at most `maxconn` client connections are accepted; beyond it the kernel's
/// accept queue (also `maxconn` long) fills and further SYNs go unanswered, so clients wait in
/// TCP's retransmission backoff, as the paper's clients did.
fn config(listen: SocketAddr, backend: SocketAddr, maxconn: usize) -> String {
    format!(
        "global\n    maxconn 9000\n\n\
         defaults\n    mode http\n    timeout connect 5s\n    timeout client 60s\n    \
         timeout server 60s\n    timeout queue 60s\n    option http-keep-alive\n\n\
         frontend lab\n    bind {listen}\n    maxconn {maxconn}\n    default_backend service\n\n\
         backend service\n    server s1 {backend}\n"
    )
}

impl Haproxy {
    /// Starts HAProxy on the server core, forwarding to `backend` with `maxconn` client
    /// connections at most.
    pub fn start(lab: &Lab, name: &str, backend: SocketAddr, maxconn: usize) -> Result<Haproxy> {
        let Some(bin) = binary() else {
            bail!("HAProxy is not installed (apt-get install haproxy)");
        };
        let addr: SocketAddr = ([127, 0, 0, 1], free_port()?).into();
        let conf = lab.file(&format!("{name}.cfg"));
        std::fs::write(&conf, config(addr, backend, maxconn))?;
        let mut cmd = Command::new(bin);
        cmd.arg("-db").arg("-f").arg(&conf);
        let mut child = lab.spawn(name, &cmd)?;
        child.wait_port(addr, Duration::from_secs(10))?;
        Ok(Haproxy { addr, child })
    }
}
