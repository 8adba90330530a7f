//! One run of a pool sizer on a plant: the real runtime, in this process, pinned to the
//! server core, with one stage whose handler calls the plant's backend (an
//! [`EmulatedBackend`] or the e-mail store on PostgreSQL) and a producer that keeps its queue
//! from running dry (so throughput is what the pool can do).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use seda::{Config, PoolControllerConfig, Runtime, SizerConfig, Stage, StageConfig, handler};
use seda_mail::Corpus;
use seda_mail::store::{Moved, Store};
use seda_testbed::bottleneck::EmulatedBackend;
use serde::Serialize;

/// The stage (and pool) name.
const STAGE: &str = "plant";
/// Events kept waiting in the stage's queue.
const BACKLOG: usize = 400;
/// Most threads any sizer may use.
pub(crate) const MAX_THREADS: usize = 48;

/// A plant whose throughput depends on its pool.
#[derive(Debug, Clone, Copy, Serialize)]
pub(crate) struct Plant {
    /// Its name in the summary.
    pub name: &'static str,
    /// What each event waits on.
    pub backend: Backend,
    /// The fixed pools the sweep tries: quick form, full form.
    pub sizes: (&'static [usize], &'static [usize]),
}

/// What a plant's handler calls.
#[derive(Debug, Clone, Copy, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum Backend {
    /// An [`EmulatedBackend`] (a sleep, stated as such).
    Emulated {
        /// Latency of a call, ms.
        latency_ms: u64,
        /// Callers served before it thrashes (0: never).
        knee: usize,
        /// Calls served at once, the rest waiting (0: no limit).
        channels: usize,
    },
    /// The e-mail store on PostgreSQL ([`crate::postgres`]) on another host: each event
    /// waits `network_ms` (the round trips of its statements across a network, emulated as one
    /// wait, stated as such) and refiles a message between the inbox and the archive of one of
    /// `users` users, the service's own transaction (the message row and both folders' counts
    /// locked, then a commit that waits for the WAL flush).
    ///
    /// Why the wait: on loopback the database shares this two-core machine's cores, and a
    /// second thread already saturated them (1, 2 and 8 threads gave 0.46, 0.90 and 1 of the
    /// best in a full run): one thread was half the throughput, no pool met a target between
    /// 1 and 2 threads, and P alternated between them (steady error 0.10, thread overshoot
    /// 1.4). A database across a network is where a pool's size matters, and it is how
    /// services meet one.
    Postgres {
        /// Users whose folders the events share.
        users: usize,
        /// The emulated network time of a transaction, ms.
        network_ms: u64,
    },
}

/// The `postgres` plant's table prefix in the lab's database.
const PG_PREFIX: &str = "seda_lab_pool_";
/// The `postgres` plant's corpus: users, its seed and its largest folder.
const PG_CORPUS: (u64, u64, i64) = (50, 7, 2000);
/// Messages of each user's inbox the `postgres` plant moves back and forth.
const PG_MESSAGES_PER_USER: i64 = 16;

/// The plants. Two emulated ones at 25 events/s per thread (a thread is a small step of the
/// throughput, as on the thesis's larger pools): a backend with 24 channels (throughput grows
/// with threads up to 24, then stays flat), and one that thrashes past 12 callers (an interior
/// optimum at 12). And the e-mail store on PostgreSQL as if on another host (see
/// [`Backend::Postgres`]), whose throughput grows with the pool until the database's locks and
/// this machine's two cores are saturated.
pub(crate) const PLANTS: [Plant; 3] = [
    Plant {
        name: "io",
        backend: Backend::Emulated {
            latency_ms: 40,
            knee: 0,
            channels: 24,
        },
        sizes: (&[16, 24], &[4, 8, 10, 12, 14, 16, 20, 24, 32, 48]),
    },
    Plant {
        name: "contended",
        backend: Backend::Emulated {
            latency_ms: 40,
            knee: 12,
            channels: 0,
        },
        sizes: (&[8, 12, 16], &[4, 8, 10, 12, 14, 16, 20, 24, 32, 48]),
    },
    Plant {
        name: "postgres",
        backend: Backend::Postgres {
            users: 8,
            network_ms: 5,
        },
        sizes: (&[8, 16, 32], &[4, 8, 12, 16, 20, 24, 32, 48]),
    },
];

