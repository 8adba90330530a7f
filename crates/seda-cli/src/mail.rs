//! `seda mail corpus` and `seda serve mail`: the Arashi e-mail service. The request path lives
//! in `seda_mail::MailServer`; this file parses flags and calls it.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use seda_http::HttpConfig;
use seda_mail::search_gate::SearchConnections;
use seda_mail::store::{self, Store};
use seda_mail::{Corpus, MailServer, MailServerConfig, ServiceOptions};
use tokio::signal::unix::{SignalKind, signal};

/// Where `seda serve mail` keeps its database when no `--db` is given.
const DEFAULT_DB: &str = "seda-mail.db";
/// Users seeded into an empty database by `seda serve mail`.
pub(crate) const DEFAULT_SEED_USERS: u64 = 100;

#[derive(clap::Args, Debug)]
pub struct CorpusArgs {
    /// Database: a path or sqlite://path, mysql://root@127.0.0.1:3306/test,
    /// postgres://postgres@127.0.0.1:5432/test.
    #[arg(long, default_value = DEFAULT_DB)]
    db: String,
    /// Users to generate (each with 4 to 7 folders of 1 to 12,794 messages).
    #[arg(long, default_value_t = DEFAULT_SEED_USERS)]
    users: u64,
    /// Seed: the same seed gives the same corpus.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Largest folder (the paper's 12,794 by default).
    #[arg(long, default_value_t = seda_mail::corpus::MAX_FOLDER)]
    max_folder: i64,
    /// Prefix of the table names.
    #[arg(long, default_value = "")]
    prefix: String,
}

#[derive(clap::Args, Debug)]
pub struct ServeArgs {
    /// Database (see `seda mail corpus --help`); seeded only when it has none of the mail
    /// tables; a database with some of them, or tables of another shape, is refused untouched.
    #[arg(long, default_value = DEFAULT_DB)]
    db: String,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8080")]
    addr: SocketAddr,
    /// Admin address: dashboard, /metrics, /_seda/stats, /_seda/graph; never the service port
    /// (`off`: none).
    #[arg(long, default_value = crate::admin::DEFAULT)]
    admin: crate::admin::AdminAddr,
    /// Users seeded into an empty database.
    #[arg(long, default_value_t = DEFAULT_SEED_USERS)]
    seed_users: u64,
    /// Worker threads per request-type stage.
    #[arg(long, default_value_t = 2)]
    threads: usize,
    /// Queue threshold per request-type stage (admission control).
    #[arg(long, default_value_t = 64)]
    threshold: usize,
    /// Runtime configuration file (TOML; stages are named mail.login, mail.search...).
    #[arg(long)]
    config: Option<std::path::PathBuf>,
    /// Prefix of the table names.
    #[arg(long, default_value = "")]
    prefix: String,
    /// Drop (503) requests not answered within this many ms, even inside the database.
    #[arg(long)]
    deadline_ms: Option<u64>,
    /// Most open connections ; past it a new connection gets 503 and is
    /// closed: the fixed connection limit that WC03 compares adaptive control against.
    #[arg(long, default_value_t = HttpConfig::default().max_connections)]
    max_connections: usize,
    /// Refusals (503s) a second the server answers at once, across its connections; past it a
    /// refusal waits its turn, so users that resend at once cannot spend the CPU on
    /// refusals. 0: no server-wide cap.
    #[arg(long, default_value_t = HttpConfig::default().refusals_per_s)]
    refusals_per_s: u32,
    /// Run the handlers on an emulated processor of this many virtual cores: after its real
    /// work each request holds it for its stated cost (WC03's Arashi, scaled: see
    /// `seda_mail::cost`), so the service's capacity is known before a run (about 480
    /// requests a second per core on the user model's mix). Off by default: each request costs
    /// what it costs this machine.
    #[arg(long, value_parser = cores_arg)]
    cores: Option<f64>,
    /// Front-end (network) threads; 0: one per core the process may use.
    #[arg(long, default_value_t = 0)]
    http_threads: usize,
    /// One admission controller shared by all request-type stages (WC03's single-stage
    /// admission control), as `KIND[,NAME=VALUE...]`, e.g. `response_time_tuned,target_s=1`;
    /// a stage given its own `admission` in --config keeps that one.
    #[arg(long, value_name = "KIND[,NAME=VALUE...]")]
    single_admission: Option<String>,
    /// Serve requests whose client has disconnected instead of dropping them: a server that cannot tell a client gave up, like SSM04's bricks without
    /// self-protection. For experiments; it wastes work under overload.
    #[arg(long)]
    serve_abandoned: bool,
    /// Take each request's class from its `x-seda-class` header or `class` cookie, as set by a
    /// trusted proxy (or the lab's load generator). Off by default: the class is the logged-in
    /// user's (`users.class`), since a client that picks its own class picks the top one.
    #[arg(long)]
    trust_class_header: bool,
    /// Answer HAProxy's agent-check on this address (`127.0.0.1:0`: a free port, printed as
    /// `agent-check: ADDR`): a weight steered by the share of arriving requests the stages
    /// serve (rejected and dropped ones lower it), `drain` while they serve almost none, so a
    /// load balancer sends a struggling replica less.
    #[arg(long)]
    agent: Option<SocketAddr>,
    /// On SIGUSR1, make the emulated processor (--cores) this many times slower; on SIGUSR2,
    /// back to its speed. The lab slows one replica of a cluster mid-run this way (`seda lab
    /// run cluster`), as a noisy neighbour or a failing disk would.
    #[arg(long, requires = "cores", value_parser = clap::value_parser!(u32).range(1..=1000))]
    slow_on_usr1: Option<u32>,
    /// Run searches on a pool of this many database connections of their own (more stage
    /// threads than connections queue searches on the pool): a contended resource the runtime
    /// watches, holder and waiters (see `seda_mail::search_gate`). Off by default.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=1024))]
    search_connections: Option<u64>,
    /// Cut, as terminated, the search hogging a connection of --search-connections while
    /// others wait for it (held 8 x the usual hold and 100 ms, 2 waiters: seda's
    /// `CulpritPolicy`), instead of the searches queued behind it.
    #[arg(long, requires = "search_connections")]
    cut_culprits: bool,
}

