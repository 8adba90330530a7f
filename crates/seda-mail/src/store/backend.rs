//! What a database must offer the mail store: connect, run a statement with positional
//! arguments, return rows, and interrupt the statement running on a connection. Everything else
//! (the schema, the transactions, the order in which a delete checks its preconditions) is
//! written once in [`super::sql`] over this trait, so the backends cannot drift apart.
//!
//! SQL reaches a backend with `?` placeholders; PostgreSQL's rewrites them to `$1, $2, ...`.
//! The few dialect differences (column types, how a write transaction starts, `FOR UPDATE`,
//! case-insensitive `LIKE`) are the [`Dialect`] constants.

use super::{Result, StoreError};

/// A positional argument of a statement.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Val<'a> {
    /// An integer (every number the store keeps is an `i64`).
    Int(i64),
    /// Text.
    Text(&'a str),
}

impl From<i64> for Val<'_> {
    fn from(v: i64) -> Self {
        Val::Int(v)
    }
}

impl<'a> From<&'a str> for Val<'a> {
    fn from(v: &'a str) -> Self {
        Val::Text(v)
    }
}

/// A column value as read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Value {
    /// SQL NULL.
    Null,
    /// An integer column.
    Int(i64),
    /// A text column.
    Text(String),
}

/// One result row.
#[derive(Debug, Clone, Default)]
pub(crate) struct Row(pub(crate) Vec<Value>);

impl Row {
    /// Every non-NULL column, as text, separated by spaces (a plan's row).
    pub(crate) fn line(&self) -> String {
        self.0
            .iter()
            .filter_map(|v| match v {
                Value::Null => None,
                Value::Int(i) => Some(i.to_string()),
                Value::Text(t) => Some(t.clone()),
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Column `i` as an integer (NULL reads as 0: `SUM` over no rows).
    pub(crate) fn int(&self, i: usize) -> Result<i64> {
        match self.0.get(i) {
            Some(Value::Int(v)) => Ok(*v),
            Some(Value::Null) => Ok(0),
            Some(Value::Text(t)) => t
                .parse()
                .map_err(|_| StoreError::Schema(format!("column {i} is not an integer"))),
            None => Err(StoreError::Schema(format!("no column {i}"))),
        }
    }

    /// Column `i` as text.
    pub(crate) fn text(&mut self, i: usize) -> Result<String> {
        match self.0.get_mut(i) {
            Some(Value::Text(t)) => Ok(std::mem::take(t)),
            Some(Value::Int(v)) => Ok(v.to_string()),
            Some(Value::Null) | None => Err(StoreError::Schema(format!("column {i} is not text"))),
        }
    }
}

/// An action that interrupts the statement running on one connection (run by the watch thread).
pub(crate) type Interrupt = Box<dyn FnOnce() + Send>;

/// One open connection.
pub(crate) trait Conn: Send + 'static {
    /// Runs a statement; returns the rows it changed.
    fn exec(&mut self, sql: &str, args: &[Val<'_>]) -> Result<u64>;
    /// Runs a query; returns all its rows.
    fn query(&mut self, sql: &str, args: &[Val<'_>]) -> Result<Vec<Row>>;
    /// Runs statements without arguments (schema changes, `BEGIN`, `COMMIT`).
    fn batch(&mut self, sql: &str) -> Result<()>;
    /// An action that interrupts whatever statement this connection runs when it is called.
    fn interrupter(&self) -> Interrupt;
    /// Whether the connection can still be used (a pooled one may have been closed).
    fn usable(&self) -> bool {
        true
    }
    /// Whether a transaction is open on the connection (a pooled one never should be).
    fn in_transaction(&mut self) -> Result<bool>;
}

/// The SQL differences between the backends.
#[derive(Debug)]
pub(crate) struct Dialect {
    /// Starts a write transaction (SQLite takes the write lock at once: `BEGIN IMMEDIATE`).
    pub(crate) begin: &'static str,
    /// Integer column type.
    pub(crate) int: &'static str,
    /// A short text column that is indexed (sender, subject, folder name).
    pub(crate) short_text: &'static str,
    /// A text column compared exactly, case included (user name, password hash).
    pub(crate) exact_text: &'static str,
    /// A long text column (body).
    pub(crate) long_text: &'static str,
    /// Appended to `CREATE TABLE (...)`.
    pub(crate) table_options: &'static str,
    /// Appended to a `SELECT` that reads a row the transaction will change (row lock).
    pub(crate) for_update: &'static str,
    /// Case-insensitive `LIKE`.
    pub(crate) like: &'static str,
    /// Type name for `CAST(... AS _)` to a 64-bit integer.
    pub(crate) cast_int: &'static str,
    /// Counts how many of three lower-cased table names (the arguments) exist.
    pub(crate) count_tables: &'static str,
    /// Refreshes the planner's statistics after a load (`{p}` is the table prefix).
    pub(crate) analyze: &'static str,
    /// Reclaims the row versions that updates and deletes left behind (`{p}` is the table
    /// prefix; none where the database does it on its own), one statement at a time.
    pub(crate) reclaim: &'static [&'static str],
    /// Writes the committed log into the database without blocking readers or writers (empty
    /// where the server does it on its own).
    pub(crate) checkpoint: &'static str,
    /// Rows per multi-row `INSERT` of a corpus load.
    pub(crate) load_rows: usize,
    /// Put before a query to get its plan instead of its rows.
    pub(crate) explain: &'static str,
}

/// A database the mail store runs on.
pub(crate) trait Backend: Send + Sync + 'static {
    /// Its connections.
    type Conn: Conn;
    /// `sqlite`, `postgres` or `mysql`.
    const NAME: &'static str;
    /// Its SQL differences.
    const DIALECT: Dialect;
    /// Opens a new connection.
    fn connect(&self) -> Result<Self::Conn>;
    /// Closes the helper connections it keeps idle (MariaDB's `KILL QUERY` connection); the
    /// next interrupt opens a new one.
    fn close_helpers(&self) {}
}

/// A small pool of connections: checked out per call, returned after, opened on demand.
pub(crate) struct ConnPool<C> {
    idle: parking_lot::Mutex<Vec<C>>,
    max_idle: usize,
}

impl<C> ConnPool<C> {
    pub(crate) fn new(max_idle: usize) -> Self {
        ConnPool {
            idle: parking_lot::Mutex::new(Vec::new()),
            max_idle,
        }
    }

    pub(crate) fn take(&self) -> Option<C> {
        self.idle.lock().pop()
    }

    /// Closes every idle connection (after a schema change, their prepared statements are
    /// stale).
    pub(crate) fn clear(&self) {
        let old = std::mem::take(&mut *self.idle.lock());
        drop(old);
    }

    /// Takes every idle connection out of the pool.
    pub(crate) fn take_all(&self) -> Vec<C> {
        std::mem::take(&mut *self.idle.lock())
    }

    pub(crate) fn put(&self, conn: C) {
        let mut idle = self.idle.lock();
        if idle.len() < self.max_idle {
            idle.push(conn);
        }
    }
}
