//! SQLite's log reaches the database file through a checkpoint the service runs from a thread
//! of its own, never inside a commit (a commit that checkpoints costs 80 times a median one).

use std::time::{Duration, Instant};

use seda::Meta;
use seda_mail::ServiceOptions;
use seda_mail::store::{self, Moved, Page, Sort, TRASH};

use crate::common::{service, small_corpus, temp_db};

/// The folder message `id` is in, read from a copy of the database file alone (without its
/// log): what a checkpoint has written there.
fn folder_in_database_file(path: &str, id: i64) -> i64 {
    let copy = format!("{path}.copy");
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{copy}{suffix}"));
    }
    std::fs::copy(path, &copy).expect("copy the database file");
    let conn = rusqlite::Connection::open(&copy).expect("open the copy");
    conn.query_row(
        "SELECT folder_id FROM t_ckpt_messages WHERE id = ?",
        [id],
        |r| r.get(0),
    )
    .expect("the message")
}

/// The pages in the log, as a passive checkpoint (which this runs) finds them.
fn log_pages(path: &str) -> i64 {
    let conn = rusqlite::Connection::open(path).expect("open");
    conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| r.get(1))
        .expect("checkpoint")
}

#[test]
fn commits_leave_the_log_to_the_service_s_checkpoint_thread() {
    let path = temp_db("checkpoint");
    let corpus = small_corpus();
    let user = &corpus.users()[0];
    let from = user
        .folders
        .iter()
        .find(|f| f.name != TRASH && f.count > 0)
        .expect("a folder with messages");
    let to = user
        .folders
        .iter()
        .find(|f| f.id != from.id)
        .expect("another folder");
    let store = store::open(&path, "t_ckpt_").expect("store");
    store.reset().expect("tables");
    store.load(&corpus).expect("corpus");
    let meta = Meta::new();
    let (_, rows) = store
        .messages(user.id, from.id, Sort::Date, Page::FIRST, 2, &meta)
        .expect("listing")
        .expect("the user's folder");
    let (first, second) = (rows[0].id, rows[1].id);
    let there = Moved::Moved {
        from: from.id,
        to: to.id,
    };
    let back = Moved::Moved {
        from: to.id,
        to: from.id,
    };

    // Past the 1,000 pages of log at which SQLite's own commits would checkpoint (each
    // refile writes about five).
    for _ in 0..300 {
        assert_eq!(store.refile(user.id, first, to.id, &meta).unwrap(), there);
        assert_eq!(store.refile(user.id, first, from.id, &meta).unwrap(), back);
    }
    let log = log_pages(&path);
    assert!(
        log > 2_000,
        "a commit checkpointed: the log holds {log} pages"
    );
    assert_eq!(store.refile(user.id, first, to.id, &meta).unwrap(), there);
    assert_eq!(folder_in_database_file(&path, first), from.id);
    store.checkpoint().expect("checkpoint");
    assert_eq!(folder_in_database_file(&path, first), to.id);

    // The service checkpoints every second on its own.
    let (rt, _svc) = service(store.clone(), ServiceOptions::default());
    assert_eq!(store.refile(user.id, second, to.id, &meta).unwrap(), there);
    let deadline = Instant::now() + Duration::from_secs(10);
    while folder_in_database_file(&path, second) != to.id {
        assert!(Instant::now() < deadline, "no checkpoint within 10 s");
        std::thread::sleep(Duration::from_millis(100));
    }
    rt.shutdown();
}
