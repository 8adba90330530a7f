//! A request cancelled while the database works is interrupted inside the statement (SQLite's
//! interrupt handle, PostgreSQL's cancel request, MariaDB's KILL QUERY), and nothing else is.

use std::time::{Duration, Instant};

use seda::Meta;
use seda_mail::store::{SearchField, SearchQuery, Store, StoreError};
use seda_mail::{MailService, ServiceOptions};

use crate::common::*;

/// Rows of long, uniform bodies whose LIKE scan with a near-miss pattern takes seconds.
const ROWS: i64 = 200;
const BODY: usize = 100_000;
const PATTERN_LEN: usize = 300;

fn slow_pattern() -> String {
    format!("{}b", "a".repeat(PATTERN_LEN))
}

fn slow_search_is_interrupted(store: &dyn Store) {
    let backend = store.backend();
    let meta = Meta::new();
    let token = meta.cancel_token().clone();
    let canceller = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(150));
        token.cancel();
    });
    let t0 = Instant::now();
    let query = SearchQuery {
        text: &slow_pattern(),
        field: SearchField::Body,
        limit: 10,
    };
    let out = store.search(1, query, &meta);
    let took = t0.elapsed();
    canceller.join().unwrap();
    assert!(
        matches!(out, Err(StoreError::Cancelled)),
        "{backend} after {took:?}: {out:?}"
    );
    assert!(took < Duration::from_secs(10), "{backend}: {took:?}");
    eprintln!("{backend}: slow search cancelled after {took:?}");
    // The connection goes back to the pool healthy: the next calls work.
    let meta = Meta::new();
    for _ in 0..3 {
        assert!(store.folders(1, &meta).is_ok(), "{backend}");
    }
}

#[test]
fn cancellation_interrupts_a_running_statement() {
    let corpus = small_corpus();
    for store in backends("cancel", &corpus) {
        let body = "a".repeat(BODY);
        match store.backend() {
            "sqlite" => {
                let conn = rusqlite::Connection::open(temp_db_path("cancel")).unwrap();
                let mut st = conn
                    .prepare(
                        "INSERT INTO t_cancel_messages VALUES (?1, 1, 1, 's', 'r', 'slow', 0, 0, 0, \
                         'h', ?2)",
                    )
                    .unwrap();
                for i in 0..ROWS {
                    st.execute(rusqlite::params![10_000_000 + i, body]).unwrap();
                }
            }
            "postgres" => {
                let mut c = postgres::Client::connect(PG_URL, postgres::NoTls).unwrap();
                c.execute(
                    "INSERT INTO t_cancel_messages SELECT 10000000 + g, 1, 1, 's', 'r', 'slow', \
                     0, 0, 0, 'h', repeat('a', $1) FROM generate_series(1, $2) g",
                    &[&(BODY as i32), &(ROWS as i32)],
                )
                .unwrap();
            }
            "mysql" => {
                use mysql::prelude::Queryable;
                let mut c = mysql::Conn::new(mysql::Opts::from_url(MY_URL).unwrap()).unwrap();
                c.query_drop(format!(
                    "INSERT INTO t_cancel_messages SELECT 10000000 + seq, 1, 1, 's', 'r', \
                     'slow', 0, 0, 0, 'h', REPEAT('a', {BODY}) FROM seq_1_to_{ROWS}"
                ))
                .unwrap();
            }
            other => panic!("unknown backend {other}"),
        }
        slow_search_is_interrupted(store.as_ref());
        slow_search_is_terminated(store);
    }
}

/// The same slow search through the service, whose search stage is terminable: the
/// terminator cuts it, the statement is interrupted, and the answer says so.
fn slow_search_is_terminated(store: std::sync::Arc<dyn Store>) {
    let backend = store.backend();
    let options = ServiceOptions {
        terminate: Some(seda::TerminateConfig {
            kind: "fixed".into(),
            params: [("threshold_s".to_string(), 0.1)].into(),
        }),
        ..ServiceOptions::default()
    };
    let (rt, svc) = service(store, options);
    let sid = login(&svc, 1);
    // Under the service's 200-character limit, still a near miss on every long body.
    let q = format!("{}b", "a".repeat(190));
    let r = call(
        &svc,
        req("GET", &format!("/search?q={q}&in=body"), Some(&sid), ""),
    );
    assert_eq!(r.status, 503, "{backend}: {}", r.body);
    assert_eq!(r.header("x-seda-reject"), Some("terminated"), "{backend}");
    let stats = rt.stats();
    let search = stats
        .stages
        .iter()
        .find(|s| s.name == "mail.search")
        .expect("search stage");
    assert!(
        search.termination.is_some(),
        "{backend}: search is terminable"
    );
    let delete = stats.stages.iter().find(|s| s.name == "mail.delete");
    assert!(
        delete.is_some_and(|s| s.termination.is_none()),
        "{backend}: writes are not"
    );
    rt.shutdown();
    assert_eq!(
        rt.stats()
            .stages
            .iter()
            .map(|s| s.totals.counters.terminated)
            .sum::<u64>(),
        1
    );
}

