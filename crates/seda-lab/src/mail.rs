//! The e-mail service (Arashi) as the scenarios run it: a seeded SQLite corpus, `seda serve
//! mail` as a pinned child process with a chosen overload control, and the emulated users.

use seda_control::catalogue::{self, terminators};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use seda::TerminateConfig;
use seda_load::{ClientConfig, Closed, LoadConfig, Model, Report, Target};
use seda_mail::store::Audit;
use seda_mail::workload::MailWorkload;
use seda_mail::{RequestKind, ServiceStats};
use seda_sim::summary::RunSummary;
use serde_json::{Value, json};

use crate::admin::StatsDocument;
use crate::child::Child;
use crate::lab::Lab;
use crate::outcome::Check;

/// Accounts in the lab's corpus (WC03's users each read one account's folders).
pub const CORPUS_USERS: u64 = 100;
/// Virtual cores of the emulated processor the lab runs the service on (`seda serve mail
/// --cores`): the bottleneck of every mail scenario, stated before the run
/// ([`MailCapacity::designed`]). Each request holds it for its cost from WC03's Arashi scaled
/// (`seda_mail::cost`), about 2 ms on the user model's mix, so one core serves about 480
/// requests a second: far more than the load generator's handling of a reply costs, as on
/// WC03's 2003 server, while the handlers' real work stays a few percent of a real core.
pub const CORES: f64 = 1.0;
/// WC03's think time between requests ("aggressively set to 20 ms").
pub const THINK: Duration = Duration::from_millis(20);
/// WC03's wait after a rejection before trying again (our users retry in their session, and
/// wait longer where the service's `Retry-After` asks it).
pub const REJECT_WAIT: Duration = Duration::from_secs(5);

/// How the service protects itself.
#[derive(Debug, Clone)]
pub enum Control {
    /// No admission control: unbounded queues.
    None,
    /// One admission controller per request-type stage (WC03's per-stage control).
    PerStage {
        /// A name of `seda_control::catalogue`, e.g. `response_time_tuned`.
        kind: String,
        /// Its parameters, e.g. `target_s`.
        params: Vec<(String, f64)>,
    },
    /// One admission controller shared by all request-type stages (WC03's single-stage
    /// control, Figure 11): it filters every request whatever its type (`seda serve mail
    /// --single-admission`).
    SingleStage {
        /// A name of `seda_control::catalogue`.
        kind: String,
        /// Its parameters.
        params: Vec<(String, f64)>,
    },
    /// No admission control, but at most this many open connections (new ones get 503).
    ConnectionCap(usize),
}

impl Control {
    /// Our response-time controller toward a p90 target.
    pub fn ours(target_s: f64) -> Control {
        Control::PerStage {
            kind: catalogue::RESPONSE_TIME_TUNED.into(),
            params: vec![("target_s".into(), target_s)],
        }
    }

    /// Session-aware admission (SBAC02: established sessions before new logins, higher user
    /// classes before lower ones) toward a p90 target, one controller shared by every
    /// request-type stage so that a login is refused while any stage refuses sessions. The
    /// service gives each request its class from its own session table.
    pub fn sessions(target_s: f64) -> Control {
        Control::SingleStage {
            kind: catalogue::SESSION_AWARE.into(),
            params: vec![("target_s".into(), target_s)],
        }
    }

    /// As JSON for `result.json`.
    pub fn describe(&self) -> Value {
        let map = |params: &[(String, f64)]| -> serde_json::Map<String, Value> {
            params.iter().map(|(k, v)| (k.clone(), json!(v))).collect()
        };
        match self {
            Control::None => json!({"kind": "none"}),
            Control::PerStage { kind, params } => {
                json!({"kind": kind, "per_stage": true, "params": map(params)})
            }
            Control::SingleStage { kind, params } => {
                json!({"kind": kind, "per_stage": false, "params": map(params)})
            }
            Control::ConnectionCap(n) => json!({"kind": "connection_cap", "max_connections": n}),
        }
    }
}

