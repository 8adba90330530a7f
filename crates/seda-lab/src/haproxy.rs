//! HAProxy in front of a server with `maxconn`: the fixed connection limit WC03 compares its
//! adaptive controller against ("a limit of 128 simultaneous connections").

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use anyhow::{Result, bail};

use crate::child::{Child, free_port};
use crate::lab::Lab;
use crate::peers::Absent;

/// Where HAProxy is installed, if it is.
pub fn binary() -> Option<PathBuf> {
    crate::peers::HAPROXY.find()
}

/// HAProxy, if it is not installed: what a scenario that needs it hands to [`Lab::skip`].
pub fn missing() -> Option<Absent> {
    Absent::unless_installed(&crate::peers::HAPROXY)
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

/// How HAProxy spreads requests over a cluster's replicas.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Balance {
    /// `balance roundrobin`, fixed equal weights.
    RoundRobin,
    /// `balance leastconn`: the replica with the fewest connections in flight.
    LeastConn,
    /// `balance roundrobin` with each replica's weight from its `agent-check` reply.
    AgentWeights,
}

impl Balance {
    /// Its name in results.
    pub fn name(self) -> &'static str {
        match self {
            Balance::RoundRobin => "roundrobin",
            Balance::LeastConn => "leastconn",
            Balance::AgentWeights => "agent_weights",
        }
    }
}

/// One replica behind the balancer: its service address and its agent-check address.
#[derive(Debug, Clone, Copy)]
pub struct Replica {
    /// Where it serves.
    pub addr: SocketAddr,
    /// Where it answers agent checks.
    pub agent: SocketAddr,
}

/// The configuration of a balancer over `replicas`. Sessions live in each replica's memory,
/// so a session sticks to the replica that created it (a stick table keyed on the `sid`
/// cookie the login sets, learnt from the response); only new sessions are balanced, as with
/// any service that keeps sessions locally. A login starts a new session, so it is balanced
/// too, whatever `sid` it still carries: a user whose session was refused logs in again with
/// its old cookie, and stuck to its old replica those logins kept reaching a replica its
/// agent had drained (in the lab's `cluster`, a tenth to a fifth of a poll's new sessions).
fn cluster_config(listen: SocketAddr, replicas: &[Replica], balance: Balance) -> String {
    let algo = match balance {
        Balance::LeastConn => "leastconn",
        Balance::RoundRobin | Balance::AgentWeights => "roundrobin",
    };
    let mut s = format!(
        "global\n    maxconn 9000\n\n\
         defaults\n    mode http\n    timeout connect 5s\n    timeout client 60s\n    \
         timeout server 60s\n    timeout queue 60s\n    timeout check 1s\n    option http-keep-alive\n\n\
         frontend lab\n    bind {listen}\n    default_backend replicas\n\n\
         backend replicas\n    balance {algo}\n    \
         stick-table type string len 64 size 100k expire 30m\n    stick on req.cook(sid) unless {{ path /login }}\n    \
         stick store-response res.cook(sid)\n"
    );
    for (i, r) in replicas.iter().enumerate() {
        s += &format!("    server r{} {} check inter 1s weight 100", i + 1, r.addr);
        if balance == Balance::AgentWeights {
            s += &format!(
                " agent-check agent-addr {} agent-port {} agent-inter 250ms",
                r.agent.ip(),
                r.agent.port()
            );
        }
        s += "\n";
    }
    s
}

impl Haproxy {
    /// Starts HAProxy on the server core, spreading requests over `replicas` by `balance`.
    pub fn start_cluster(
        lab: &Lab,
        name: &str,
        replicas: &[Replica],
        balance: Balance,
    ) -> Result<Haproxy> {
        let Some(bin) = binary() else {
            bail!("HAProxy is not installed (apt-get install haproxy)");
        };
        let addr: SocketAddr = ([127, 0, 0, 1], free_port()?).into();
        let conf = lab.file(&format!("{name}.cfg"));
        std::fs::write(&conf, cluster_config(addr, replicas, balance))?;
        let mut cmd = Command::new(bin);
        cmd.arg("-db").arg("-f").arg(&conf);
        let mut child = lab.spawn(name, &cmd)?;
        child.wait_port(addr, Duration::from_secs(10))?;
        Ok(Haproxy { addr, child })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_weights_add_an_agent_check_per_replica_and_the_others_do_not() {
        let r = |p: u16| Replica {
            addr: ([127, 0, 0, 1], p).into(),
            agent: ([127, 0, 0, 1], p + 1000).into(),
        };
        let replicas = [r(8001), r(8002)];
        let listen = ([127, 0, 0, 1], 9000).into();
        let agent = cluster_config(listen, &replicas, Balance::AgentWeights);
        assert!(agent.contains("balance roundrobin"), "{agent}");
        assert!(agent.contains("server r2 127.0.0.1:8002 check inter 1s weight 100 agent-check agent-addr 127.0.0.1 agent-port 9002"), "{agent}");
        let least = cluster_config(listen, &replicas, Balance::LeastConn);
        assert!(
            least.contains("balance leastconn") && !least.contains("agent-check"),
            "{least}"
        );
        assert!(
            least.contains("stick on req.cook(sid) unless { path /login }"),
            "{least}"
        );
    }
}
