//! The store's contract, checked on every backend the same way (SQLite always; PostgreSQL and
//! MariaDB when they answer on 127.0.0.1, skipped with a printed reason otherwise): the edge
//! cases of delete and refile, creation that never overwrites, exact logins, errors that keep
//! the driver's error as their source and never show a password.

use std::error::Error;

use seda::Meta;
use seda_mail::store::{self, Moved, StoreError, TRASH};

use crate::common::*;

/// A user id the corpus does not have: no folders, no Trash, no messages.
const NOBODY: i64 = 999_999;
/// A message id the corpus does not have.
const NO_MESSAGE: i64 = 999_999_999;

#[test]
fn every_backend_answers_the_edge_cases_alike() {
    let corpus = small_corpus();
    let user = &corpus.users()[0];
    let other = &corpus.users()[1];
    let trash = user
        .folders
        .iter()
        .find(|f| f.name == TRASH)
        .expect("Trash");
    let inbox = user
        .folders
        .iter()
        .find(|f| f.name != TRASH && f.count > 0)
        .expect("a folder with messages");
    let meta = Meta::new();
    for s in backends("conformance", &corpus) {
        let b = s.backend();
        // Preconditions in one order everywhere: the target folder, then the message. (SQLite
        // once looked for the message first and answered NoMessage here.)
        assert_eq!(
            s.delete(NOBODY, NO_MESSAGE, None, &meta).unwrap(),
            Moved::NoFolder,
            "{b}"
        );
        assert_eq!(
            s.delete(user.id, NO_MESSAGE, None, &meta).unwrap(),
            Moved::NoMessage,
            "{b}"
        );
        assert_eq!(
            s.refile(user.id, NO_MESSAGE, other.folders[0].id, &meta)
                .unwrap(),
            Moved::NoFolder,
            "{b}: another user's folder"
        );
        assert_eq!(
            s.refile(user.id, NO_MESSAGE, inbox.id, &meta).unwrap(),
            Moved::NoMessage,
            "{b}"
        );
        // Another user's message is not found, whatever its id.
        let (_, rows) = s
            .messages(
                user.id,
                inbox.id,
                store::Sort::Date,
                store::Page::FIRST,
                1,
                &meta,
            )
            .unwrap()
            .unwrap();
        let id = rows[0].id;
        assert_eq!(
            s.delete(other.id, id, None, &meta).unwrap(),
            Moved::NoMessage,
            "{b}"
        );
        // Delete moves to Trash; a retry changes nothing; only a delete that names Trash as
        // where it saw the message purges it. Counts follow.
        assert_eq!(
            s.delete(user.id, id, Some(inbox.id), &meta).unwrap(),
            Moved::Moved {
                from: inbox.id,
                to: trash.id
            },
            "{b}"
        );
        for expect in [Some(inbox.id), None] {
            assert_eq!(
                s.delete(user.id, id, expect, &meta).unwrap(),
                Moved::Unchanged { folder: trash.id },
                "{b}: a retried delete"
            );
        }
        assert_eq!(
            s.delete(user.id, id, Some(trash.id), &meta).unwrap(),
            Moved::Purged { from: trash.id },
            "{b}"
        );
        assert_eq!(s.message(user.id, id, &meta).unwrap(), None, "{b}");
        let a = s.audit().unwrap();
        assert_eq!(a.messages, corpus.total_messages() - 1, "{b}");
        assert_eq!((a.bad_folders, a.folder_counts), (0, a.messages), "{b}");

        // Logins match exactly (MariaDB's default collation ignores case).
        assert!(s.login("user1", "pass1", &meta).unwrap().is_some(), "{b}");
        assert_eq!(s.login("USER1", "pass1", &meta).unwrap(), None, "{b}");
        assert_eq!(s.login("user1", "PASS1", &meta).unwrap(), None, "{b}");

        // The database holds a salted argon2id hash, not the password.
        let stored = stored_password(b, "t_conformance_", "user1");
        assert!(stored.starts_with("$argon2id$"), "{b}: {stored}");
        assert!(!stored.contains("pass1"), "{b}");

        // The tables exist: create refuses and keeps the data.
        assert_eq!(s.tables().unwrap(), 3, "{b}");
        assert!(s.create().is_err(), "{b}: create over existing tables");
        assert_eq!(s.audit().unwrap().messages, a.messages, "{b}: data kept");

        // Reclaiming what the moves and the purge left behind (PostgreSQL: VACUUM, which may
        // not run inside a transaction) changes no data.
        s.reclaim().unwrap_or_else(|e| panic!("{b}: reclaim: {e}"));
        assert_eq!(s.audit().unwrap(), a, "{b}: data kept");
    }
}

