//! SQLite (bundled) in WAL mode with `synchronous=NORMAL`: a committed transaction survives a
//! crash of the process (the WAL is written before the commit returns) but may be lost, whole,
//! on a power failure or OS crash before the next checkpoint; the database is never corrupted.
//! Commits never checkpoint: whoever writes through the store calls [`Store::checkpoint`] now
//! and then (the mail service, every second), or leaves it to the last connection's close.
//!
//! [`Store::checkpoint`]: super::Store::checkpoint

use rusqlite::types::{ToSqlOutput, ValueRef};
use rusqlite::{Connection, ErrorCode, ToSql};

use super::backend::{Backend, Conn, Dialect, Interrupt, Row, Val, Value};
use super::{Result, StoreError};

/// How long a writer waits for the write lock before failing (SQLite allows one writer).
const BUSY_TIMEOUT_MS: u64 = 10_000;
/// Prepared statements kept per connection (the service uses about twenty).
const STATEMENTS: usize = 64;

/// The SQLite backend: a database file.
#[derive(Debug)]
pub(crate) struct Sqlite {
    path: String,
}

impl Sqlite {
    pub(crate) fn new(path: &str) -> Result<Sqlite> {
        if path.is_empty() || path == ":memory:" {
            return Err(StoreError::Invalid(
                "SQLite needs a file path (each connection of an in-memory database is a \
                 separate database)"
                    .into(),
            ));
        }
        Ok(Sqlite {
            path: path.to_string(),
        })
    }
}

fn err(e: rusqlite::Error) -> StoreError {
    if e.sqlite_error_code() == Some(ErrorCode::OperationInterrupted) {
        StoreError::Cancelled
    } else {
        StoreError::db(e)
    }
}

impl ToSql for Val<'_> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match *self {
            Val::Int(v) => ToSqlOutput::Borrowed(ValueRef::Integer(v)),
            Val::Text(t) => ToSqlOutput::Borrowed(ValueRef::Text(t.as_bytes())),
        })
    }
}

impl Backend for Sqlite {
    type Conn = Connection;
    const NAME: &'static str = "sqlite";
    const DIALECT: Dialect = Dialect {
        begin: "BEGIN IMMEDIATE",
        int: "INTEGER",
        short_text: "TEXT",
        exact_text: "TEXT",
        long_text: "TEXT",
        table_options: "",
        // BEGIN IMMEDIATE already holds the database's one write lock.
        for_update: "",
        like: "LIKE",
        cast_int: "INTEGER",
        count_tables: "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' \
                       AND lower(name) IN (?, ?, ?)",
        // The planner picks the indexes without statistics here; ANALYZE would change plans.
        analyze: "",
        // Freed pages are reused; the WAL is checkpointed by `Store::checkpoint`.
        reclaim: &[],
        checkpoint: "PRAGMA wal_checkpoint(PASSIVE)",
        load_rows: 200,
        explain: "EXPLAIN QUERY PLAN ",
    };

    fn connect(&self) -> Result<Connection> {
        let conn = Connection::open(&self.path).map_err(|e| StoreError::Connect {
            target: self.path.clone(),
            source: Box::new(e),
        })?;
        conn.busy_timeout(std::time::Duration::from_millis(BUSY_TIMEOUT_MS))
            .map_err(err)?;
        // No checkpoint inside a commit: SQLite's default runs one in whichever commit finds
        // the log past 1,000 pages, and that commit then costs 80 times a median one (8 ms of
        // CPU against 0.1 ms, refiling messages of the lab's corpus). The service runs
        // `Store::checkpoint` from a thread of its own instead, as SQLite's documentation
        // suggests for an application that minds its writers' latency.
        conn.execute_batch(
            "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA wal_autocheckpoint=0;",
        )
        .map_err(err)?;
        conn.set_prepared_statement_cache_capacity(STATEMENTS);
        Ok(conn)
    }
}

impl Conn for Connection {
    fn exec(&mut self, sql: &str, args: &[Val<'_>]) -> Result<u64> {
        let mut st = self.prepare_cached(sql).map_err(err)?;
        let n = st
            .execute(rusqlite::params_from_iter(args.iter()))
            .map_err(err)?;
        Ok(n as u64)
    }

    fn query(&mut self, sql: &str, args: &[Val<'_>]) -> Result<Vec<Row>> {
        let mut st = self.prepare_cached(sql).map_err(err)?;
        let cols = st.column_count();
        let mut rows = st
            .query(rusqlite::params_from_iter(args.iter()))
            .map_err(err)?;
        let mut out = Vec::new();
        while let Some(r) = rows.next().map_err(err)? {
            let mut row = Vec::with_capacity(cols);
            for i in 0..cols {
                row.push(match r.get_ref(i).map_err(err)? {
                    ValueRef::Null => Value::Null,
                    ValueRef::Integer(v) => Value::Int(v),
                    ValueRef::Text(t) => Value::Text(String::from_utf8_lossy(t).into_owned()),
                    ValueRef::Real(_) | ValueRef::Blob(_) => {
                        return Err(StoreError::Schema(format!(
                            "column {i} is neither an integer nor text"
                        )));
                    }
                });
            }
            out.push(Row(row));
        }
        Ok(out)
    }

    fn batch(&mut self, sql: &str) -> Result<()> {
        self.execute_batch(sql).map_err(err)
    }

    fn interrupter(&self) -> Interrupt {
        let handle = self.get_interrupt_handle();
        Box::new(move || handle.interrupt())
    }

    fn in_transaction(&mut self) -> Result<bool> {
        Ok(!self.is_autocommit())
    }
}
