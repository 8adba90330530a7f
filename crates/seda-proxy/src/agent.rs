//! HAProxy's `agent-check` on its own port: each connection gets one line from the proxy's
//! admission state ([`seda_control::AgentPolicy`]) and is closed.
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

/// Answers agent checks on `listener` until the task is dropped, from what `read` returns.
pub async fn serve_agent(
    listener: TcpListener,
    read: impl Fn() -> Vec<RouteStats> + Send + Sync + 'static,
) -> std::io::Result<()> {
    let policy = Arc::new(Mutex::new(AgentPolicy::default()));
    loop {
        let Ok((mut stream, _)) = listener.accept().await else {
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let (admitted, rejected) =
            read()
                .iter()
                .filter_map(|r| r.admission.as_ref())
                .fold((0, 0), |(a, r), s| {
                    (
                        a + s.admitted,
                        r + s.rejected.iter().map(|(_, n)| n).sum::<u64>(),
                    )
                });
        let line = policy
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .reply(admitted, rejected, None);
        tokio::spawn(async move {
            // A checker that hangs up early is not our problem; bound the write anyway.
            let _ = tokio::time::timeout(Duration::from_secs(1), stream.write_all(line.as_bytes()))
                .await;
            let _ = stream.shutdown().await;
        });
    }
}
