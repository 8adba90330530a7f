//! `seda load`: the load generator's command line.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::{Args, ValueEnum};
use seda_control::{AimdWindowConfig, RetryBudgetConfig, ThrottleConfig};
use seda_load::workload::{SpecWeb, Synthetic, UrlList, Workload};
use seda_load::{
    Arrivals, ClientConfig, Closed, Eager, LoadConfig, Model, Open, PartlyOpen, Schedule, Target,
    parse_duration,
};

fn dur(s: &str) -> Result<Duration, String> {
    parse_duration(s)
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum ModelArg {
    /// N users that send, wait for the reply, think, and send again.
    Closed,
    /// Requests arrive at a rate whatever the server does (latency from the intended send time).
    Open,
    /// Sessions arrive at a rate; each stays for another request with probability --stay.
    PartlyOpen,
    /// -c users, each sending its next request on the reply or after an expected time
    /// (--patience-min to --patience-max), whichever is first: FAIR07's partly-open clients.
    Eager,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum ArrivalsArg {
    Poisson,
    Constant,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum WorkloadArg {
    /// The given URL(s) (and --url-file), picked uniformly at random.
    Urls,
    /// The SPECweb99 static mix under the URL's path (file-0 quirk fixed).
    Specweb,
    /// The SPECweb99 mix exactly as Haboob's client drew it (never requests file 0).
    SpecwebOriginal,
    /// Service times drawn from --synthetic, sent as ?PARAM=MICROSECONDS.
    Synthetic,
    /// Arashi's e-mail users (log in, then a Markov walk over the request types) against
    /// `seda serve mail`; think time 20 ms and a 5 s wait after a 503 unless --think/--backoff
    /// say otherwise.
    Mail,
}

/// Drive an HTTP server with closed, open or partly-open users and report latency, throughput,
/// goodput, rejections and fairness.
#[derive(Args, Debug)]
pub struct LoadArgs {
    /// Target URL(s), http://host:port/path; several URLs must share host and port.
    #[arg(required = true)]
    urls: Vec<String>,
    /// Loop model.
    #[arg(long, value_enum, default_value = "closed")]
    model: ModelArg,
    /// Closed model: number of users (connections).
    #[arg(short = 'c', long, default_value_t = 64)]
    users: usize,
    /// Think time between a reply and the next request (closed and partly-open) [default: 0,
    /// or 20 ms with `--workload mail`].
    #[arg(long, value_parser = dur)]
    think: Option<Duration>,
    /// Draw think times from an exponential distribution with mean --think.
    #[arg(long)]
    think_exp: bool,
    /// Closed model: start the users gradually over this time.
    #[arg(long, value_parser = dur, default_value = "0s")]
    ramp: Duration,
    /// Open model: requests per second; partly-open: sessions per second.
    #[arg(short = 'r', long, default_value_t = 1000.0)]
    rate: f64,
    /// Open model: arrival process.
    #[arg(long, value_enum, default_value = "poisson")]
    arrivals: ArrivalsArg,
    /// Open model: most connections; partly-open: most concurrent sessions.
    #[arg(long, default_value_t = 10_000)]
    max_connections: usize,
    /// Open model: most due requests waiting for a connection (beyond: dropped, and counted).
    #[arg(long, default_value_t = 1_000_000)]
    max_backlog: usize,
    /// Eager model: shortest expected time after a send; past it without a reply the user
    /// sends again (FAIR07's partly-open clients).
    #[arg(long, value_parser = dur, default_value = "200ms")]
    patience_min: Duration,
    /// Eager model: longest expected time after a send.
    #[arg(long, value_parser = dur, default_value = "600ms")]
    patience_max: Duration,
    /// Eager model: most requests one user has in flight.
    #[arg(long, default_value_t = seda_load::Eager::DEFAULT_MAX_OUTSTANDING)]
    max_outstanding: usize,
    /// Partly-open model: probability that a session sends another request after a reply.
    #[arg(long, default_value_t = 0.8)]
    stay: f64,
    /// Length of the run.
    #[arg(short = 'd', long, value_parser = dur, default_value = "10s")]
    duration: Duration,
    /// Load applied first and not recorded (schedules count time from its start).
    #[arg(long, value_parser = dur, default_value = "0s")]
    warmup: Duration,
    /// Users or rate over time: "0s=3,30s=1000,90s=3" (steps), "10s~100" (ramp to 100 at 10 s).
    #[arg(long, conflicts_with = "schedule_file")]
    schedule: Option<String>,
    /// The schedule as a TOML file ([[point]] at = "30s", level = 1000, ramp = false).
    #[arg(long)]
    schedule_file: Option<PathBuf>,
    /// What to request.
    #[arg(long, value_enum, default_value = "urls")]
    workload: WorkloadArg,
    /// More URLs (paths on the same host), one per line.
    #[arg(long)]
    url_file: Option<PathBuf>,
    /// SPECweb: number of directories (Haboob used 680, for connload 1000).
    #[arg(long, default_value_t = 680)]
    specweb_dirs: usize,
    /// Synthetic mix: "P:const:D,P:exp:MEAN,P:uniform:LOW:HIGH".
    #[arg(long, default_value = "1:const:1ms")]
    synthetic: String,
    /// Synthetic mix: the query parameter carrying the service time in microseconds.
    #[arg(long, default_value = "service_us")]
    synthetic_param: String,
    /// Requests per connection before reconnecting (0: keep the connection).
    #[arg(long, default_value_t = 0)]
    requests_per_conn: u32,
    /// Connect timeout.
    #[arg(long, value_parser = dur, default_value = "3s")]
    connect_timeout: Duration,
    /// Per-request deadline from the intended send time (a timeout past it).
    #[arg(long, value_parser = dur, default_value = "10s")]
    deadline: Duration,
    /// After a 503: wait this long and start over, on the same connection if the server kept
    /// it open (the e-mail experiments use 5s).
    #[arg(long, value_parser = dur)]
    backoff: Option<Duration>,
    /// After a 503: wait as long as its `Retry-After` asks where that is longer than --backoff
    /// (at most an hour), times SCALE if given (a test that runs time scaled down).
    #[arg(long, value_name = "SCALE", num_args = 0..=1, default_missing_value = "1")]
    honor_retry_after: Option<f64>,
    /// Bound outstanding requests with SSM's AIMD window.
    #[arg(long)]
    aimd: bool,
    /// AIMD: largest window.
    #[arg(long, default_value_t = 10_000.0)]
    aimd_max: f64,
    /// AIMD: a reply slower than this shrinks the window.
    #[arg(long, value_parser = dur, default_value = "1s")]
    aimd_timeout: Duration,
    /// AIMD, open model: refuse a request that finds the window full at once, as SSM's stub
    /// does, instead of letting it wait for a slot.
    #[arg(long, requires = "aimd")]
    aimd_reject: bool,
    /// Throttle adaptively, as Google's clients do: refuse a request here, never sending it,
    /// with probability max(0, (requests - K x accepts) / (requests + 1)) over a window,
    /// accepts being the replies that were not a 503 (K = --throttle-k).
    #[arg(long)]
    throttle: bool,
    /// Throttle: requests sent per accepted one before refusing locally.
    #[arg(long, requires = "throttle", default_value_t = 2.0)]
    throttle_k: f64,
    /// Throttle: the window requests and accepts are counted over.
    #[arg(long, requires = "throttle", value_parser = dur, default_value = "10s")]
    throttle_window: Duration,
    /// Send a request the server refused (503) again at once, up to N times: a client with
    /// retries, which turns an overload into a retry storm unless --retry-budget bounds it.
    #[arg(long, default_value_t = 0, value_name = "N")]
    retries: u32,
    /// Retry at most this share of the requests sent (over 10 s, plus one retry a second),
    /// as Finagle's and Envoy's retry budgets do; a retry over budget ends the request refused.
    #[arg(long, requires = "retries", value_name = "SHARE")]
    retry_budget: Option<f64>,
    /// Goodput counts requests completed within this.
    #[arg(long, value_parser = dur, default_value = "100ms")]
    goodput_target: Duration,
    /// Reporting interval.
    #[arg(long, value_parser = dur, default_value = "1s")]
    interval: Duration,
    /// Largest response body accepted, in bytes.
    #[arg(long, default_value_t = 256 * 1024 * 1024)]
    max_body_bytes: u64,
    /// Print the whole result as JSON (summary, series, classes, clients).
    #[arg(long)]
    json: bool,
    /// No live progress line (it is shown only when stderr is a terminal anyway).
    #[arg(long)]
    no_progress: bool,
    /// Pin the generator to this CPU.
    #[arg(long)]
    cpu: Option<usize>,
    /// Open and partly-open: pace on tokio's 1 ms timer (arrivals up to ~2 ms late, counted as
    /// latency) instead of a timerfd.
    #[arg(long)]
    coarse_pacing: bool,
    /// Seed for all random choices.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Mail workload: accounts in the corpus (`seda serve mail --seed-users`).
    #[arg(long, default_value_t = crate::mail::DEFAULT_SEED_USERS)]
    mail_users: u64,
    /// Mail workload: send only this request type (login, folders, list, show, delete, refile,
    /// search) after the requests it needs first, to load one stage.
    #[arg(long)]
    mail_only: Option<String>,
}

/// Runs `seda load`.
pub fn run(mut args: LoadArgs) -> anyhow::Result<()> {
    if matches!(args.workload, WorkloadArg::Mail) {
        // WC03's e-mail users: "wait 5 s, then log in again" after a 503 (and 20 ms think
        // time, in `build`).
        args.backoff
            .get_or_insert(seda_testbed::mail::user_model::REJECT_BACKOFF);
    }
    let config = build(&args)?;
    let report = seda_load::run(config)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{report}");
    }
    Ok(())
}

fn build(a: &LoadArgs) -> anyhow::Result<LoadConfig> {
    let target = Target::parse(&a.urls[0])?;
    let paths = paths(a, &target)?;
    let workload = workload(a, &target, paths)?;
    let model = model(a);
    let schedule = match (&a.schedule, &a.schedule_file) {
        (Some(s), _) => Some(Schedule::parse(s)?),
        (None, Some(f)) => {
            let text =
                std::fs::read_to_string(f).with_context(|| format!("reading {}", f.display()))?;
            Some(Schedule::from_toml(&text).with_context(|| format!("in {}", f.display()))?)
        }
        (None, None) => None,
    };
    let mut config = LoadConfig::new(target, model)?;
    config.workload = workload;
    config.schedule = schedule;
    config.duration = a.duration;
    config.warmup = a.warmup;
    config.client = ClientConfig {
        requests_per_connection: a.requests_per_conn,
        connect_timeout: a.connect_timeout,
        deadline: a.deadline,
        backoff_on_503: a.backoff.or(a.honor_retry_after.map(|_| Duration::ZERO)),
        retry_after_scale: a.honor_retry_after,
        aimd: a.aimd.then(|| AimdWindowConfig {
            max: a.aimd_max,
            timeout: a.aimd_timeout,
            ..AimdWindowConfig::default()
        }),
        aimd_reject_when_full: a.aimd_reject,
        throttle: a.throttle.then_some(ThrottleConfig {
            k: a.throttle_k,
            window: a.throttle_window,
        }),
        retries: a.retries,
        retry_budget: a.retry_budget.map(|ratio| RetryBudgetConfig {
            ratio,
            ..RetryBudgetConfig::default()
        }),
        max_body_bytes: a.max_body_bytes,
        ..ClientConfig::default()
    };
    config.interval = a.interval;
    config.goodput_target = a.goodput_target;
    config.progress = !a.no_progress;
    config.cpu = a.cpu;
    config.seed = a.seed;
    config.precise_pacing = !a.coarse_pacing;
    Ok(config)
}

/// The paths the URL workload asks for: every `URL` argument's (all on one host and port)
/// and every line of `--url-file`.
fn paths(a: &LoadArgs, target: &Target) -> anyhow::Result<Vec<String>> {
    let mut paths = Vec::new();
    for u in &a.urls {
        let t = Target::parse(u)?;
        if t.addr != target.addr || t.host_header != target.host_header {
            bail!(
                "all URLs must be on one host and port: {u} differs from {}",
                a.urls[0]
            );
        }
        paths.push(t.path);
    }
    if let Some(f) = &a.url_file {
        let text =
            std::fs::read_to_string(f).with_context(|| format!("reading {}", f.display()))?;
        for line in text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
        {
            let path = if line.starts_with('/') {
                line.to_string()
            } else {
                Target::parse(line)?.path
            };
            paths.push(path);
        }
    }
    Ok(paths)
}

/// The workload `--workload` names, over `paths` for the URL list.
fn workload(
    a: &LoadArgs,
    target: &Target,
    paths: Vec<String>,
) -> anyhow::Result<Arc<dyn Workload>> {
    Ok(match a.workload {
        WorkloadArg::Urls => Arc::new(UrlList::new(paths)?),
        WorkloadArg::Specweb => Arc::new(SpecWeb::new(&target.path, a.specweb_dirs)?),
        WorkloadArg::SpecwebOriginal => {
            Arc::new(SpecWeb::original_file_mix(&target.path, a.specweb_dirs)?)
        }
        WorkloadArg::Synthetic => Arc::new(Synthetic::parse(
            &a.synthetic,
            &target.path,
            &a.synthetic_param,
        )?),
        WorkloadArg::Mail => {
            let workload = seda_testbed::mail::workload::MailWorkload::new(a.mail_users);
            match &a.mail_only {
                None => Arc::new(workload),
                Some(name) => {
                    let kind = seda_mail::RequestKind::ALL
                        .into_iter()
                        .find(|k| k.name() == name.as_str())
                        .ok_or_else(|| {
                            let names: Vec<&str> = seda_mail::RequestKind::ALL
                                .iter()
                                .map(|k| k.name())
                                .collect();
                            anyhow::anyhow!(
                                "--mail-only {name:?}: give one of {}",
                                names.join(", ")
                            )
                        })?;
                    Arc::new(workload.only(kind))
                }
            }
        }
    })
}

/// The user model `--model` names, with its flags.
fn model(a: &LoadArgs) -> Model {
    // WC03's e-mail users think 20 ms unless told otherwise; `--think 0ms` says otherwise.
    let think = a
        .think
        .unwrap_or(if matches!(a.workload, WorkloadArg::Mail) {
            seda_testbed::mail::user_model::THINK_TIME
        } else {
            Duration::ZERO
        });
    match a.model {
        ModelArg::Closed => Model::Closed(Closed {
            users: a.users,
            think,
            think_exponential: a.think_exp,
            ramp: a.ramp,
        }),
        ModelArg::Open => Model::Open(Open {
            rate_per_s: a.rate,
            arrivals: match a.arrivals {
                ArrivalsArg::Poisson => Arrivals::Poisson,
                ArrivalsArg::Constant => Arrivals::Constant,
            },
            max_connections: a.max_connections,
            max_backlog: a.max_backlog,
        }),
        ModelArg::Eager => Model::Eager(Eager {
            users: a.users,
            patience_min: a.patience_min,
            patience_max: a.patience_max,
            think,
            max_outstanding: a.max_outstanding,
        }),
        ModelArg::PartlyOpen => Model::PartlyOpen(PartlyOpen {
            sessions_per_s: a.rate,
            stay_probability: a.stay,
            think,
            max_sessions: a.max_connections,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: LoadArgs,
    }

    fn config(args: &[&str]) -> anyhow::Result<LoadConfig> {
        let cli = Cli::try_parse_from(std::iter::once("load").chain(args.iter().copied()))?;
        build(&cli.args)
    }

    #[test]
    fn mail_users_think_20_ms_unless_told_otherwise_even_zero() {
        let think = |extra: &[&str]| {
            let mut args = vec!["http://127.0.0.1:1/", "--workload", "mail"];
            args.extend_from_slice(extra);
            match config(&args).unwrap().model {
                Model::Closed(c) => c.think,
                m => panic!("not closed: {m:?}"),
            }
        };
        assert_eq!(think(&[]), seda_testbed::mail::user_model::THINK_TIME);
        assert_eq!(think(&["--think", "0ms"]), Duration::ZERO);
        assert_eq!(think(&["--think", "5ms"]), Duration::from_millis(5));
        let other = config(&["http://127.0.0.1:1/x"]).unwrap();
        assert!(matches!(other.model, Model::Closed(Closed { think, .. }) if think.is_zero()));
    }

    #[test]
    fn builds_each_model() {
        let c = config(&["http://127.0.0.1:1/x", "-c", "8", "--think", "20ms"]).unwrap();
        assert!(matches!(c.model, Model::Closed(Closed { users: 8, .. })));
        assert_eq!(c.workload.classes(), ["/x"]);
        let c = config(&[
            "http://127.0.0.1:1/",
            "--model",
            "open",
            "-r",
            "500",
            "--arrivals",
            "constant",
        ])
        .unwrap();
        assert!(matches!(
            c.model,
            Model::Open(Open {
                arrivals: Arrivals::Constant,
                ..
            })
        ));
        let c = config(&[
            "http://127.0.0.1:1/",
            "--model",
            "partly-open",
            "--stay",
            "0.5",
        ])
        .unwrap();
        assert!(matches!(
            c.model,
            Model::PartlyOpen(PartlyOpen {
                stay_probability: 0.5,
                ..
            })
        ));
        let c = config(&[
            "http://127.0.0.1:1/sw",
            "--workload",
            "specweb",
            "--specweb-dirs",
            "3",
        ])
        .unwrap();
        assert_eq!(c.workload.classes().len(), 4);
        let c = config(&[
            "http://127.0.0.1:1/",
            "--schedule",
            "0s=3,30s=1000,90s=3",
            "--backoff",
            "5s",
        ])
        .unwrap();
        assert_eq!(c.schedule.unwrap().max_level(), 1000.0);
        assert_eq!(c.client.backoff_on_503, Some(Duration::from_secs(5)));
        assert_eq!(
            c.client.wait_after_503(Some(60)),
            Some(Duration::from_secs(5))
        );
        let c = config(&["http://127.0.0.1:1/", "--honor-retry-after"]).unwrap();
        assert_eq!(
            c.client.wait_after_503(Some(60)),
            Some(Duration::from_secs(60))
        );
        assert_eq!(c.client.wait_after_503(None), Some(Duration::ZERO));
        let c = config(&["http://127.0.0.1:1/", "--honor-retry-after", "0.5"]).unwrap();
        assert_eq!(
            c.client.wait_after_503(Some(60)),
            Some(Duration::from_secs(30))
        );
    }

    #[test]
    fn builds_the_eager_model() {
        let c = config(&[
            "http://127.0.0.1:1/",
            "--model",
            "eager",
            "-c",
            "40",
            "--patience-min",
            "200ms",
            "--patience-max",
            "600ms",
        ])
        .unwrap();
        let Model::Eager(e) = &c.model else {
            panic!("not eager: {:?}", c.model)
        };
        assert_eq!(e.users, 40);
        assert_eq!(e.patience_min, Duration::from_millis(200));
        assert_eq!(e.patience_max, Duration::from_millis(600));
        // An expected time range upside down is refused when the run starts.
        let bad = config(&[
            "http://127.0.0.1:1/",
            "--model",
            "eager",
            "--patience-min",
            "2s",
            "--patience-max",
            "1s",
        ])
        .unwrap();
        assert!(seda_load::run(bad).is_err());
    }

    #[test]
    fn bad_arguments_are_errors() {
        assert!(config(&["http://127.0.0.1:1/", "http://127.0.0.1:2/"]).is_err());
        assert!(config(&["http://127.0.0.1:1/", "--schedule", "10s=1,5s=2"]).is_err());
        assert!(
            config(&[
                "http://127.0.0.1:1/",
                "--workload",
                "synthetic",
                "--synthetic",
                "x"
            ])
            .is_err()
        );
        assert!(config(&["http://127.0.0.1:1/", "--think", "soon"]).is_err());
        assert!(
            config(&[
                "http://127.0.0.1:1/",
                "--schedule-file",
                "/nonexistent.toml"
            ])
            .is_err()
        );
    }
}