impl Backend {
    /// One line for the report.
    pub(crate) fn describe(self) -> String {
        match self {
            Backend::Emulated {
                latency_ms,
                knee,
                channels,
            } => {
                let mut s = format!("emulated backend, {latency_ms} ms");
                if channels > 0 {
                    s += &format!(", {channels} channels");
                }
                if knee > 0 {
                    s += &format!(", thrashing past {knee} callers (interior optimum)");
                }
                s
            }
            Backend::Postgres { users, network_ms } => format!(
                "the e-mail store on PostgreSQL ({}) as if on another host: each event waits \
                 {network_ms} ms (its statements' round trips across a network, emulated) and \
                 refiles a message between the inbox and the archive of one of {users} users (a \
                 transaction that locks the message and both folders' counts, and a commit)",
                seda_mail::store::redact(crate::postgres::URL)
            ),
        }
    }
}

impl Plant {
    /// The quick form's plant: emulated calls wait half as long. Past the contended plant's
    /// knee a call's wait grows (90 ms at 18 callers), and a quick period of 160 ms then
    /// counted mostly calls begun before the last move: an addition past the knee read as
    /// paying, and P walked from 14 to 22 threads (0.56 of the best fixed pool).
    pub(crate) fn quick(self) -> Plant {
        let backend = match self.backend {
            Backend::Emulated {
                latency_ms,
                knee,
                channels,
            } => Backend::Emulated {
                latency_ms: latency_ms / 2,
                knee,
                channels,
            },
            other => other,
        };
        Plant { backend, ..self }
    }

    /// The peer this plant needs that cannot be used here, if one cannot.
    pub(crate) fn missing(&self) -> Option<crate::peers::Absent> {
        match self.backend {
            Backend::Emulated { .. } => None,
            Backend::Postgres { .. } => crate::postgres::missing(),
        }
    }

    /// Opens what the handler calls (for PostgreSQL: seeds the plant's tables the first time).
    pub(crate) fn open(&self) -> Result<Work> {
        match self.backend {
            Backend::Emulated {
                latency_ms,
                knee,
                channels,
            } => Ok(Work::Emulated(Arc::new(
                EmulatedBackend::new(Duration::from_millis(latency_ms), knee)
                    .with_channels(channels),
            ))),
            Backend::Postgres { users, network_ms } => {
                open_postgres(users, Duration::from_millis(network_ms))
            }
        }
    }
}

/// One message the `postgres` plant moves: `(user, message, inbox, archive)`.
type Refile = (i64, i64, i64, i64);

/// What a plant's handler calls, opened once per plant and shared by its runs.
#[derive(Clone)]
pub(crate) enum Work {
    Emulated(Arc<EmulatedBackend>),
    /// The store, the messages events move, in turn, and the emulated network time of each.
    Mail(Arc<dyn Store>, Arc<Vec<Refile>>, Duration),
}

impl Work {
    /// Brings the backend back to the state every run starts from. PostgreSQL's autovacuum is
    /// off on the lab's machine: one full run's refiles left 355,699 dead rows (163 MB for
    /// 19,806 live ones) for every later run to read past, so each sizer met an older plant
    /// than the sweep had measured (its sweep's pool of 48 gave 762/s; vacuumed before each
    /// run, 1,137/s).
    fn reclaim(&self) -> Result<()> {
        match self {
            Work::Emulated(_) => Ok(()),
            Work::Mail(store, ..) => store.reclaim().context("vacuuming the plant's tables"),
        }
    }

