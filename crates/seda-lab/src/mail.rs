//! The e-mail service (Arashi) as the scenarios run it: a seeded SQLite corpus, `seda serve
//! mail` as a pinned child process with a chosen overload control, and the emulated users.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use seda_load::{ClientConfig, Closed, LoadConfig, Model, Report, Target};
use seda_mail::RequestKind;
use seda_mail::store::Audit;
use seda_mail::workload::MailWorkload;
use seda_sim::summary::RunSummary;
use serde_json::{Value, json};

use crate::child::Child;
use crate::health::speed_moved;
use crate::lab::Lab;

/// Accounts in the lab's corpus (WC03's users each read one account's folders).
pub const CORPUS_USERS: u64 = 100;
/// How many times slower than this machine the service is run (`seda serve mail --slowdown`).
/// On WC03's 2003 server a request cost far more than a client's handling of its reply; here
/// SQLite answers so fast that one load-generator core could not outpace one server core, and
/// the client, not the server, would become the bottleneck. Twenty times slower restores the
/// paper's proportions: the server saturates while the load generator stays idle most of the
/// time.
pub const SLOWDOWN: u32 = 20;
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
            kind: "response_time_tuned".into(),
            params: vec![("target_s".into(), target_s)],
        }
    }

    /// Session-aware admission (SBAC02: established sessions before new logins, higher user
    /// classes before lower ones) toward a p90 target, one controller shared by every
    /// request-type stage so that a login is refused while any stage refuses sessions. The
    /// service gives each request its class from its own session table.
    pub fn sessions(target_s: f64) -> Control {
        Control::SingleStage {
            kind: "session_aware".into(),
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
fn stage_config(control: &Control, options: &ServeOptions) -> String {
    let mut toml = String::new();
    if let Some(n) = options.shared_pool {
        // A fixed size: the runtime's pool sizer would otherwise grow and shrink it.
        let _ = writeln!(
            toml,
            "[domains.{SHARED_DOMAIN}]\nthreads = {n}\nmin_threads = {n}\nmax_threads = {n}\n"
        );
    }
    for kind in RequestKind::ALL {
        let _ = writeln!(
            toml,
            "[stages.\"{}\"]\nthreshold = 1000000",
            kind.stage_name()
        );
        if options.shared_pool.is_some() {
            let _ = writeln!(toml, "domain = \"{SHARED_DOMAIN}\"");
        }
        if let Control::PerStage { kind: k, params } = control {
            let _ = write!(toml, "admission = {{ kind = \"{k}\"");
            for (name, v) in params {
                let _ = write!(toml, ", {name} = {v:?}");
            }
            toml += " }\n";
        }
        if kind == RequestKind::Search
            && let Some(t) = &options.terminate_search
        {
            let _ = writeln!(toml, "[stages.\"{}\".terminate]\n{t}", kind.stage_name());
        }
    }
    toml
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
    /// `--slowdown` (the lab's [`SLOWDOWN`] unless a scenario needs another scale).
    pub slowdown: u32,
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
    /// `--slowdown-on-usr1`: the slowdown [`MailServer::slow_down`] switches to.
    pub slowdown_on_usr1: Option<u32>,
    /// Run every request-type stage on one shared pool of exactly this many workers (a
    /// runtime domain) instead of a pool each: a thread-pool server such as SERT06's, where a long
    /// request holds a worker every request type needs.
    pub shared_pool: Option<usize>,
    /// Make the search stage terminable (SERT06) with this terminator, the body of its
    /// `[stages."mail.search".terminate]` table (e.g. `kind = "sert"\nlower_s = 0.1\n...`).
    pub terminate_search: Option<String>,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            slowdown: SLOWDOWN,
            threads: None,
            deadline_ms: None,
            serve_abandoned: false,
            shared_db: None,
            agent: None,
            slowdown_on_usr1: None,
            shared_pool: None,
            terminate_search: None,
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
            terminate_search: Some(format!(
                "kind = \"fixed\"\nthreshold_s = {}\n",
                0.25 * target_s
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
        std::fs::write(&config, stage_config(control, options))?;
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
        if let Some(n) = options.slowdown_on_usr1 {
            cmd.args(["--slowdown-on-usr1", &n.to_string()]);
        }
        cmd.args(["--slowdown", &options.slowdown.to_string()]);
        if let Some(n) = options.threads {
            cmd.args(["--threads", &n.to_string()]);
        }
        if let Some(ms) = options.deadline_ms {
            cmd.args(["--deadline-ms", &ms.to_string()]);
        }
        if options.serve_abandoned {
            cmd.arg("--serve-abandoned");
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

    /// Switches the server to its `--slowdown-on-usr1` slowdown (`slow`) or back (`!slow`).
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

/// Serves a short unmeasured load, so that what a scenario measures starts from a warm server.
/// Each stage thread's database connection reads the pages it touches the first time through
/// system calls, and `--slowdown` multiplies that CPU time too: on a fresh server, 16 users
/// were served 15-30% slower in their first seconds than afterwards, and the first load of a
/// scenario ran on a different service from the rest.
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
/// answers, for warming it up and calibrating it.
fn busy_users(addr: SocketAddr, n: usize, duration: Duration) -> Result<LoadConfig> {
    let mut cfg = users(addr, n, duration, 1.0)?;
    if let Model::Closed(c) = &mut cfg.model {
        c.think = Duration::ZERO;
    }
    Ok(cfg)
}

/// Users that saturate the service when calibrating. More users lower the measured figure
/// (with 256 or 1000, a short run sees mostly the slow start of sessions piling up: 250 and
/// 135 requests/s against 320 with 32, measured on one machine), so this is the peak.
const CALIBRATION_USERS: usize = 32;

/// The populations [`mail_capacity`] tries, keeping the highest rate: where the peak lies
/// depends on the machine and the build (issue 15: 16 users without control completed 1,605
/// requests/s against 1,279 calibrated with 32, so goodput read 1.25 x capacity).
const CALIBRATION_POPULATIONS: [usize; 3] = [8, 16, 32];

/// The service's capacity, measured so that a run's goodput can be compared with it whatever
/// mix of requests the run served.
///
/// Request types cost very different amounts (a login checks a password hash; a folder list
/// reads an index), and the same type costs more or less from run to run (a search of a large
/// mailbox costs ten times one of a small one, and a short run completes a few dozen). So
/// goodput is measured in the server's work, as CPU-seconds of requests completed within the
/// target per CPU-second of the server: the service counts the CPU time of each request type's
/// handlers (`handler_cpu_s` in its stats), and a run's requests of each type are priced at
/// what that type cost in the same run ([`Work`]), over the handlers' share of the server's
/// CPU in the calibration ([`handler_share`](Self::handler_share)): the front end's parsing
/// and answering is part of every request's price, in the proportion the calibration measured.
/// [`on_mix`](Self::on_mix) turns one CPU-second into requests per second of a run's mix, so a
/// saturated uncontrolled server reads about 1, and what keeps a controlled run under it is CPU
/// that serves no request (refusals, work finished late) or that the server did not get. The
/// front end's price follows the run's handler costs rather than the calibration's seconds:
/// on this machine the same request's CPU cost moves twofold from minute to minute (the same
/// logins cost 39 us and 114 us of front end in two calibrations), and a front end priced in
/// the calibration's seconds read up to 1.05 x.
#[derive(Debug, Clone, PartialEq)]
pub struct MailCapacity {
    /// Requests per CPU-second of the server, of the calibration's own mix (the best of the
    /// populations): the scale scenarios size their loads by.
    pub per_s: f64,
    /// Handler CPU over the server's CPU while the calibration saturated it (the rest is the
    /// front end's). Prices divide by it: without the front end's part, goodput / capacity
    /// could reach only this share (0.96), and a goal such as 0.9 x would ask for nearly all of
    /// the server's work.
    pub handler_share: f64,
    /// Each request type's handler CPU per request in the calibration, seconds (the price of a
    /// type a run served within the target but whose cost it did not measure).
    pub cost_s: BTreeMap<String, f64>,
    /// The calibration's mix: requests completed per type.
    pub mix: BTreeMap<String, u64>,
}

impl MailCapacity {
    /// The mean server CPU of a request of `mix`: its handler's, each type priced by `run` (a
    /// run's own costs) or else by the calibration's, over the handler share; `None` when the
    /// mix is empty or has a type neither prices.
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
        Some(work / n as f64 / with_front_end(self.handler_share))
    }

    /// Capacity in requests per second of `mix` priced by `run`: the requests of the mix one
    /// CPU-second of the server completes. Falls back on the calibration's rate when the mix
    /// cannot be priced.
    pub fn on_mix(&self, mix: &BTreeMap<String, u64>, run: &BTreeMap<String, f64>) -> f64 {
        match self.mean_cost(mix, run) {
            Some(cost) if cost > 0.0 => 1.0 / cost,
            _ => self.per_s,
        }
    }

    /// How it was measured, for reports.
    pub fn describe(&self) -> Value {
        json!({
            "calibration_mix_per_s": self.per_s,
            "handler_share": self.handler_share,
            "cost_s_per_type": self.cost_s,
            "calibration_mix": self.mix,
            "how": HOW,
        })
    }
}

/// The handler share prices divide by: `handler_share` where a calibration measured one, 1
/// (handlers only) where it could not.
pub fn with_front_end(handler_share: f64) -> f64 {
    if handler_share > 0.0 && handler_share <= 1.0 {
        handler_share
    } else {
        1.0
    }
}

/// One sentence for reports: how the mail service's capacity is measured.
pub const HOW: &str = "goodput / capacity is CPU-seconds of requests completed within the \
    target per CPU-second of the server: each request completed in time is priced at the \
    handler CPU the service says it cost (its `Server-Timing: cpu` header), over the handlers' \
    share of the server's CPU in the calibration (8, 16 and 32 closed users without think time; \
    the rest is the front end's), so a saturated uncontrolled server reads about 1";

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

    /// This and `other` together.
    fn plus(self, other: TypeWork) -> TypeWork {
        TypeWork {
            cpu_s: self.cpu_s + other.cpu_s,
            answered_cpu_s: self.answered_cpu_s + other.answered_cpu_s,
            answered: self.answered + other.answered,
        }
    }
}

/// Each request type's [`TypeWork`], from a stats snapshot of the mail service.
fn handler_totals(stats: &Value) -> BTreeMap<String, TypeWork> {
    let read = |key: &str, k: RequestKind| stats.pointer(&format!("/service/{key}/{}", k.name()));
    RequestKind::ALL
        .iter()
        .filter_map(|&k| {
            Some((
                k.name().to_string(),
                TypeWork {
                    cpu_s: read("handler_cpu_s", k)?.as_f64()?,
                    answered_cpu_s: read("answered_cpu_s", k)?.as_f64()?,
                    answered: read("answered", k)?.as_u64()?,
                },
            ))
        })
        .collect()
}

/// What each request type cost the mail service between two stats snapshots.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Work {
    /// Per type, what its handlers did.
    pub per_type: BTreeMap<String, TypeWork>,
    /// Requests the front end parsed meanwhile (`None`: not in the snapshots).
    pub requests: Option<u64>,
    /// CPU seconds the whole server used meanwhile (`None`: not measured).
    pub server_cpu_s: Option<f64>,
}

impl Work {
    /// The difference between the snapshots `before` and `after` (`None`: a snapshot failed).
    pub fn between(before: Option<&Value>, after: Option<&Value>) -> Work {
        let (Some(before), Some(after)) = (before, after) else {
            return Work::default();
        };
        let requests = |v: &Value| v.pointer("/frontend/requests")?.as_u64();
        let earlier = handler_totals(before);
        let per_type = handler_totals(after)
            .into_iter()
            .map(|(k, w)| {
                let earlier = earlier.get(&k).copied().unwrap_or_default();
                (k, w.since(earlier))
            })
            .collect();
        Work {
            per_type,
            requests: requests(after)
                .zip(requests(before))
                .map(|(a, b)| a.saturating_sub(b)),
            server_cpu_s: None,
        }
    }

    /// The server's CPU outside the handlers (parsing, answering, refusing, the runtime's
    /// own work) per request its front end parsed, seconds; `None` where the server's CPU or
    /// the request count was not measured.
    pub fn front_end_cost_s(&self) -> Option<f64> {
        let requests = self.requests.filter(|&n| n > 0)? as f64;
        Some((self.server_cpu_s? - self.cpu_s()).max(0.0) / requests)
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

    /// Adds `other`'s handler figures to these (not its requests nor its server CPU).
    pub fn add(&mut self, other: &Work) {
        for (k, w) in &other.per_type {
            let e = self.per_type.entry(k.clone()).or_default();
            *e = e.plus(*w);
        }
    }
}

/// Runs `config` against the mail `server`: the report, and what the server's handlers and
/// the server as a whole did over the report's measured window (after the warm-up) only, as
/// the report's counts cover it.
///
/// Why only that window: on this machine the same request's CPU cost moves twofold from
/// minute to minute (calibrations of the same service a minute apart: 424 and 894 requests per
/// CPU-second), so costs averaged over the warm-up and the run together priced one run at 1.13
/// x capacity.
pub fn load_with_work(
    lab: &Lab,
    server: &MailServer,
    config: LoadConfig,
) -> Result<(Report, Work)> {
    let warmup = config.warmup;
    let snapshot = || (server.cpu_seconds(), crate::poll::fetch(server.admin));
    let (report, before) = std::thread::scope(|s| {
        let before = s.spawn(|| {
            std::thread::sleep(warmup);
            snapshot()
        });
        let report = lab.load(config);
        (report, before.join().ok())
    });
    let report = report?;
    let ((cpu_before, before), (cpu_after, after)) = (before.unwrap_or_default(), snapshot());
    let mut work = Work::between(before.as_ref(), after.as_ref());
    work.server_cpu_s = cpu_after.zip(cpu_before).map(|(a, b)| a - b);
    Ok((report, work))
}

/// The requests of each type in `classes` that `count` picks (the load generator's classes
/// are the mail workload's request types).
fn mix(
    classes: &[seda_load::record::ClassStats],
    count: fn(&seda_load::record::Counts) -> u64,
) -> BTreeMap<String, u64> {
    classes
        .iter()
        .map(|c| (c.name.clone(), count(&c.counts)))
        .collect()
}

/// A run's capacity on the mix it served within the target, each type priced at what it cost
/// in the run ([`MailCapacity::on_mix`]), and the figures behind it.
#[derive(Debug, Clone)]
pub struct RunPrice {
    /// Capacity in requests per second of the served mix.
    pub capacity_per_s: f64,
    calibration_per_s: f64,
    /// The machine's speed in the run against the calibration's (see
    /// `mark_if_machine_moved`).
    speed: Option<f64>,
    served: BTreeMap<String, u64>,
    /// What a request of each type served in time cost, seconds of handler CPU.
    costs: BTreeMap<String, f64>,
    /// Handler CPU seconds of each type over the run's window, whether its requests came in
    /// time, late or not at all: beside the server's CPU, it tells where a core that served
    /// little goodput went (the front end's refusals, late work, or one costly type).
    handler_cpu_s: BTreeMap<String, f64>,
}

impl RunPrice {
    /// Prices the requests of each type `report` completed within the target in the intervals
    /// that start in `[from_s, to_s)` (the span the run's goodput counts), each at what the
    /// service said it cost (its `Server-Timing`), a type without those at what an answered
    /// request of it cost over the run (`work`, the server's handler CPU), and marks the run
    /// `what` loaded where the machine's speed moved (`mark_if_machine_moved`).
    ///
    /// The requests' own costs, because a type's mean misprices the ones answered in time:
    /// a search of a large mailbox costs ten times one of a small one, and under CoDel the
    /// large ones were answered late, so the searches in time were priced at 28 ms each where
    /// the run's 1.7 CPU-seconds of searches bought them far less, and its goodput read 1.06 x
    /// capacity.
    pub fn new(
        lab: &Lab,
        what: &str,
        capacity: &MailCapacity,
        report: &Report,
        (from_s, to_s): (f64, f64),
        work: &Work,
    ) -> RunPrice {
        let served = report.good_by_class_between(from_s, to_s);
        let costs = work.cost_s();
        let mut prices = costs.clone();
        for (kind, c) in report.good_server_cpu_between(from_s, to_s) {
            if c.timed > 0 && c.cpu_s.is_finite() {
                prices.insert(kind, c.cpu_s / c.timed as f64);
            }
        }
        let price = RunPrice {
            capacity_per_s: capacity.on_mix(&served, &prices),
            calibration_per_s: capacity.per_s,
            speed: speed(&served, &capacity.cost_s, &costs),
            served,
            costs: prices,
            handler_cpu_s: work
                .per_type
                .iter()
                .map(|(k, w)| (k.clone(), w.cpu_s))
                .collect(),
        };
        price.mark_if_machine_moved(lab, what);
        price
    }

    /// `summary` with the figures behind the price.
    pub fn annotate(&self, summary: RunSummary) -> RunSummary {
        summary
            .with("capacity_calibration_mix_per_s", self.calibration_per_s)
            .with("speed_against_calibration", self.speed)
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
                (i.t_s, work / i.duration_s)
            })
            .collect()
    }

    /// Marks the run `what` loaded when the machine ran its requests at under
    /// 1 / [`SPEED_APART`](crate::health::SPEED_APART) or over that many times the
    /// calibration's speed ([`speed_moved`]). A scenario sizes its load and its target by the
    /// calibration (`mail-users`: 1024 users five times over capacity), so such a run was not
    /// the experiment planned: on this machine the same requests' CPU moved 3 x over minutes
    /// (`mail-users` calibrated at 730 requests per CPU-second and ran its points at 0.18-0.32
    /// of that speed, refusing 2.1% of its light load; another calibrated at 120 and ran at
    /// 1.4-4.3 x, leaving 128 users unrefused). Every run, controlled or not: a deep backlog
    /// might raise a request's CPU, but the runs do not show it (at 1024 users uncontrolled
    /// servers read 0.43-1.10 of their calibration's speed and controlled ones 0.56-1.00 in
    /// nine runs; in one CI run every `mail-spike` variant read 0.37-0.46).
    fn mark_if_machine_moved(&self, lab: &Lab, what: &str) {
        if let Some(why) = self.speed.and_then(|v| speed_moved(what, v)) {
            lab.mark_loaded(why);
        }
    }
}

/// The machine's speed in a run against the calibration's: the requests the run `served`, of
/// the types both priced, at the calibration's costs (`calibration`) over the same at the
/// run's (`run`). 1 where each type cost what it cost in the calibration; under 1 where the
/// run's requests took more CPU.
fn speed(
    served: &BTreeMap<String, u64>,
    calibration: &BTreeMap<String, f64>,
    run: &BTreeMap<String, f64>,
) -> Option<f64> {
    let (mut at_calibration, mut at_run) = (0.0, 0.0);
    for (kind, &n) in served {
        if let (Some(c), Some(r)) = (calibration.get(kind), run.get(kind)) {
            at_calibration += n as f64 * c;
            at_run += n as f64 * r;
        }
    }
    (at_run > 0.0).then(|| at_calibration / at_run)
}

/// Requests per second of wall time that `addr` completes for closed users without think
/// time, after a warm-up: for a service with no one server whose CPU time the requests could be
/// divided by (replicas behind a balancer, which `cluster` calibrates through HAProxy).
pub fn wall_capacity(lab: &Lab, addr: SocketAddr) -> Result<f64> {
    let mut cfg = busy_users(
        addr,
        CALIBRATION_USERS,
        lab.pick(Duration::from_secs(3), Duration::from_secs(10)),
    )?;
    cfg.warmup = lab.pick(Duration::from_secs(1), Duration::from_secs(3));
    let c = working(lab.load(cfg)?.summary.throughput_per_s)?;
    lab.log(format!("capacity {c:.0} requests/s of wall time"));
    Ok(c)
}

/// `per_s`, the rate a calibration measured, or an error when the service hardly answered.
fn working(per_s: f64) -> Result<f64> {
    if per_s.is_nan() || per_s <= 1.0 {
        bail!("the mail service completed {per_s:.1} requests/s while calibrating: is it working?");
    }
    Ok(per_s)
}

/// The capacity of `server` (uncontrolled, warmed up by [`MailServer::start`]) ([`MailCapacity`]):
/// closed users with no think time in each of `CALIBRATION_POPULATIONS`, their completed
/// requests over the CPU time the server used meanwhile (requests per CPU-second: another
/// process taking part of the server's core does not shrink it; the best population gives
/// `per_s`), and over all of them the handlers' share of that CPU and each type's handler CPU
/// per request. No warm-up: the CPU time read around each run must cover the same requests
/// as the counts.
pub fn mail_capacity(lab: &Lab, server: &MailServer) -> Result<MailCapacity> {
    let mut best: Option<(f64, f64, BTreeMap<String, u64>)> = None;
    let (mut work, mut server_cpu) = (Work::default(), 0.0);
    // Each population's completed requests and the server's CPU meanwhile.
    let mut readings = Vec::new();
    for users_n in CALIBRATION_POPULATIONS {
        let cfg = busy_users(
            server.addr,
            users_n,
            lab.pick(Duration::from_secs(2), Duration::from_secs(6)),
        )?;
        let before = (server.cpu_seconds(), crate::poll::fetch(server.admin));
        let r = lab.load(cfg)?;
        let after = (server.cpu_seconds(), crate::poll::fetch(server.admin));
        let cpu = before.0.zip(after.0).map(|(a, b)| b - a);
        let wall = working(r.summary.throughput_per_s)?;
        let c = match cpu {
            // Without /proc (not Linux), or with too little CPU to divide by, wall time is all
            // there is.
            Some(cpu) if cpu > 0.2 => {
                work.add(&Work::between(before.1.as_ref(), after.1.as_ref()));
                server_cpu += cpu;
                readings.push((users_n, mix(&r.classes, |c| c.completed), cpu));
                r.summary.counts.completed as f64 / cpu
            }
            _ => wall,
        };
        lab.log(format!(
            "{users_n} users: {c:.0} requests per CPU-second of the server ({wall:.0}/s of wall \
             time)"
        ));
        if best.as_ref().is_none_or(|(b, ..)| c > *b) {
            best = Some((c, wall, mix(&r.classes, |c| c.completed)));
        }
    }
    let Some((c, wall, mix)) = best else {
        bail!("no calibration population");
    };
    let handler_share = if server_cpu > 0.0 {
        (work.cpu_s() / server_cpu).min(1.0)
    } else {
        0.0
    };
    let priced = work_per_cpu_s(&readings, &work.cost_s());
    lab.log(format!(
        "{CALIBRATION_READINGS}: {}",
        crate::health::listed(&priced)
    ));
    if let Some(why) = crate::health::disagreement(CALIBRATION_READINGS, &priced) {
        lab.mark_loaded(why);
    }
    lab.log(format!(
        "capacity {c:.0} requests per CPU-second of the server on the calibration's mix \
         ({wall:.0}/s of wall time); handlers {:.0}% of its CPU",
        100.0 * handler_share
    ));
    Ok(MailCapacity {
        per_s: c,
        handler_share,
        cost_s: work.cost_s(),
        mix,
    })
}

/// The calibration's `readings` (each population's completed requests and the server's CPU
/// seconds meanwhile), each priced at the calibration's costs per type (`costs`) per CPU-second
/// of the server, in handler ms: on a steady machine the three read the handlers' share of a
/// saturated server's CPU whatever mix each completed, so where they disagree the machine's
/// speed moved ([`crate::health::disagreement`]).
fn work_per_cpu_s(
    readings: &[(usize, BTreeMap<String, u64>, f64)],
    costs: &BTreeMap<String, f64>,
) -> Vec<(String, f64)> {
    readings
        .iter()
        .map(|(users, mix, cpu)| {
            let work: f64 = mix
                .iter()
                .map(|(kind, &n)| n as f64 * costs.get(kind).copied().unwrap_or(0.0))
                .sum();
            (format!("{users} users"), 1000.0 * work / cpu)
        })
        .collect()
}

/// What [`work_per_cpu_s`] measures, for the log and the reason a run counts as loaded.
const CALIBRATION_READINGS: &str =
    "the calibration's populations (handler ms of work per CPU-second of the server)";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capacity_follows_the_cost_of_the_mix() {
        let cap = MailCapacity {
            per_s: 100.0,
            handler_share: 1.0,
            cost_s: [("login".to_string(), 0.004), ("list".to_string(), 0.001)].into(),
            mix: [("login".to_string(), 50), ("list".to_string(), 50)].into(),
        };
        let none = BTreeMap::new();
        // Lists cost 1 ms of handler CPU: a CPU-second completes 1000.
        let lists = [("list".to_string(), 10)].into();
        assert!((cap.on_mix(&lists, &none) - 1000.0).abs() < 1e-9);
        // Half logins: 2.5 ms a request, 400/s.
        assert!((cap.on_mix(&cap.mix, &none) - 400.0).abs() < 1e-9);
        // The run's own price wins: lists at 4 ms in this run, 250/s.
        let run = [("list".to_string(), 0.004)].into();
        assert!((cap.on_mix(&lists, &run) - 250.0).abs() < 1e-9);
        // A type nobody priced: the calibration's rate.
        assert_eq!(
            cap.on_mix(&[("search".to_string(), 3)].into(), &none),
            100.0
        );
        assert_eq!(cap.on_mix(&BTreeMap::new(), &none), 100.0);
        // A front end that took half the calibration's CPU doubles every price: 500 lists/s.
        let cap = MailCapacity {
            handler_share: 0.5,
            ..cap
        };
        assert!((cap.on_mix(&lists, &none) - 500.0).abs() < 1e-9);
    }

    #[test]
    fn a_calibration_is_unsteady_when_its_populations_price_apart() {
        let costs: BTreeMap<String, f64> =
            [("login".to_string(), 0.004), ("list".to_string(), 0.001)].into();
        let mix = |login: u64, list: u64| -> BTreeMap<String, u64> {
            [("login".to_string(), login), ("list".to_string(), list)].into()
        };
        // Different mixes on a steady machine: 1 s of work per CPU-second each (400 of 1,000
        // requests per CPU-second are logins in one, none in the other).
        let steady = [(8, mix(100, 0), 0.4), (16, mix(0, 1000), 1.0)];
        let unsteady = |r: &[(usize, BTreeMap<String, u64>, f64)]| {
            crate::health::disagreement("populations", &work_per_cpu_s(r, &costs))
        };
        assert_eq!(unsteady(&steady), None);
        // A third population whose requests took 40% more CPU: within the noise.
        let slower = [
            steady[0].clone(),
            steady[1].clone(),
            (32, mix(0, 1000), 1.4),
        ];
        assert_eq!(unsteady(&slower), None);
        // 2.5 times the CPU: the machine slowed.
        let slowed = [steady[0].clone(), (32, mix(0, 1000), 2.5)];
        let why = unsteady(&slowed).expect("unsteady");
        assert!(why.contains("were 2.5 x apart"), "{why}");
        assert!(why.contains("32 users: 400"), "{why}");
    }

    #[test]
    fn speed_compares_a_runs_costs_with_the_calibrations_on_its_mix() {
        let calibration: BTreeMap<String, f64> =
            [("login".to_string(), 0.004), ("list".to_string(), 0.001)].into();
        // Lists at twice their calibrated cost, logins at theirs: 30 lists and 10 logins cost
        // 0.07 s at calibration, 0.1 s in the run.
        let run = [("login".to_string(), 0.004), ("list".to_string(), 0.002)].into();
        let served = [("login".to_string(), 10), ("list".to_string(), 30)].into();
        let v = speed(&served, &calibration, &run).unwrap();
        assert!((v - 0.7).abs() < 1e-9, "{v}");
        // A type only one of them priced is left out; nothing priced, no speed.
        let served = [("search".to_string(), 3)].into();
        assert_eq!(speed(&served, &calibration, &run), None);
    }

    #[test]
    fn work_is_the_difference_of_two_snapshots() {
        // A login's handlers ran 1 s more, 0.5 s of it on the 100 logins they answered.
        let snap = |cpu: f64, answered_cpu: f64, answered: u64| {
            json!({"service": {
                "handler_cpu_s": {"login": cpu},
                "answered_cpu_s": {"login": answered_cpu},
                "answered": {"login": answered},
            }})
        };
        let w = Work::between(Some(&snap(1.0, 1.0, 10)), Some(&snap(2.0, 1.5, 110)));
        let login = w.per_type["login"];
        assert_eq!((login.cpu_s, login.answered), (1.0, 100));
        assert!((w.cost_s()["login"] - 0.005).abs() < 1e-12);
        assert!((w.cpu_s() - 1.0).abs() < 1e-12);
        assert_eq!(
            Work::between(None, Some(&snap(1.0, 1.0, 1))),
            Work::default()
        );
    }
}
