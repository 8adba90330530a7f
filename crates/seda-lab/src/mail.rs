//! The e-mail service (Arashi) as the scenarios run it: a seeded SQLite corpus, `seda serve
//! mail` as a pinned child process with a chosen overload control, and the emulated users.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use seda_load::{ClientConfig, Closed, LoadConfig, Model, Target};
use seda_mail::RequestKind;
use seda_mail::workload::MailWorkload;
use serde_json::{Value, json};

use crate::child::Child;
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
/// WC03's wait after a rejection before logging in again.
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

/// The runtime configuration for `control`: per-stage admission, and queues left unbounded
/// so the controller (or nothing) is what limits them.
fn stage_config(control: &Control) -> String {
    let mut toml = String::new();
    for kind in RequestKind::ALL {
        let _ = writeln!(
            toml,
            "[stages.\"{}\"]\nthreshold = 1000000",
            kind.stage_name()
        );
        if let Control::PerStage { kind: k, params } = control {
            let _ = write!(toml, "admission = {{ kind = \"{k}\"");
            for (name, v) in params {
                let _ = write!(toml, ", {name} = {v:?}");
            }
            toml += " }\n";
        }
    }
    toml
}

/// The mail store's table layout the cached corpus was built with; raise it when the layout
/// changes (2: hashed passwords and a class per user; 3: cheaper password hashes).
const CORPUS_LAYOUT: u32 = 3;

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
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            slowdown: SLOWDOWN,
            threads: None,
            deadline_ms: None,
            serve_abandoned: false,
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
        let db = lab.file(&format!("{name}.db"));
        remove_db(&db);
        std::fs::copy(corpus(lab)?, &db).context("cannot copy the corpus")?;
        let config = lab.file(&format!("{name}.toml"));
        std::fs::write(&config, stage_config(control))?;
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
        cmd.arg(&db).arg("--config").arg(&config);
        cmd.args(["--slowdown", &options.slowdown.to_string()]);
        // The lab's load generator plays a trusted proxy: `classes` sends each user's class in
        // `x-seda-class` (the server otherwise takes the class from the session).
        cmd.arg("--trust-class-header");
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
        Ok(MailServer { addr, admin, child })
    }

    /// Stops the server (SIGTERM, then SIGKILL) and removes its database copy.
    pub fn stop(self, lab: &Lab, name: &str) {
        self.child.stop();
        remove_db(&lab.file(&format!("{name}.db")));
    }
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
        deadline: Duration::from_secs(30),
        connect_timeout: Duration::from_secs(3),
        error_pause: Duration::from_secs(1),
        ..ClientConfig::default()
    };
    cfg.keep_interval_histograms = true;
    Ok(cfg)
}

/// Users that saturate the service when calibrating. More users lower the measured figure
/// (with 256 or 1000, a short run sees mostly the slow start of sessions piling up: 250 and
/// 135 requests/s against 320 with 32, measured on one machine), so this is the peak.
const CALIBRATION_USERS: usize = 32;

/// The service's capacity in requests per second: closed users with no think time against an
/// uncontrolled server, after a warm-up.
pub fn capacity(lab: &Lab, addr: SocketAddr) -> Result<f64> {
    let mut cfg = users(
        addr,
        CALIBRATION_USERS,
        lab.pick(Duration::from_secs(3), Duration::from_secs(10)),
        1.0,
    )?;
    if let Model::Closed(c) = &mut cfg.model {
        c.think = Duration::ZERO;
    }
    cfg.warmup = lab.pick(Duration::from_secs(1), Duration::from_secs(3));
    let r = lab.load(cfg)?;
    let c = r.summary.throughput_per_s;
    if c.is_nan() || c <= 1.0 {
        bail!("the mail service completed {c:.1} requests/s while calibrating: is it working?");
    }
    lab.log(format!("capacity {c:.0} requests/s"));
    Ok(c)
}
