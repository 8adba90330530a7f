//! HAProxy's `agent-check` on its own port: each connection gets one line from a server's
//! admission state ([`seda_control::AgentPolicy`]) and is closed. The proxy answers it from
//! its routes; `seda serve mail --agent` from its stages.
//!
//! ```text
//! server r1 127.0.0.1:8080 check agent-check agent-port 9080 agent-inter 500ms weight 100
//! ```

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use seda_control::AgentPolicy;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;

use crate::RouteStats;

/// What the agent reads at each poll: cumulative counts of requests admitted and rejected by
/// the server's admission control, and its concurrency limit when its controller has one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AdmissionCounts {
    /// Requests admitted so far.
    pub admitted: u64,
    /// Requests rejected so far.
    pub rejected: u64,
    /// The controller's current concurrency limit (`maxconn:N` in the reply).
    pub limit: Option<u64>,
}

impl AdmissionCounts {
    /// The proxy's counts: the sums over its routes with admission control.
    pub fn of_routes(routes: &[RouteStats]) -> Self {
        routes.iter().filter_map(|r| r.admission.as_ref()).fold(
            AdmissionCounts::default(),
            |c, s| AdmissionCounts {
                admitted: c.admitted + s.admitted,
                rejected: c.rejected + s.rejected.iter().map(|(_, n)| n).sum::<u64>(),
                limit: None,
            },
        )
    }
}

/// Answers agent checks on `listener` until the task is dropped, from what `read` returns.
pub async fn serve_agent(
    listener: TcpListener,
    read: impl Fn() -> AdmissionCounts + Send + Sync + 'static,
) -> std::io::Result<()> {
    let policy = Arc::new(Mutex::new(AgentPolicy::default()));
    loop {
        let Ok((mut stream, _)) = listener.accept().await else {
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let c = read();
        let line = policy
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .reply(c.admitted, c.rejected, c.limit);
        tokio::spawn(async move {
            // A checker that hangs up early is not our problem; bound the write anyway.
            let _ = tokio::time::timeout(Duration::from_secs(1), stream.write_all(line.as_bytes()))
                .await;
            let _ = stream.shutdown().await;
        });
    }
}
