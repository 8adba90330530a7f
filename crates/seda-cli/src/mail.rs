//! `seda mail corpus`, `seda mail load` and `seda serve mail`: the Arashi e-mail service.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use seda_http::{HttpConfig, HttpRequest, HttpServer};
use seda_mail::store::{self, Store};
use seda_mail::user_model::{Mix, THINK_TIME};
use seda_mail::{Corpus, MailEvent, MailService, RequestKind, ServiceOptions, http, load};

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
    /// Database (see `seda mail corpus --help`); created and seeded when empty.
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
    /// HTTP front end: `seda-http` (the shared front end) or `builtin` (seda-mail's own
    /// minimal hyper adapter).
    #[arg(long, default_value = "seda-http", value_parser = ["seda-http", "builtin"])]
    front: String,
    /// Most open connections (seda-http front end); past it a new connection gets 503 and is
    /// closed: the fixed connection limit that 002 compares adaptive control against.
    #[arg(long, default_value_t = HttpConfig::default().max_connections)]
    max_connections: usize,
    /// Emulate a machine this many times slower: each request's handler keeps its core busy
    /// until it has used this many times its own CPU time (1: off; the lab uses it to match the
    /// scale of 002's server).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    slowdown: u32,
    /// Front-end (network) threads; 0: one per core the process may use.
    #[arg(long, default_value_t = 0)]
    http_threads: usize,
    /// One admission controller shared by all request-type stages (002's single-stage
    /// admission control), as `KIND[,NAME=VALUE...]`, e.g. `response_time_tuned,target_s=1`;
    /// a stage given its own `admission` in --config keeps that one.
    #[arg(long, value_name = "KIND[,NAME=VALUE...]")]
    single_admission: Option<String>,
    /// Serve requests whose client has disconnected instead of dropping them (seda-http front
    /// end): a server that cannot tell a client gave up, like 001's bricks without
    /// self-protection. For experiments; it wastes work under overload.
    #[arg(long)]
    serve_abandoned: bool,
}

#[derive(clap::Args, Debug)]
pub struct LoadArgs {
    /// Server address.
    #[arg(long, default_value = "127.0.0.1:8080")]
    addr: SocketAddr,
    /// Emulated users (closed loop).
    #[arg(long, default_value_t = 16)]
    users: u64,
    /// Users in the server's corpus (emulated user i logs in as user (i mod N) + 1).
    #[arg(long, default_value_t = DEFAULT_SEED_USERS)]
    corpus_users: u64,
    /// Measured seconds.
    #[arg(long, default_value_t = 30.0)]
    duration: f64,
    /// Seconds before measuring.
    #[arg(long, default_value_t = 5.0)]
    warmup: f64,
    /// Think time between requests, in ms.
    #[arg(long, default_value_t = THINK_TIME.as_millis() as u64)]
    think_ms: u64,
    /// Only this request type (after the requests it needs first): login, list_folders,
    /// list_messages, show_message, delete, refile, search.
    #[arg(long)]
    only: Option<String>,
    /// Seed of the users' choices.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Service class sent in x-seda-class.
    #[arg(long)]
    class: Option<u8>,
}

fn open(db: &str, prefix: &str) -> Result<Arc<dyn Store>> {
    store::open(db, prefix).map_err(|e| anyhow!("cannot open the mail store {db}: {e}"))
}

