//! HAProxy's `agent-check` on its own port: each connection gets one line from a server's
//! serving state ([`seda_control::AgentPolicy`]) and is closed. The proxy answers it from
//! its routes; `seda serve mail --agent` from its stages.
//!
//! ```text
//! server r1 127.0.0.1:8080 check agent-check agent-port 9080 agent-inter 500ms weight 100
//! ```

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use seda_control::{AgentPolicy, AgentSample};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;

use crate::RouteStats;

/// The proxy's sample: the sums over its routes with admission control. When every such
/// route's controller keeps a concurrency limit (Vegas, Gradient2...), their sum is the
/// `maxconn:N` HAProxy is told: more connections than that would only queue or be refused.
pub fn routes_sample(routes: &[RouteStats]) -> AgentSample {
    let layers: Vec<_> = routes.iter().filter_map(|r| r.admission.as_ref()).collect();
    let limits: Option<Vec<f64>> = layers
        .iter()
        .map(|s| s.state.iter().find(|(k, _)| *k == "limit").map(|(_, v)| *v))
        .collect();
    AgentSample {
        admitted: layers.iter().map(|s| s.admitted).sum(),
        rejected: layers
            .iter()
            .flat_map(|s| s.rejected.iter().map(|(_, n)| n))
            .sum(),
        completed: layers.iter().map(|s| s.completed).sum(),
        outstanding: layers
            .iter()
            .map(|s| s.admitted.saturating_sub(s.completed + s.dropped))
            .sum(),
        limit: limits
            .filter(|l| !l.is_empty())
            .map(|l| l.iter().sum::<f64>().round().max(0.0) as u64),
    }
}

/// Answers agent checks on `listener` until the task is dropped, from what `read` returns.
pub async fn serve_agent(
    listener: TcpListener,
    read: impl Fn() -> AgentSample + Send + Sync + 'static,
) -> std::io::Result<()> {
    let policy = Arc::new(Mutex::new(AgentPolicy::default()));
    loop {
        let Ok((mut stream, _)) = listener.accept().await else {
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let line = policy
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .reply(read());
        tokio::spawn(async move {
            // A checker that hangs up early is not our problem; bound the write anyway.
            let _ = tokio::time::timeout(Duration::from_secs(1), stream.write_all(line.as_bytes()))
                .await;
            let _ = stream.shutdown().await;
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use seda_tower::{LayerStats, RejectReason};

    fn route(prefix: &str, limit: Option<f64>) -> RouteStats {
        RouteStats {
            prefix: prefix.into(),
            admission: Some(LayerStats {
                controller: "test",
                admitted: 10,
                rejected: vec![(RejectReason::Limit, 2)],
                completed: 9,
                dropped: 1,
                terminated: 0,
                state: limit.map(|l| vec![("limit", l)]).unwrap_or_default(),
                termination: None,
                deadline: None,
            }),
        }
    }

    #[test]
    fn the_sample_sums_the_routes_and_their_limits() {
        let both = [route("/a", Some(10.4)), route("/b", Some(20.0))];
        let s = routes_sample(&both);
        assert_eq!((s.admitted, s.rejected, s.completed), (20, 4, 18));
        assert_eq!(s.limit, Some(30));
        // One route without a limit: no connection limit can be stated for the proxy.
        let mixed = [route("/a", Some(10.0)), route("/b", None)];
        assert_eq!(routes_sample(&mixed).limit, None);
        assert_eq!(routes_sample(&[]).limit, None);
    }
}