/// The domain (shared pool) of [`ServeOptions::shared_pool`].
const SHARED_DOMAIN: &str = "mail";

/// The runtime configuration for `control` and `options`: per-stage admission, queues left
/// unbounded so the controller (or nothing) is what limits them, and the shared pool and the
/// search stage's terminator if asked for.
fn stage_config(control: &Control, options: &ServeOptions) -> seda::Config {
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

/// The mail store's table layout the cached corpus was built with; raise it when the layout
/// changes (2: hashed passwords and a class per user; 3: cheaper password hashes; 4: listing
/// indexes in each sort's order, and the second half of the users in class 1).
const CORPUS_LAYOUT: u32 = 4;

/// A seeded corpus, built once per `seda lab run` and copied for each server so that every
/// run starts from the same mailboxes.
fn corpus(lab: &Lab) -> Result<PathBuf> {
    // The name carries the store's table layout: a corpus cached by an older build (clear-text
    // passwords, no class column) is refused by `seda serve mail`, so it must not be reused.
    let template = lab
        .cache_dir()?
        .join(format!("mail-{CORPUS_USERS}-layout{CORPUS_LAYOUT}.db"));
    if !template.exists() {
        let partial = template.with_extension("partial");
        let _ = std::fs::remove_file(&partial);
        lab.log(format!("seeding a corpus of {CORPUS_USERS} users"));
        let status = lab
            .seda(&[
                "mail",
                "corpus",
                "--users",
                &CORPUS_USERS.to_string(),
                "--db",
            ])
            .arg(&partial)
            .stdout(std::process::Stdio::null())
            .status()
            .context("cannot run `seda mail corpus`")?;
        if !status.success() {
            bail!("`seda mail corpus` failed ({status})");
        }
        std::fs::rename(&partial, &template)?;
    }
    Ok(template)
}

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

/// A running `seda serve mail`.
#[derive(Debug)]
pub struct MailServer {
    /// Where it listens.
    pub addr: SocketAddr,
    /// Its admin address (`/_seda/stats`, `/metrics`, the dashboard).
    pub admin: SocketAddr,
    child: Child,
}

impl MailServer {
    /// Starts the service named `name` (its log is `<name>.log`) on a fresh copy of the corpus.
    pub fn start(lab: &Lab, name: &str, control: &Control) -> Result<MailServer> {
        MailServer::start_with(lab, name, control, &ServeOptions::default())
    }

    /// Like [`start`](Self::start), with other [`ServeOptions`].
    pub fn start_with(
        lab: &Lab,
        name: &str,
        control: &Control,
        options: &ServeOptions,
    ) -> Result<MailServer> {
        let config = lab.file(&format!("{name}.toml"));
        let text = stage_config(control, options)
            .to_toml()
            .with_context(|| format!("{name}: the configuration has no TOML form"))?;
        std::fs::write(&config, text)
            .with_context(|| format!("cannot write {}", config.display()))?;
        let (addr, admin) = crate::child::two_free_addrs()?;
        let mut cmd = lab.seda(&[
            "serve",
            "mail",
            "--addr",
            &addr.to_string(),
            "--admin",
            &admin.to_string(),
            "--db",
        ]);
        match &options.shared_db {
            Some((url, prefix)) => {
                cmd.args([url.as_str(), "--prefix", prefix.as_str()]);
                cmd.args(["--seed-users", &CORPUS_USERS.to_string()]);
            }
            None => {
                let db = lab.file(&format!("{name}.db"));
                remove_db(&db);
                std::fs::copy(corpus(lab)?, &db).context("cannot copy the corpus")?;
                cmd.arg(&db);
            }
        }
        cmd.arg("--config").arg(&config);
        if let Some(agent) = options.agent {
            cmd.args(["--agent", &agent.to_string()]);
        }
        if let Some(n) = options.slow_on_usr1 {
            cmd.args(["--slow-on-usr1", &n.to_string()]);
        }
        cmd.args(["--cores", &options.cores.to_string()]);
        if let Some(n) = options.threads {
            cmd.args(["--threads", &n.to_string()]);
        }
        if let Some(ms) = options.deadline_ms {
            cmd.args(["--deadline-ms", &ms.to_string()]);
        }
        if options.serve_abandoned {
            cmd.arg("--serve-abandoned");
        }
        if let Some(n) = options.search_connections {
            cmd.args(["--search-connections", &n.to_string()]);
        }
        if options.cut_culprits {
            cmd.arg("--cut-culprits");
        }
        match control {
            Control::ConnectionCap(n) => {
                cmd.args(["--max-connections", &n.to_string()]);
            }
            Control::SingleStage { kind, params } => {
                let mut spec = kind.clone();
                for (name, v) in params {
                    let _ = write!(spec, ",{name}={v:?}");
                }
                cmd.args(["--single-admission", &spec]);
            }
            Control::None | Control::PerStage { .. } => {}
        }
        let mut child = lab.spawn(name, &cmd)?;
        child.wait_port(addr, Duration::from_secs(30))?;
        lab.log(format!(
            "{name} serving on http://{addr}/; live dashboard http://{admin}/"
        ));
        warm(lab, addr)?;
        Ok(MailServer { addr, admin, child })
    }

    /// CPU seconds (user + system) the server has used so far.
    pub fn cpu_seconds(&self) -> Option<f64> {
        crate::bottleneck::process_cpu_seconds(self.child.pid())
    }

    /// Makes the server's processor `--slow-on-usr1` times slower (`slow`) or gives it back its
    /// speed (`!slow`).
    pub fn slow_down(&self, slow: bool) -> Result<()> {
        let sig = if slow { "-USR1" } else { "-USR2" };
        let status = std::process::Command::new("kill")
            .args([sig, &self.child.pid().to_string()])
            .status()
            .context("cannot run kill")?;
        if !status.success() {
            bail!("kill {sig} {} failed ({status})", self.child.pid());
        }
        Ok(())
    }

    /// Stops the server (SIGTERM, then SIGKILL) and removes its database copy.
    pub fn stop(self, lab: &Lab, name: &str) {
        self.child.stop();
        remove_db(&lab.file(&format!("{name}.db")));
    }

    /// Stops the server like [`stop`](Self::stop), auditing its SQLite copy of the corpus
    /// first (the server has exited, so nothing writes to it): what the run left in the store.
    pub fn stop_audited(self, lab: &Lab, name: &str) -> Result<Audit> {
        self.child.stop();
        let db = lab.file(&format!("{name}.db"));
        let audit = audit_db(&db);
        remove_db(&db);
        audit
    }
}

/// The audit of the lab's corpus as seeded: what every server's copy starts from.
pub fn corpus_audit(lab: &Lab) -> Result<Audit> {
    audit_db(&corpus(lab)?)
}

/// Whole: every user and message the corpus had, each folder's count right.
pub(crate) fn audit_clean(a: &Audit, before: &Audit) -> bool {
    a == before && a.bad_folders == 0 && a.messages == a.folder_counts
}

/// The enforced claim that variant `name`'s store came out of its run whole.
pub(crate) fn audit_check(name: &str, audit: &Audit, before: &Audit) -> Check {
    Check::new(
        format!("{name}: nothing lost or doubled in the store (audit after the run)"),
        audit_clean(audit, before),
        format!(
            "{} users, {} messages, folder counts {}, {} bad folders (corpus: {} users, {} \
             messages)",
            audit.users,
            audit.messages,
            audit.folder_counts,
            audit.bad_folders,
            before.users,
            before.messages
        ),
    )
}

/// The store's audit of the SQLite database at `db`.
fn audit_db(db: &std::path::Path) -> Result<Audit> {
    let url = db.to_str().context("the database path is not UTF-8")?;
    let store = seda_mail::store::open(url, "")
        .map_err(|e| anyhow::anyhow!("cannot open {url} to audit it: {e}"))?;
    store
        .audit()
        .map_err(|e| anyhow::anyhow!("audit of {url} failed: {e}"))
}

/// Removes a SQLite database with its write-ahead log: a stale log left beside a fresh copy
/// would be replayed into it and corrupt it.
fn remove_db(db: &std::path::Path) {
    for suffix in ["", "-wal", "-shm"] {
        let mut p = db.as_os_str().to_owned();
        p.push(suffix);
        let _ = std::fs::remove_file(p);
    }
}

/// A load of emulated e-mail users against `addr`: WC03's think time and wait after a
/// rejection, both multiplied by `time_scale` (a scenario that shrinks its time scale to fit a
/// faster machine shrinks them too), 1 s intervals, a 3 s connect timeout and a 30 s deadline
/// (a request unanswered by then counts as a timeout).
pub fn users(
    addr: SocketAddr,
    users: usize,
    duration: Duration,
    time_scale: f64,
) -> Result<LoadConfig> {
    let target = Target::parse(&format!("http://{addr}/"))?;
    let model = Model::Closed(Closed {
        users,
        think: THINK.mul_f64(time_scale),
        think_exponential: true,
        ramp: Duration::ZERO,
    });
    let mut cfg = LoadConfig::new(target, model)?;
    cfg.workload = Arc::new(MailWorkload::new(CORPUS_USERS));
    cfg.duration = duration;
    cfg.client = ClientConfig {
        backoff_on_503: Some(REJECT_WAIT.mul_f64(time_scale)),
        // The service's `Retry-After` is WC03's wait, stretched while it refuses far more
        // than it admits; the users honour it, scaled like every other time.
        retry_after_scale: Some(time_scale),
        deadline: Duration::from_secs(30),
        connect_timeout: Duration::from_secs(3),
        error_pause: Duration::from_secs(1),
        ..ClientConfig::default()
    };
    cfg.keep_interval_histograms = true;
    Ok(cfg)
}

/// Serves a short unmeasured load, so that what a scenario measures starts from a warm server:
/// each stage thread's database connection reads the pages it touches the first time through
/// system calls, and sessions and caches fill.
fn warm(lab: &Lab, addr: SocketAddr) -> Result<()> {
    let cfg = busy_users(
        addr,
        8,
        lab.pick(Duration::from_secs(1), Duration::from_secs(3)),
    )?;
    lab.load(cfg).context("warming the server up")?;
    Ok(())
}

/// [`users`] without think time (at WC03's time scale): as many requests as the service
/// answers, for warming it up.
fn busy_users(addr: SocketAddr, n: usize, duration: Duration) -> Result<LoadConfig> {
    let mut cfg = users(addr, n, duration, 1.0)?;
    if let Model::Closed(c) = &mut cfg.model {
        c.think = Duration::ZERO;
    }
    Ok(cfg)
}

/// The mail service's capacity, by design: the emulated processor's `cores` core-seconds of work
/// a second, over the stated cost of a request (`seda_mail::cost`). Stated before the run, it
/// does not move with the machine's speed, and a run's goodput is the stated work of the
/// requests it answered within the target per second of the processor's cores: a run that
/// wastes the processor on refused, cut or late work reads under 1, and nothing a handler
/// costs this machine in real CPU changes either figure (that real CPU is reported beside,
/// and must stay well under a core for the design to hold).
///
/// Request types cost very different amounts (a search scans its mailbox; showing a message
/// reads one row), so a run is priced on the mix it served: [`on_mix`](Self::on_mix) turns
/// the processor's cores into requests per second of that mix.
#[derive(Debug, Clone, PartialEq)]
pub struct MailCapacity {
    /// The emulated processor's cores.
    pub cores: f64,
    /// Requests per second of the user model's long-run mix: the scale scenarios size their
    /// loads by.
    pub per_s: f64,
    /// Each request type's stated cost on the corpus's mean mailbox, seconds (the price of a
    /// type a run served within the target without stating its requests' costs).
    pub cost_s: BTreeMap<String, f64>,
    /// The user model's long-run mix, requests per 10,000.
    pub mix: BTreeMap<String, u64>,
}

impl MailCapacity {
    /// The capacity of the service on an emulated processor of `cores` cores, from the cost
    /// table and the user model's stationary mix.
    pub fn designed(cores: f64) -> MailCapacity {
        let table = seda_mail::cost::CostTable::arashi();
        let shares = seda_mail::user_model::stationary_mix();
        let mut cost_s = BTreeMap::new();
        let mut mix = BTreeMap::new();
        for kind in RequestKind::ALL {
            cost_s.insert(kind.name().to_string(), table.mean_cost(kind).as_secs_f64());
            mix.insert(
                kind.name().to_string(),
                (shares[kind.index()] * 10_000.0).round() as u64,
            );
        }
        let mut cap = MailCapacity {
            cores,
            per_s: 0.0,
            cost_s,
            mix,
        };
        cap.per_s = cap.on_mix(&cap.mix.clone(), &BTreeMap::new());
        cap
    }

    /// The mean stated cost of a request of `mix`, each type priced by `run` (a run's own
    /// costs) or else by the table's mean; `None` when the mix is empty or has a type neither
    /// prices.
    pub fn mean_cost(
        &self,
        mix: &BTreeMap<String, u64>,
        run: &BTreeMap<String, f64>,
    ) -> Option<f64> {
        let n: u64 = mix.values().sum();
        if n == 0 {
            return None;
        }
        let mut work = 0.0;
        for (kind, &count) in mix.iter().filter(|(_, c)| **c > 0) {
            let cost = run.get(kind).or_else(|| self.cost_s.get(kind))?;
            work += count as f64 * cost;
        }
        Some(work / n as f64)
    }

    /// Capacity in requests per second of `mix` priced by `run`: the requests of the mix the
    /// processor's cores complete in a second. Falls back on [`per_s`](Self::per_s) when the
    /// mix cannot be priced.
    pub fn on_mix(&self, mix: &BTreeMap<String, u64>, run: &BTreeMap<String, f64>) -> f64 {
        match self.mean_cost(mix, run) {
            Some(cost) if cost > 0.0 => self.cores / cost,
            _ => self.per_s,
        }
    }

    /// How it was set, for reports.
    pub fn describe(&self) -> Value {
        json!({
            "cores": self.cores,
            "model_mix_per_s": self.per_s,
            "cost_s_per_type": self.cost_s,
            "model_mix_per_10000": self.mix,
            "how": HOW,
        })
    }
}

/// One sentence for reports: how the mail service's capacity is set and its goodput priced.
pub const HOW: &str = "capacity is by design: the service runs on an emulated processor \
    (`seda serve mail --cores`) whose cores each do one second of work a second, and each \
    request, after its real work, holds it for a stated cost (WC03's Arashi scaled so that \
    showing a message costs 1 ms; a search grows with its mailbox: `seda_mail::cost`). \
    goodput / capacity is the stated work of the requests answered within the target per \
    second of the processor's cores, each priced at the cost the service states for it (its \
    `Server-Timing: cpu` header). The machine's speed moves neither; the server's real CPU is \
    reported beside";

/// What one request type's handlers did, cumulative or between two snapshots.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TypeWork {
    /// Handler CPU seconds, whether the requests were answered or not.
    pub cpu_s: f64,
    /// The part of `cpu_s` spent on requests the handlers answered.
    pub answered_cpu_s: f64,
    /// Requests answered.
    pub answered: u64,
}