    /// Serves event `n`: event `n` moves message `n mod len` to the archive in even rounds
    /// through the list and back to the inbox in odd ones.
    fn call(&self, n: u64) -> Result<(), String> {
        match self {
            Work::Emulated(backend) => {
                backend.call();
                Ok(())
            }
            Work::Mail(store, messages, network) => {
                std::thread::sleep(*network);
                let len = messages.len() as u64;
                let (user, id, inbox, archive) = messages[(n % len) as usize];
                let to = if (n / len).is_multiple_of(2) {
                    archive
                } else {
                    inbox
                };
                match store.refile(user, id, to, &seda::Meta::new()) {
                    Ok(Moved::Moved { .. }) => Ok(()),
                    Ok(other) => Err(format!("refiling message {id} of user {user}: {other:?}")),
                    Err(e) => Err(e.to_string()),
                }
            }
        }
    }
}

/// The `postgres` plant's store: its tables, created and loaded with [`PG_CORPUS`] the first
/// time (a failed load leaves them empty and the next run loads again), and the messages of
/// `users` users' inboxes it moves.
fn open_postgres(users: usize, network: Duration) -> Result<Work> {
    let (corpus_users, seed, max_folder) = PG_CORPUS;
    let corpus = Corpus::with_max_folder(corpus_users, seed, max_folder);
    let url = crate::postgres::URL;
    let store = seda_mail::store::open(url, PG_PREFIX)
        .with_context(|| format!("opening {}", seda_mail::store::redact(url)))?;
    match store.tables()? {
        0 => store.create()?,
        3 => {}
        n => bail!(
            "the database holds {n} of the 3 tables with prefix `{PG_PREFIX}`: drop them and \
             run again"
        ),
    }
    if store.audit()?.users == 0 {
        store.load(&corpus)?;
    }
    let meta = seda::Meta::new();
    let mut messages = Vec::new();
    for u in corpus.users().iter().take(users) {
        let folders = store.folders(u.id, &meta)?;
        let id_of = |name: &str| folders.iter().find(|f| f.name == name).map(|f| f.id);
        let (Some(inbox), Some(archive)) = (id_of("Inbox"), id_of("Archive")) else {
            bail!("user {} has no Inbox or Archive", u.name);
        };
        // Whatever an earlier run left in the archive starts back in the inbox.
        let plan = &u.folders[0];
        for id in plan.first_message..plan.first_message + plan.count.min(PG_MESSAGES_PER_USER) {
            store.refile(u.id, id, inbox, &meta)?;
            messages.push((u.id, id, inbox, archive));
        }
    }
    Ok(Work::Mail(store, Arc::new(messages), network))
}

/// One control period as seen from outside the sizer.
#[derive(Debug, Clone, Copy, Serialize)]
pub(crate) struct Sample {
    /// Seconds since the run started.
    pub t_s: f64,
    /// Which phase it belongs to.
    pub phase: usize,
    /// Worker threads at the end of the period.
    pub threads: usize,
    /// Completions per second over the period.
    pub throughput_per_s: f64,
    /// The throughput target in force (self-tuning only).
    pub target_per_s: Option<f64>,
    /// The busy threads the sizer read in its last period (see `seda::SizerState`).
    pub busy_threads: Option<f64>,
}

/// What a run measured.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Run {
    /// Every period.
    pub samples: Vec<Sample>,
    /// The ARX model's mean relative one-step error at the end (self-tuning only).
    pub arx_error: Option<f64>,
}

