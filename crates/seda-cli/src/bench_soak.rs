//! `seda bench terminate-soak`: terminates many requests that hold memory, a lock guard, an
//! open file and a database statement (some a write transaction), then shows everything was
//! released (see `seda_testbed::mail::soak`).

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use seda_mail::Corpus;
use seda_mail::store;
use seda_testbed::mail::soak::{self, SoakConfig, SoakReport};

/// Users of the corpus; the soak scans the messages of the one with the most.
const USERS: u64 = 20;

#[derive(clap::Args, Debug)]
pub struct SoakArgs {
    /// Requests to terminate in the measured run.
    #[arg(long, default_value_t = 100_000)]
    requests: u64,
    /// Unmeasured requests first (pools and the allocator reach their working size).
    #[arg(long, default_value_t = 2_000)]
    warmup: u64,
    /// The store: a SQLite path (default: a fresh temporary file), `postgres://...` or
    /// `mysql://...`. Its tables get the prefix `soak_` and are dropped and reloaded.
    #[arg(long)]
    store: Option<String>,
    /// Worker threads of the terminable stage.
    #[arg(long, default_value_t = 8)]
    workers: usize,
    /// Termination threshold, ms.
    #[arg(long, default_value_t = 1.0)]
    threshold_ms: f64,
    /// KiB of memory each request holds.
    #[arg(long, default_value_t = 64)]
    hold_kib: usize,
    /// Largest folder of the corpus.
    #[arg(long, default_value_t = 12_794)]
    max_folder: i64,
}

pub fn terminate_soak(args: &SoakArgs) -> Result<()> {
    let Ok(threshold) = Duration::try_from_secs_f64(args.threshold_ms / 1000.0) else {
        bail!("--threshold-ms must be >= 0, got {}", args.threshold_ms);
    };
    let dir = std::env::temp_dir().join(format!("seda-soak-{}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let url = args
        .store
        .clone()
        .unwrap_or_else(|| dir.join("soak.db").display().to_string());
    let store = store::open(&url, "soak_")
        .with_context(|| format!("cannot open {}", store::redact(&url)))?;
    let corpus = Corpus::with_max_folder(USERS, 1, args.max_folder);
    // The user with the most messages: the longest body scan.
    let user = corpus
        .users()
        .iter()
        .max_by_key(|u| u.folders.iter().map(|f| f.count).sum::<i64>())
        .map_or(1, |u| u.id);
    store.reset()?;
    let loaded = store.load(&corpus)?;
    let file = dir.join("held-file");
    std::fs::write(&file, b"held by a terminated request\n")?;
    println!(
        "terminate-soak: {} backend, {} messages ({} KiB; user {user} has {}), {} workers, threshold {} ms, {} KiB \
         held per request, {} warm-up + {} measured requests",
        store.backend(),
        loaded.messages,
        loaded.bytes / 1024,
        corpus.users().iter().find(|u| u.id == user).map_or(0, |u| u
            .folders
            .iter()
            .map(|f| f.count)
            .sum::<i64>()),
        args.workers,
        args.threshold_ms,
        args.hold_kib,
        args.warmup,
        args.requests
    );
    let config = SoakConfig {
        store: Arc::clone(&store),
        user,
        requests: args.requests,
        warmup: args.warmup,
        workers: args.workers,
        threshold,
        hold_bytes: args.hold_kib * 1024,
        file,
    };
    let report = soak::run(&config).map_err(anyhow::Error::msg)?;
    print(&report, config.hold_bytes);
    let _ = std::fs::remove_dir_all(&dir);
    let problems = report.problems(config.hold_bytes);
    if !problems.is_empty() {
        bail!("not released: {}", problems.join("; "));
    }
    Ok(())
}

fn print(r: &SoakReport, hold_bytes: usize) {
    let (a, b) = r.audit;
    println!(
        "terminated {} ({} after a write), completed {}, in {:.1} s ({:.0}/s); {} database \
         calls cancelled\n\
         RSS {} KiB -> {} KiB (slack {} KiB)\n\
         open files {} -> {}\n\
         locks held {} of {}\n\
         live buffers / lock guards / files: {} / {} / {}\n\
         idle connections {}: {} usable, {} in a transaction\n\
         audit before: {} messages, folder counts {}, {} bad folders; after: {} messages, \
         folder counts {}, {} bad folders",
        r.terminated,
        r.wrote,
        r.completed,
        r.elapsed_s,
        r.terminated as f64 / r.elapsed_s.max(1e-9),
        r.cancelled_calls,
        r.rss_kib.0,
        r.rss_kib.1,
        r.rss_slack_kib(hold_bytes),
        r.fds.0,
        r.fds.1,
        r.locks_held,
        soak::STRIPES,
        r.live[0],
        r.live[1],
        r.live[2],
        r.idle.connections,
        r.idle.usable,
        r.idle.in_transaction,
        a.messages,
        a.folder_counts,
        a.bad_folders,
        b.messages,
        b.folder_counts,
        b.bad_folders,
    );
}