/// `--search-connections` and `--cut-culprits`.
fn search_connections(args: &ServeArgs) -> Result<Option<SearchConnections>> {
    let Some(n) = args.search_connections else {
        return Ok(None);
    };
    let n = usize::try_from(n).context("--search-connections")?;
    let pool = SearchConnections::new(n).map_err(|e| anyhow!("--search-connections: {e}"))?;
    Ok(Some(if args.cut_culprits {
        pool.cutting(seda::CulpritPolicy::default())
    } else {
        pool
    }))
}

/// `--cores`: a number of virtual cores in [0.01, 1024].
fn cores_arg(s: &str) -> Result<f64, String> {
    let max = seda::processor::MAX_CORES;
    match s.parse::<f64>() {
        Ok(c) if (0.01..=max).contains(&c) => Ok(c),
        _ => Err(format!(
            "give a number of cores in [0.01, {max}], not `{s}`"
        )),
    }
}

fn open(db: &str, prefix: &str) -> Result<Arc<dyn Store>> {
    store::open(db, prefix)
        .map_err(|e| anyhow!("cannot open the mail store {}: {e}", store::redact(db)))
}

/// Creates the tables (dropping old ones first only when `replace`: `seda mail corpus`) and
/// loads `corpus` into them.
fn load_corpus(store: &dyn Store, corpus: &Corpus, replace: bool) -> Result<()> {
    let t0 = Instant::now();
    let made = if replace {
        store.reset()
    } else {
        store.create()
    };
    made.map_err(|e| anyhow!("cannot create the tables: {e}"))?;
    let n = store
        .load(corpus)
        .map_err(|e| anyhow!("corpus load failed (nothing was kept): {e}"))?;
    let secs = t0.elapsed().as_secs_f64();
    println!(
        "loaded {} users, {} folders, {} messages ({:.1} MB) into {} in {:.2} s ({:.0} messages/s)",
        n.users,
        n.folders,
        n.messages,
        n.bytes as f64 / 1e6,
        store.backend(),
        secs,
        n.messages as f64 / secs.max(1e-9)
    );
    Ok(())
}

/// `seda mail corpus`.
pub fn corpus(args: &CorpusArgs) -> Result<()> {
    let store = open(&args.db, &args.prefix)?;
    let corpus = Corpus::with_max_folder(args.users, args.seed, args.max_folder);
    load_corpus(store.as_ref(), &corpus, true)?;
    let a = store.audit().map_err(|e| anyhow!("audit failed: {e}"))?;
    println!(
        "audit: {} users, {} messages, folder counts sum {}, inconsistent folders {}",
        a.users, a.messages, a.folder_counts, a.bad_folders
    );
    Ok(())
}