impl TypeWork {
    /// What was done between `earlier` and this reading.
    fn since(self, earlier: TypeWork) -> TypeWork {
        TypeWork {
            cpu_s: self.cpu_s - earlier.cpu_s,
            answered_cpu_s: self.answered_cpu_s - earlier.answered_cpu_s,
            answered: self.answered.saturating_sub(earlier.answered),
        }
    }
}

/// Each request type's [`TypeWork`], from the mail service's section of a stats snapshot.
fn handler_totals(stats: &ServiceStats) -> BTreeMap<String, TypeWork> {
    RequestKind::ALL
        .iter()
        .filter_map(|&k| {
            let name = k.name();
            Some((
                name.to_string(),
                TypeWork {
                    cpu_s: *stats.handler_cpu_s.get(name)?,
                    answered_cpu_s: *stats.answered_cpu_s.get(name)?,
                    answered: *stats.answered.get(name)?,
                },
            ))
        })
        .collect()
}

/// The mail service's section of a stats document (`None`: the server is another service).
fn service_stats(stats: &StatsDocument) -> Option<ServiceStats> {
    stats.service_as().ok().flatten()
}

/// What each request type cost the mail service between two stats snapshots.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Work {
    /// Per type, what its handlers did.
    pub per_type: BTreeMap<String, TypeWork>,
    /// Real CPU seconds the whole server used meanwhile (`None`: not measured).
    pub server_cpu_s: Option<f64>,
    /// Core-seconds of work the emulated processor did meanwhile (`None`: not in the
    /// snapshots).
    pub busy_core_s: Option<f64>,
    /// Wall seconds between the snapshots (`None`: not measured).
    pub window_s: Option<f64>,
}

