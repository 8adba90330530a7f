//! A running `seda serve mail`: started on a fresh copy of the corpus with a chosen control,
//! warmed up, slowed down on demand, stopped (and audited).

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use seda_mail::store::Audit;

use super::corpus::{audit_db, corpus, remove_db};
use super::options::stage_config;
use super::users::warm;
use super::{CORPUS_USERS, Control, ServeOptions};
use crate::child::Child;
use crate::lab::Lab;

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
        crate::procfs::process_cpu_seconds(self.child.pid())
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