/// `seda serve mail`.
pub fn serve(args: &ServeArgs) -> Result<()> {
    let store = open(&args.db, &args.prefix)?;
    seed_if_new(store.as_ref(), args)?;
    let runtime = match &args.config {
        Some(p) => seda::Config::from_file(p).map_err(|e| anyhow!("{}: {e}", p.display()))?,
        None => seda::Config::default(),
    };
    let shared_admission = match &args.single_admission {
        Some(spec) => Some(single_admission(spec).context("--single-admission")?),
        None => None,
    };
    let config = MailServerConfig {
        http: HttpConfig {
            addr: args.addr,
            max_connections: args.max_connections,
            refusals_per_s: args.refusals_per_s,
            threads: args.http_threads,
            admin_addr: args.admin.0,
            ..HttpConfig::default()
        },
        runtime,
        service: ServiceOptions {
            threads: args.threads,
            threshold: args.threshold,
            processor: args
                .cores
                .map(|c| Arc::new(seda::EmulatedProcessor::new(c))),
            shared_admission,
            trust_class_header: args.trust_class_header,
            search_connections: search_connections(args)?,
            ..ServiceOptions::default()
        },
        deadline: args.deadline_ms.map(Duration::from_millis),
        serve_abandoned: args.serve_abandoned,
    };
    let server = MailServer::start(store, config)
        .with_context(|| format!("cannot serve on {}", args.addr))?;
    println!(
        "mail service ({}) listening on http://{}/  (log in as user1 / pass1; Ctrl-C stops)",
        server.backend(),
        server.local_addr()
    );
    crate::admin::announce(server.admin_addr());
    let waiter = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the signal runtime")?;
    waiter.block_on(async {
        if let (Some(slow), Some(processor)) = (args.slow_on_usr1, server.service().processor()) {
            let processor = processor.clone();
            let mut usr1 = signal(SignalKind::user_defined1()).context("cannot watch SIGUSR1")?;
            let mut usr2 = signal(SignalKind::user_defined2()).context("cannot watch SIGUSR2")?;
            tokio::spawn(async move {
                loop {
                    let times = tokio::select! {
                        _ = usr1.recv() => slow,
                        _ = usr2.recv() => 1,
                    };
                    processor.set_speed(1.0 / f64::from(times));
                    println!("processor {times} x slower");
                }
            });
        }
        if let Some(addr) = args.agent {
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .with_context(|| format!("cannot listen for agent checks on {addr}"))?;
            println!("agent-check: {}", listener.local_addr()?);
            let runtime = server.runtime().clone();
            tokio::spawn(seda_proxy::serve_agent(listener, move || {
                agent_sample(&runtime.stats())
            }));
        }
        stop_signal().await;
        Ok::<(), anyhow::Error>(())
    })?;
    println!("shutting down");
    let stats = server.runtime().stats();
    let done = server.shutdown(Duration::from_secs(5));
    println!("front end stopped: {:?}", done.http);
    print_stage_totals(&stats);
    println!(
        "stopped: drained {}, abandoned {}",
        done.runtime.drained, done.runtime.abandoned
    );
    Ok(())
}

/// Seeds a database that has none of the mail tables; serves one whose tables are whole and
/// consistent enough to audit; refuses anything else. It never drops a table: only `seda mail
/// corpus` does, when asked to. (Treating "the audit failed" as "empty" once let a transient
/// error or a foreign table named `users` wipe a database at start.)
fn seed_if_new(store: &dyn Store, args: &ServeArgs) -> Result<()> {
    // The URL may carry a password: only its redacted form is printed.
    let db = seda_mail::store::redact(&args.db);
    let tables = store
        .tables()
        .map_err(|e| anyhow!("cannot read the catalogue of {}: {e}; not starting", db))?;
    if tables == 0 {
        println!(
            "{} has no mail tables: creating them and seeding {} users",
            db, args.seed_users
        );
        return load_corpus(store, &Corpus::new(args.seed_users, 1), false);
    }
    match store.audit() {
        Ok(a) if tables == 3 => {
            // A login reads every column a login needs (the hash, the class): tables made by
            // an older version fail here rather than at every login.
            if let Err(e) = store.login("", "", &seda::Meta::new()) {
                bail!(
                    "{} has mail tables of an older layout ({e}): refusing to start (nothing \
                     was changed; `seda mail corpus --db ...` recreates them)",
                    db
                );
            }
            if a.users == 0 {
                println!("warning: {} has the mail tables but no users", db);
            }
            // Indexes a newer version lists by (CREATE INDEX IF NOT EXISTS; no data changes).
            store
                .upgrade()
                .map_err(|e| anyhow!("cannot add the listing indexes to {}: {e}", db))
        }
        Ok(_) => bail!(
            "{} has {tables} of the 3 mail tables: refusing to start on a partial schema \
             (nothing was changed; `seda mail corpus --db ...` recreates the tables, dropping \
             what they hold)",
            db
        ),
        Err(e) => bail!(
            "{} has mail tables this service cannot read ({e}): refusing to start (nothing \
             was changed; `seda mail corpus --db ...` recreates the tables, dropping what they \
             hold)",
            db
        ),
    }
}