impl Work {
    /// The difference between the snapshots `before` and `after` (`None`: a snapshot failed).
    pub fn between(before: Option<&StatsDocument>, after: Option<&StatsDocument>) -> Work {
        let (Some(before), Some(after)) = (
            before.and_then(service_stats),
            after.and_then(service_stats),
        ) else {
            return Work::default();
        };
        let busy = |s: &ServiceStats| s.processor.map(|p| p.busy_core_s);
        let earlier = handler_totals(&before);
        let per_type = handler_totals(&after)
            .into_iter()
            .map(|(k, w)| {
                let earlier = earlier.get(&k).copied().unwrap_or_default();
                (k, w.since(earlier))
            })
            .collect();
        Work {
            per_type,
            busy_core_s: busy(&after).zip(busy(&before)).map(|(a, b)| a - b),
            ..Work::default()
        }
    }

    /// Handler CPU per answered request of each type that answered any. The work of requests
    /// cut or given up is not in it: it bought no answer, and charged to the answered ones it
    /// priced a search at 62 ms where an answered one took 11-28 (`mail-users`, 1024 users).
    pub fn cost_s(&self) -> BTreeMap<String, f64> {
        self.per_type
            .iter()
            .filter(|(_, w)| w.answered > 0 && w.answered_cpu_s > 0.0)
            .map(|(k, w)| (k.clone(), w.answered_cpu_s / w.answered as f64))
            .collect()
    }