#[test]
fn a_write_stage_cannot_be_made_terminable() {
    let store = backends("cancel_write", &small_corpus()).remove(0);
    let config =
        seda::Config::from_toml("[stages.\"mail.delete\".terminate]\nkind = \"fixed\"\n").unwrap();
    let rt = seda::Runtime::builder().config(config).start().unwrap();
    let err = MailService::start(&rt, store, &ServiceOptions::default()).unwrap_err();
    assert!(err.to_string().contains("terminate"), "{err}");
    rt.shutdown();
}

/// The service on tables prefixed `prefix`, on an emulated processor of a hundredth of a core
/// (a search's stated cost of a few milliseconds holds it for a few hundred), its searches cut
/// after 10 ms, and a session of the user with the largest mailbox.
fn slowed_and_terminable(prefix: &str) -> (seda::Runtime, std::sync::Arc<MailService>, String) {
    let corpus = small_corpus();
    let user = corpus
        .users()
        .iter()
        .max_by_key(|u| u.folders.iter().map(|f| f.count).sum::<i64>())
        .expect("a user")
        .id as u64;
    let store = backends(prefix, &corpus).remove(0);
    let options = ServiceOptions {
        processor: Some(std::sync::Arc::new(seda::EmulatedProcessor::new(0.01))),
        terminate: Some(seda::TerminateConfig {
            kind: "fixed".into(),
            params: [("threshold_s".to_string(), 0.01)].into(),
        }),
        ..ServiceOptions::default()
    };
    let (rt, svc) = service(store, options);
    let sid = login(&svc, user);
    (rt, svc, sid)
}

/// A search whose handler is cut while it holds the emulated processor (after its real work,
/// for its stated cost) lets go of it and is answered as terminated, as a real processor's
/// handler would have been cut at the same moment; the lab's `mail-search` relies on it. The
/// search itself takes a few milliseconds (a scan of one small mailbox's bodies), so the cut
/// lands in the processor, not in SQLite.
#[test]
fn a_search_cut_on_the_processor_is_terminated() {
    let (rt, svc, sid) = slowed_and_terminable("cancel_processor");
    let r = call(
        &svc,
        req("GET", "/search?q=zqxjnosuchphrase&in=body", Some(&sid), ""),
    );
    assert_eq!(r.status, 503, "{}", r.body);
    assert_eq!(r.header("x-seda-reject"), Some("terminated"));
    // A refusal like the admission controller's, told its wait (the first refusal: the base).
    assert_eq!(r.header("retry-after"), Some("5"));
    // The cut search's work counts as the search handlers', not as an answered search's: the
    // lab prices an answered request by the second.
    let (cpu, answered) = (svc.handler_cpu_s(), svc.answered_cpu_s());
    assert!(cpu["search"] > 0.0, "{cpu:?}");
    assert_eq!(answered["search"], (0.0, 0));
    assert_eq!(answered["login"].1, 1);
    assert!(answered["login"].0 > 0.0 && answered["login"].0 <= cpu["login"]);
    rt.shutdown();
    assert_eq!(search_stage(&rt).totals.counters.terminated, 1);
}

/// The search stage's statistics.
fn search_stage(rt: &seda::Runtime) -> seda::stats::StageSnapshot {
    rt.stats()
        .stages
        .into_iter()
        .find(|s| s.name == "mail.search")
        .expect("search stage")
}

/// A search the terminator cut is refused the next time before it runs (its cost is learned
/// per query and field, by the message of the mailbox, see `search_cost.rs`), and counted
/// terminated as if cut; a query the service has not run yet runs.
#[test]
fn a_search_that_would_be_cut_again_is_refused_before_it_runs() {
    let (rt, svc, sid) = slowed_and_terminable("cancel_predicted");
    let search = |q: &str| {
        call(
            &svc,
            req("GET", &format!("/search?q={q}&in=body"), Some(&sid), ""),
        )
    };
    let ran = "ran too long";
    let refused = "would run too long";
    let first = search("zqxjnosuchphrase");
    assert!(
        first.status == 503 && first.body.contains(ran),
        "{}",
        first.body
    );
    let again = search("ZQXJnosuchphrase");
    assert!(
        again.status == 503 && again.body.contains(refused),
        "{}",
        again.body
    );
    assert_eq!(again.header("x-seda-reject"), Some("terminated"));
    // Its retry is refused as cheaply again, so it is told the admission controller's wait,
    // not the longest.
    let wait: u32 = again
        .header("retry-after")
        .unwrap_or("")
        .parse()
        .unwrap_or(0);
    assert!((5..120).contains(&wait), "Retry-After: {wait}");
    let other = search("anotherphrase");
    assert!(
        other.status == 503 && other.body.contains(ran),
        "{}",
        other.body
    );
    rt.shutdown();
    let stage = search_stage(&rt);
    assert_eq!(stage.totals.counters.terminated, 3);
    assert_eq!(stage.totals.response.count, 0);
}