/// Builds the controller of `--single-admission`: `KIND[,NAME=VALUE...]`.
fn single_admission(spec: &str) -> Result<seda_control::SharedController> {
    let mut parts = spec.split(',').map(str::trim);
    let kind = parts.next().unwrap_or_default();
    let mut params = std::collections::BTreeMap::new();
    for p in parts.filter(|p| !p.is_empty()) {
        let Some((name, value)) = p.split_once('=') else {
            bail!("`{p}` is not NAME=VALUE (e.g. target_s=1)");
        };
        let value: f64 = value
            .trim()
            .parse()
            .map_err(|_| anyhow!("`{name}` must be a number, got `{}`", value.trim()))?;
        params.insert(name.trim().to_string(), value);
    }
    let controller = seda_control::build_admission(kind, &params).map_err(|e| anyhow!("{e}"))?;
    Ok(seda_control::SharedController::new(controller))
}

/// The counts the agent-check answers from, summed over the stages with a queue (the
/// request-type stages; the inline route stage only passes requests on, so counting it too
/// would count every request twice). When every such stage's controller keeps a concurrency
/// limit (`--single-admission vegas`...), their sum becomes `maxconn:N`.
fn agent_sample(stats: &seda::RuntimeSnapshot) -> seda_control::AgentSample {
    let stages: Vec<_> = stats.stages.iter().filter(|s| s.mode != "inline").collect();
    let limits: Option<Vec<f64>> = stages
        .iter()
        .map(|s| s.controller.as_ref()?.state.get("limit").copied())
        .collect();
    seda_control::AgentSample {
        admitted: stages.iter().map(|s| s.totals.counters.admitted).sum(),
        rejected: stages
            .iter()
            .map(|s| s.totals.counters.rejected_total)
            .sum(),
        completed: stages.iter().map(|s| s.totals.counters.completed).sum(),
        outstanding: stages
            .iter()
            .map(|s| {
                let c = &s.totals.counters;
                c.admitted
                    .saturating_sub(c.completed + c.terminated + c.failed + c.dropped_total)
            })
            .sum(),
        limit: limits
            .filter(|l| !l.is_empty())
            .map(|l| l.iter().sum::<f64>().round().max(0.0) as u64),
    }
}

/// What each request-type stage did while the server ran (server-side response times:
/// from the request's arrival to the end of its handler).
fn print_stage_totals(stats: &seda::RuntimeSnapshot) {
    println!(
        "{:<20} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "stage", "completed", "rejected", "dropped", "p50 ms", "p90 ms", "p99 ms"
    );
    let ms = |v: Option<f64>| v.map_or("-".to_string(), |s| format!("{:.1}", s * 1000.0));
    for s in &stats.stages {
        let t = &s.totals;
        println!(
            "{:<20} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
            s.name,
            t.counters.completed,
            t.counters.rejected_total,
            t.counters.dropped_total,
            ms(t.response.p50_s),
            ms(t.response.p90_s),
            ms(t.response.p99_s)
        );
    }
}

/// Completes on Ctrl-C (SIGINT) or SIGTERM.
async fn stop_signal() {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term => {}
    }
}

#[cfg(test)]
mod tests {
    use super::single_admission;
    use seda::AdmissionController;

    #[test]
    fn single_admission_parses_a_kind_and_its_parameters() {
        let c = single_admission("response_time_tuned, target_s=0.5").expect("valid");
        assert_eq!(c.name(), "response_time_tuned");
        let e = single_admission("response_time_tuned,target_s").unwrap_err();
        assert!(e.to_string().contains("NAME=VALUE"), "{e}");
        let e = single_admission("response_time_tuned,target_s=soon").unwrap_err();
        assert!(e.to_string().contains("must be a number"), "{e}");
        let e = single_admission("fifo").unwrap_err();
        assert!(e.to_string().contains("vegas"), "lists the kinds: {e}");
    }
}