    /// Handler CPU seconds of every type.
    pub fn cpu_s(&self) -> f64 {
        self.per_type.values().map(|w| w.cpu_s).sum()
    }
}

/// Runs `config` against the mail `server`: the report, and what the server's handlers, its
/// processor and the server as a whole did over the report's measured window (after the
/// warm-up) only, as the report's counts cover it.
pub fn load_with_work(
    lab: &Lab,
    server: &MailServer,
    config: LoadConfig,
) -> Result<(Report, Work)> {
    let warmup = config.warmup;
    let snapshot = || {
        let stats = crate::admin::stats(server.admin)
            .map_err(|e| lab.log(format!("cannot read the server's stats: {e:#}")))
            .ok();
        (std::time::Instant::now(), server.cpu_seconds(), stats)
    };
    let (report, before) = std::thread::scope(|s| {
        let before = s.spawn(|| {
            std::thread::sleep(warmup);
            snapshot()
        });
        let report = lab.load(config);
        (report, before.join().ok())
    });
    let report = report?;
    let Some((t_before, cpu_before, before)) = before else {
        return Ok((report, Work::default()));
    };
    let (t_after, cpu_after, after) = snapshot();
    let mut work = Work::between(before.as_ref(), after.as_ref());
    work.server_cpu_s = cpu_after.zip(cpu_before).map(|(a, b)| a - b);
    work.window_s = Some(t_after.duration_since(t_before).as_secs_f64());
    Ok((report, work))
}