#[test]
fn a_missing_schema_is_an_error_with_its_driver_error_as_source() {
    for s in backends("conform_empty", &small_corpus()) {
        let b = s.backend();
        let url = match b {
            "sqlite" => temp_db_path("conform_empty"),
            "postgres" => PG_URL.to_string(),
            _ => MY_URL.to_string(),
        };
        // Another prefix: no tables (left by an earlier run on a server: dropped first).
        drop_tables(b, "t_conform_none_");
        let bare = store::open(&url, "t_conform_none_").unwrap();
        assert_eq!(bare.tables().unwrap(), 0, "{b}");
        let e = bare.audit().unwrap_err();
        assert!(matches!(e, StoreError::Db(_)), "{b}: {e:?}");
        assert!(e.source().is_some(), "{b}: the driver's error is kept");
        // create makes exactly the three tables, empty.
        bare.reset().unwrap();
        assert_eq!(bare.tables().unwrap(), 3, "{b}");
        assert_eq!(bare.audit().unwrap().users, 0, "{b}");
    }
}

/// Drops the tables under `prefix` on a server backend, by hand.
fn drop_tables(backend: &str, prefix: &str) {
    let sql = format!("DROP TABLE IF EXISTS {prefix}messages, {prefix}folders, {prefix}users");
    match backend {
        "postgres" => {
            let mut c = postgres::Client::connect(PG_URL, postgres::NoTls).unwrap();
            c.batch_execute(&sql).unwrap();
        }
        "mysql" => {
            use mysql::prelude::Queryable;
            let mut c = mysql::Conn::new(mysql::Opts::from_url(MY_URL).unwrap()).unwrap();
            c.query_drop(sql).unwrap();
        }
        _ => {}
    }
}

/// The password column of user `name`, read by hand.
fn stored_password(backend: &str, prefix: &str, name: &str) -> String {
    let sql = format!("SELECT password FROM {prefix}users WHERE name = '{name}'");
    match backend {
        "postgres" => {
            let mut c = postgres::Client::connect(PG_URL, postgres::NoTls).unwrap();
            c.query_one(&sql, &[]).unwrap().get(0)
        }
        "mysql" => {
            use mysql::prelude::Queryable;
            let mut c = mysql::Conn::new(mysql::Opts::from_url(MY_URL).unwrap()).unwrap();
            c.query_first(sql).unwrap().unwrap()
        }
        _ => rusqlite::Connection::open(temp_db_path("conformance"))
            .unwrap()
            .query_row(&sql, [], |r| r.get(0))
            .unwrap(),
    }
}

/// The whole text of an error and its sources.
fn chain(e: &StoreError) -> String {
    let mut text = format!("{e} {e:?}");
    let mut s = e.source();
    while let Some(x) = s {
        text.push_str(&format!(" / {x} {x:?}"));
        s = x.source();
    }
    text
}

/// The table prefix goes into SQL text (table names cannot be bound), so `store::open`, the
/// only way to a store, refuses anything but a short identifier, on every backend.
#[test]
fn a_table_prefix_that_is_not_an_identifier_is_refused() {
    let db = std::env::temp_dir().join(format!("seda-prefix-{}.db", std::process::id()));
    let url = db.to_string_lossy().to_string();
    for bad in [
        "x; DROP TABLE users; --",
        "a b",
        "t-1",
        "\"q\"",
        &"p".repeat(33),
    ] {
        for backend in [url.as_str(), "postgres://postgres@127.0.0.1:1/test"] {
            let Err(e) = store::open(backend, bad) else {
                panic!("{bad:?} was accepted on {backend}");
            };
            assert!(chain(&e).contains("table prefix"), "{bad:?}: {}", chain(&e));
        }
    }
    assert!(store::open(&url, "ok_prefix_1").is_ok());
    let _ = std::fs::remove_file(&db);
}

#[test]
fn database_urls_in_errors_hide_the_password() {
    const SECRET: &str = "hunter2secret";
    let urls = [
        // Nothing listens on port 1: the connection fails.
        format!("postgres://postgres:{SECRET}@127.0.0.1:1/test"),
        format!("mysql://root:{SECRET}@127.0.0.1:1/test"),
        // Not URLs the drivers accept.
        format!("postgres://postgres:{SECRET}@127.0.0.1:notaport/test"),
        format!("mysql://root:{SECRET}@127.0.0.1:notaport/test"),
    ];
    for url in urls {
        let Err(e) = store::open(&url, "") else {
            panic!("{url} opened");
        };
        let text = chain(&e);
        assert!(!text.contains(SECRET), "{url}: {text}");
        assert!(text.contains("127.0.0.1") || text.contains("URL"), "{text}");
    }
    assert_eq!(
        store::redact("postgres://u:p@h:1/d"),
        "postgres://u:***@h:1/d"
    );
    assert_eq!(store::redact("postgres://u@h/d"), "postgres://u@h/d");
    assert_eq!(store::redact("/tmp/a@b:c"), "/tmp/a@b:c");
}
