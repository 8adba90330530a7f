//! How `seda serve mail` runs beyond its overload control, and the runtime configuration
//! (`--config`) the two make together.

use seda::TerminateConfig;
use seda_control::catalogue::terminators;
use seda_mail::RequestKind;
use std::net::SocketAddr;

use super::{CORES, Control};

/// How `seda serve mail` runs, beyond its overload [`Control`].
#[derive(Debug, Clone, PartialEq)]
pub struct ServeOptions {
    /// `--cores`: the emulated processor's cores (the lab's [`CORES`] unless a scenario needs
    /// another capacity).
    pub cores: f64,
    /// `--threads`: worker threads per request-type stage (`None`: the server's default).
    pub threads: Option<usize>,
    /// `--deadline-ms`: drop requests not answered within this (`None`: never).
    pub deadline_ms: Option<u64>,
    /// `--serve-abandoned`: serve requests whose client disconnected instead of dropping them.
    pub serve_abandoned: bool,
    /// A shared database (`postgres://...`) and the table prefix there, instead of a fresh
    /// copy of the SQLite corpus: replicas of one service.
    pub shared_db: Option<(String, String)>,
    /// `--agent`: answer HAProxy's agent-check on this address.
    pub agent: Option<SocketAddr>,
    /// `--slow-on-usr1`: how many times slower [`MailServer::slow_down`] makes the processor.
    pub slow_on_usr1: Option<u32>,
    /// Run every request-type stage on one shared pool of exactly this many workers (a
    /// runtime domain) instead of a pool each: a thread-pool server such as SERT06's, where a long
    /// request holds a worker every request type needs.
    pub shared_pool: Option<usize>,
    /// Make the search stage terminable (SERT06) with this terminator.
    pub terminate_search: Option<TerminateConfig>,
    /// `--search-connections`: searches run on this many connections of their own, a
    /// contended resource (`seda_mail::search_gate`).
    pub search_connections: Option<usize>,
    /// `--cut-culprits`: the runtime cuts the search hogging one of those connections.
    pub cut_culprits: bool,
    /// The runtime's control tick (`runtime.tick_ms`), when not its default: how often
    /// terminators and the culprit policy look at running requests.
    pub tick_ms: Option<u64>,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            cores: CORES,
            threads: None,
            deadline_ms: None,
            serve_abandoned: false,
            shared_db: None,
            agent: None,
            slow_on_usr1: None,
            shared_pool: None,
            terminate_search: None,
            search_connections: None,
            cut_culprits: false,
            tick_ms: None,
        }
    }
}

impl ServeOptions {
    /// Our lever beside admission for a p90 target of `target_s`: a search is cut once it has
    /// run for a quarter of the target (SERT06's lever, a fixed threshold), and the service
    /// refuses before it runs one it predicts would run that long. After its wait in a queue,
    /// such a search is unlikely to be answered in time; `mail-users` tells how the quarter
    /// was chosen.
    pub fn cutting_searches(target_s: f64) -> ServeOptions {
        ServeOptions {
            terminate_search: Some(TerminateConfig::new(
                terminators::FIXED,
                [("threshold_s", 0.25 * target_s)],
            )),
            ..ServeOptions::default()
        }
    }
}

/// The domain (shared pool) of [`ServeOptions::shared_pool`].
const SHARED_DOMAIN: &str = "mail";

/// The runtime configuration for `control` and `options`: per-stage admission, queues left
/// unbounded so the controller (or nothing) is what limits them, and the shared pool and the
/// search stage's terminator if asked for.
pub(super) fn stage_config(control: &Control, options: &ServeOptions) -> seda::Config {
    let mut config = seda::Config::default();
    if let Some(ms) = options.tick_ms {
        config.runtime.tick_ms = ms;
    }
    if let Some(n) = options.shared_pool {
        // A fixed size: the runtime's pool sizer would otherwise grow and shrink it.
        let pool = seda::PoolSettings {
            threads: Some(n),
            min_threads: Some(n),
            max_threads: Some(n),
            ..seda::PoolSettings::default()
        };
        config.domains.insert(SHARED_DOMAIN.to_string(), pool);
    }
    for kind in RequestKind::ALL {
        let admission = match control {
            Control::PerStage { kind: k, params } => Some(seda::AdmissionConfig {
                kind: k.clone(),
                params: params.iter().cloned().collect(),
            }),
            _ => None,
        };
        let terminate = options
            .terminate_search
            .clone()
            .filter(|_| kind == RequestKind::Search);
        let stage = seda::StageConfig {
            threshold: Some(1_000_000),
            domain: options.shared_pool.map(|_| SHARED_DOMAIN.to_string()),
            admission,
            terminate,
            ..seda::StageConfig::default()
        };
        config.stages.insert(kind.stage_name(), stage);
    }
    config
}