/// A run's capacity on the mix it served within the target, each type priced at what it cost
/// in the run ([`MailCapacity::on_mix`]), and the figures behind it.
#[derive(Debug, Clone)]
pub struct RunPrice {
    /// Capacity in requests per second of the served mix.
    pub capacity_per_s: f64,
    /// Capacity in requests per second of the user model's mix.
    model_per_s: f64,
    served: BTreeMap<String, u64>,
    /// What a request of each type served in time cost, seconds of the processor's work.
    costs: BTreeMap<String, f64>,
    /// The processor's work on each type over the run's window, seconds, whether its requests
    /// came in time, late or not at all: it tells where a processor that served little goodput
    /// went (late work, or one costly type).
    handler_cpu_s: BTreeMap<String, f64>,
    /// The share of the processor's cores busy over the run's window (`None`: not read).
    processor_busy: Option<f64>,
    /// The server's real CPU over the run's window, seconds per second (`None`: not read).
    server_cpu_share: Option<f64>,
}

impl RunPrice {
    /// Prices the requests of each type `report` completed within the target in the intervals
    /// that start in `[from_s, to_s)` (the span the run's goodput counts), each at what the
    /// service said it cost (its `Server-Timing`), a type without those at what an answered
    /// request of it cost over the run (`work`), else at the table's mean.
    ///
    /// The requests' own costs, because a type's mean misprices the ones answered in time: a
    /// search of a large mailbox costs ten times one of a small one, and under some controls
    /// the large ones are the ones answered late.
    pub fn new(
        capacity: &MailCapacity,
        report: &Report,
        (from_s, to_s): (f64, f64),
        work: &Work,
    ) -> RunPrice {
        let served = report.good_by_class_between(from_s, to_s);
        let mut prices = work.cost_s();
        for (kind, c) in report.good_server_cpu_between(from_s, to_s) {
            if c.timed > 0 && c.cpu_s.is_finite() {
                prices.insert(kind, c.cpu_s / c.timed as f64);
            }
        }
        let window = work.window_s.filter(|&w| w > 0.0);
        RunPrice {
            capacity_per_s: capacity.on_mix(&served, &prices),
            model_per_s: capacity.per_s,
            served,
            costs: prices,
            handler_cpu_s: work
                .per_type
                .iter()
                .map(|(k, w)| (k.clone(), w.cpu_s))
                .collect(),
            processor_busy: work
                .busy_core_s
                .zip(window)
                .map(|(b, w)| b / w / capacity.cores),
            server_cpu_share: work.server_cpu_s.zip(window).map(|(c, w)| c / w),
        }
    }