/// Runs `sizer` on `plant`, starting at `threads`, through `phases` (each a length and the
/// throughput target given at its start, if any), sampling every `period`. Runs on a thread
/// pinned to `cpu`, so the runtime's threads are pinned there too.
pub(crate) fn run(
    work: &Work,
    sizer: SizerConfig,
    threads: usize,
    phases: &[(Duration, Option<f64>)],
    period: Duration,
    cpu: Option<usize>,
) -> Result<Run> {
    work.reclaim()?;
    let phases = phases.to_vec();
    let work = work.clone();
    std::thread::spawn(move || {
        if let Some(cpu) = cpu {
            seda_load::pin_to_cpu(cpu).map_err(|e| anyhow!("pinning to CPU {cpu}: {e}"))?;
        }
        run_here(work, sizer, threads, &phases, period)
    })
    .join()
    .map_err(|_| anyhow!("the pool-control run panicked"))?
}

fn run_here(
    work: Work,
    sizer: SizerConfig,
    threads: usize,
    phases: &[(Duration, Option<f64>)],
    period: Duration,
) -> Result<Run> {
    let mut config = Config::default();
    config.runtime.tick_ms = 10;
    config.runtime.stats_period_ms = 1000;
    config.runtime.global = None;
    let rt = Runtime::builder().config(config).start()?;
    let failure = Arc::new(Mutex::new(None));
    // SEDA's heuristic at one thread per control period when the queue is long (Sandstorm's
    // 2 s delay, 4 samples per thread and threshold of 1000 would add one thread in 8 s).
    let heuristic = sizer.is_seda().then(|| PoolControllerConfig {
        enable: true,
        delay_ms: Some((period.as_millis() as u64 / 4).max(1)),
        threshold: Some(10),
        idle_ms: None,
    });
    let sink = rt.stage(
        Stage::builder(STAGE)
            .threads(threads)
            .thread_bounds(1, MAX_THREADS)
            .batch(1)
            .threshold(BACKLOG * 2)
            .config(StageConfig {
                pool_controller: heuristic,
                ..StageConfig::default()
            })
            .sizer(sizer)
            .handler(handler::each({
                let failure = failure.clone();
                move |n: u64, _| {
                    if let Err(e) = work.call(n)
                        && let Ok(mut first) = failure.lock()
                    {
                        first.get_or_insert(e);
                    }
                }
            })),
    )?;
    let stop = Arc::new(AtomicBool::new(false));
    let producer = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                if sink.len() < BACKLOG {
                    let _ = sink.enqueue(n);
                    n += 1;
                } else {
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
        })
    };
    let completed = |rt: &Runtime| {
        rt.stats()
            .stages
            .first()
            .map_or(0, |s| s.totals.counters.completed)
    };
    let start = Instant::now();
    let mut samples = Vec::new();
    let mut last = (Instant::now(), completed(&rt));
    let mut target = None;
    for (phase, (length, phase_target)) in phases.iter().enumerate() {
        if phase_target.is_some() {
            target = *phase_target;
            rt.set_throughput_target(STAGE, target)?;
        }
        let end = Instant::now() + *length;
        while Instant::now() < end {
            std::thread::sleep(period);
            let now = Instant::now();
            let done = completed(&rt);
            let dt = now.duration_since(last.0).as_secs_f64().max(1e-3);
            let stats = rt.stats();
            let pool = stats.pools.first();
            let threads = pool.map_or(0, |p| p.threads);
            samples.push(Sample {
                t_s: now.duration_since(start).as_secs_f64(),
                phase,
                threads,
                throughput_per_s: done.saturating_sub(last.1) as f64 / dt,
                target_per_s: target,
                busy_threads: pool.and_then(|p| p.sizing.busy_threads),
            });
            last = (now, done);
        }
    }
    let arx_error = rt.stats().pools.first().and_then(|p| p.sizing.arx_error);
    stop.store(true, Ordering::Relaxed);
    let _ = producer.join();
    // The backlog is the producer's, not work anyone waits for: drop it rather than drain it.
    rt.shutdown_timeout(Duration::from_millis(100));
    if let Some(e) = failure.lock().ok().and_then(|mut f| f.take()) {
        bail!("the plant's backend failed: {e}");
    }
    Ok(Run { samples, arx_error })
}