fn load_corpus(store: &dyn Store, corpus: &Corpus) -> Result<()> {
    let t0 = Instant::now();
    store
        .reset()
        .map_err(|e| anyhow!("cannot create the tables: {e}"))?;
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
    load_corpus(store.as_ref(), &corpus)?;
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
    let empty = store.audit().map(|a| a.users == 0).unwrap_or(true);
    if empty {
        println!(
            "{} is empty: creating the tables and seeding {} users",
            args.db, args.seed_users
        );
        load_corpus(store.as_ref(), &Corpus::new(args.seed_users, 1))?;
    }
    let config = match &args.config {
        Some(p) => seda::Config::from_file(p).map_err(|e| anyhow!("{}: {e}", p.display()))?,
        None => seda::Config::default(),
    };
    let rt = seda::Runtime::builder()
        .config(config)
        .start()
        .map_err(|e| anyhow!("cannot start the runtime: {e}"))?;
    let shared_admission = match &args.single_admission {
        Some(spec) => Some(single_admission(spec).context("--single-admission")?),
        None => None,
    };
    let options = ServiceOptions {
        threads: args.threads,
        threshold: args.threshold,
        slowdown: args.slowdown,
        shared_admission,
        ..ServiceOptions::default()
    };
    let service = MailService::start(&rt, store.clone(), &options)
        .map_err(|e| anyhow!("cannot build the mail stages: {e}"))?;
    let deadline = args.deadline_ms.map(Duration::from_millis);
    if args.serve_abandoned && args.front == "builtin" {
        bail!("--serve-abandoned needs the seda-http front end (drop --front builtin)");
    }
    if args.front == "builtin" {
        serve_builtin(args, &store, service, deadline)?;
    } else {
        serve_seda_http(args, &rt, &store, service, deadline)?;
    }
    print_stage_totals(&rt.stats());
    let report = rt.shutdown();
    println!(
        "stopped: drained {}, abandoned {}",
        report.drained, report.abandoned
    );
    Ok(())
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

/// Serves through the shared front end: an inline `mail.route` stage turns each
/// [`HttpRequest`] into a [`MailEvent`] for its request type's stage, answering through the
/// request's reply slot.
fn serve_seda_http(
    args: &ServeArgs,
    rt: &seda::Runtime,
    store: &Arc<dyn Store>,
    service: Arc<MailService>,
    deadline: Option<Duration>,
) -> Result<()> {
    let serve_abandoned = args.serve_abandoned;
    let route = rt
        .stage(
            seda::Stage::builder("mail.route")
                .inline()
                .handler(seda::handler::each(move |req: HttpRequest, _cx| {
                    let (mut meta, head, body, reply) = req.into_parts();
                    if serve_abandoned {
                        // A token the front end does not hold: nobody cancels it.
                        meta.cancel = seda::CancelToken::new();
                    }
                    if let Some(d) = deadline {
                        meta.deadline = Some(meta.born + d);
                    }
                    match http::parse_head(&head, &body, meta) {
                        Err(resp) => {
                            reply.send(http::to_hyper(resp));
                        }
                        Ok(request) => {
                            service.dispatch(MailEvent::with_callback(request, move |resp| {
                                reply.send(http::to_hyper(resp));
                            }));
                        }
                    }
                })),
        )
        .map_err(|e| anyhow!("cannot build the route stage: {e}"))?;
    let config = HttpConfig {
        addr: args.addr,
        retry_after_s: seda_mail::RETRY_AFTER_S,
        max_body_bytes: seda_mail::MAX_FORM_BYTES,
        max_connections: args.max_connections,
        threads: args.http_threads,
        admin_addr: args.admin.0,
        ..HttpConfig::default()
    };
    let server = HttpServer::start(config, route, Some(rt.clone()))
        .with_context(|| format!("cannot listen on {}", args.addr))?;
    println!(
        "mail service ({}, seda-http) listening on http://{}/  (log in as user1 / pass1; \
         Ctrl-C stops)",
        store.backend(),
        server.local_addr()
    );
    crate::admin::announce(server.admin_addr());
    let waiter = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the signal runtime")?;
    waiter.block_on(stop_signal());
    println!("shutting down");
    let done = server.shutdown(Duration::from_secs(5));
    println!("front end stopped: {done:?}");
    Ok(())
}

/// Serves through seda-mail's own minimal adapter.
fn serve_builtin(
    args: &ServeArgs,
    store: &Arc<dyn Store>,
    service: Arc<MailService>,
    deadline: Option<Duration>,
) -> Result<()> {
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the network runtime")?;
    tokio.block_on(async {
        let (listener, addr) = http::bind(args.addr)
            .await
            .with_context(|| format!("cannot listen on {}", args.addr))?;
        println!(
            "mail service ({}, builtin adapter) listening on http://{addr}/  (log in as user1 / \
             pass1; Ctrl-C stops)",
            store.backend()
        );
        http::serve(
            listener,
            service,
            http::HttpOptions { deadline },
            stop_signal(),
        )
        .await;
        println!("shutting down");
        anyhow::Ok(())
    })
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

/// `seda mail load`.
pub fn load(args: &LoadArgs) -> Result<()> {
    let mix = match &args.only {
        None => Mix::Markov,
        Some(name) => match RequestKind::from_name(name) {
            Some(k) => Mix::Only(k),
            None => bail!(
                "unknown request type `{name}`: use one of {}",
                RequestKind::ALL.map(RequestKind::name).join(", ")
            ),
        },
    };
    if !(args.duration > 0.0 && args.duration < 86_400.0 && args.warmup >= 0.0) {
        bail!("--duration must be in (0, 86400) seconds and --warmup at least 0");
    }
    let opts = load::LoadOptions {
        addr: args.addr,
        users: args.users,
        corpus_users: args.corpus_users,
        duration: Duration::from_secs_f64(args.duration),
        warmup: Duration::from_secs_f64(args.warmup.min(3600.0)),
        think: Duration::from_millis(args.think_ms),
        mix,
        seed: args.seed,
        class: args.class,
    };
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the network runtime")?;
    println!(
        "{} users, think {} ms, {} s after {} s warm-up, mix {}, against http://{}",
        args.users,
        args.think_ms,
        args.duration,
        args.warmup,
        args.only.as_deref().unwrap_or("markov"),
        args.addr
    );
    let report = tokio.block_on(load::run(opts));
    print!("{}", report.table());
    Ok(())
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