    /// `summary` with the figures behind the price.
    pub fn annotate(&self, summary: RunSummary) -> RunSummary {
        summary
            .with("capacity_model_mix_per_s", self.model_per_s)
            .with("processor_busy_fraction", self.processor_busy)
            .with("server_real_cpu_share", self.server_cpu_share)
            .with("served_mix", &self.served)
            .with("cost_s_per_type", &self.costs)
            .with("handler_cpu_s", &self.handler_cpu_s)
    }

    /// Goodput / capacity second by second, `(t_s, fraction)` for each of `report`'s
    /// intervals that start in `[from_s, to_s)`: each interval's requests answered within the
    /// target, priced as this run prices them, per second of the interval. Their mean over
    /// the span is the run's goodput / capacity; their spread says how much one run can tell
    /// two variants apart.
    pub fn fraction_by_second(
        &self,
        capacity: &MailCapacity,
        report: &Report,
        (from_s, to_s): (f64, f64),
    ) -> Vec<(f64, f64)> {
        report
            .series
            .iter()
            .filter(|i| i.t_s >= from_s && i.t_s < to_s && i.duration_s > 0.0)
            .map(|i| {
                let mix: BTreeMap<String, u64> = report
                    .classes
                    .iter()
                    .zip(&i.good_by_class)
                    .map(|(c, n)| (c.name.clone(), *n))
                    .collect();
                let n: u64 = mix.values().sum();
                let work = capacity.mean_cost(&mix, &self.costs).unwrap_or(0.0) * n as f64;
                (i.t_s, work / i.duration_s / capacity.cores)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capacity_follows_the_cost_of_the_mix() {
        let cap = MailCapacity {
            cores: 1.0,
            per_s: 100.0,
            cost_s: [("login".to_string(), 0.004), ("list".to_string(), 0.001)].into(),
            mix: [("login".to_string(), 50), ("list".to_string(), 50)].into(),
        };
        let none = BTreeMap::new();
        // Lists cost 1 ms: a core completes 1000 a second.
        let lists = [("list".to_string(), 10)].into();
        assert!((cap.on_mix(&lists, &none) - 1000.0).abs() < 1e-9);
        // Half logins: 2.5 ms a request, 400/s.
        assert!((cap.on_mix(&cap.mix, &none) - 400.0).abs() < 1e-9);
        // The run's own price wins: lists at 4 ms in this run, 250/s.
        let run = [("list".to_string(), 0.004)].into();
        assert!((cap.on_mix(&lists, &run) - 250.0).abs() < 1e-9);
        // A type nobody priced: the model mix's rate.
        assert_eq!(
            cap.on_mix(&[("search".to_string(), 3)].into(), &none),
            100.0
        );
        assert_eq!(cap.on_mix(&BTreeMap::new(), &none), 100.0);
        // Two cores complete twice as many.
        let two = MailCapacity { cores: 2.0, ..cap };
        assert!((two.on_mix(&lists, &none) - 2000.0).abs() < 1e-9);
    }

    #[test]
    fn the_designed_capacity_is_the_cores_over_the_model_mixs_cost() {
        let cap = MailCapacity::designed(1.0);
        // About 2 ms a request on the user model's mix (module docs of `seda_mail::cost`).
        assert!((400.0..600.0).contains(&cap.per_s), "{}", cap.per_s);
        let n = cap.mix.values().sum::<u64>();
        assert!((9_995..=10_005).contains(&n), "{n}");
        let mean = cap.mean_cost(&cap.mix, &BTreeMap::new()).unwrap();
        assert!((cap.per_s * mean - 1.0).abs() < 1e-9);
        let two = MailCapacity::designed(2.0);
        assert!((two.per_s - 2.0 * cap.per_s).abs() < 1e-6);
    }

    #[test]
    fn work_is_the_difference_of_two_snapshots() {
        // A login's handlers ran 1 s more, 0.5 s of it on the 100 logins they answered; the
        // processor did 1.5 core-seconds of work.
        let snap = |cpu: f64, answered_cpu: f64, answered: u64, busy: f64| {
            let login = |v| BTreeMap::from([("login".to_string(), v)]);
            let service = ServiceStats {
                handler_cpu_s: login(cpu),
                answered_cpu_s: login(answered_cpu),
                answered: BTreeMap::from([("login".to_string(), answered)]),
                processor: Some(seda::processor::ProcessorSnapshot {
                    cores: 1.0,
                    busy_core_s: busy,
                    running: 0,
                }),
            };
            StatsDocument {
                frontend: None,
                runtime: None,
                service: Some(serde_json::to_value(service).unwrap()),
                layers: None,
            }
        };
        let w = Work::between(
            Some(&snap(1.0, 1.0, 10, 2.0)),
            Some(&snap(2.0, 1.5, 110, 3.5)),
        );
        let login = w.per_type["login"];
        assert_eq!((login.cpu_s, login.answered), (1.0, 100));
        assert!((w.cost_s()["login"] - 0.005).abs() < 1e-12);
        assert!((w.cpu_s() - 1.0).abs() < 1e-12);
        assert_eq!(w.busy_core_s, Some(1.5));
        assert_eq!(
            Work::between(None, Some(&snap(1.0, 1.0, 1, 0.0))),
            Work::default()
        );
    }
}
