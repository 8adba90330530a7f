//! MariaDB / MySQL through the `mysql` crate; a statement is interrupted by `KILL QUERY` sent
//! from a separate connection.

use std::sync::Arc;
use std::time::Duration;

use mysql::prelude::Queryable;
use mysql::{Opts, OptsBuilder, Params};
use parking_lot::Mutex;

use super::backend::{Backend, Conn, Dialect, Interrupt, Row, Val, Value};
use super::{Result, StoreError, redact};

/// MySQL's "query execution was interrupted" (ER_QUERY_INTERRUPTED).
const QUERY_INTERRUPTED: u16 = 1317;
/// How long opening a connection may take; also the killer connection's read and write limit.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// The MariaDB/MySQL backend: a server URL.
pub(crate) struct Mysql {
    opts: Opts,
    target: String,
    /// Sends `KILL QUERY` for cancelled requests (one connection, opened on first use).
    killer: Arc<Mutex<Option<mysql::Conn>>>,
}

impl std::fmt::Debug for Mysql {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mysql")
            .field("target", &self.target)
            .finish_non_exhaustive()
    }
}

impl Mysql {
    pub(crate) fn new(url: &str) -> Result<Mysql> {
        // The driver's URL error quotes the URL: say it without the password.
        let opts = Opts::from_url(url).map_err(|_| {
            StoreError::Invalid(format!("`{}` is not a MariaDB/MySQL URL", redact(url)))
        })?;
        let opts: Opts = OptsBuilder::from_opts(opts)
            .tcp_connect_timeout(Some(CONNECT_TIMEOUT))
            .into();
        Ok(Mysql {
            opts,
            target: redact(url),
            killer: Arc::new(Mutex::new(None)),
        })
    }
}

/// A connection, and what it needs to have its statement killed.
pub(crate) struct MyConn {
    conn: mysql::Conn,
    opts: Opts,
    killer: Arc<Mutex<Option<mysql::Conn>>>,
}

fn err(e: mysql::Error) -> StoreError {
    match &e {
        mysql::Error::MySqlError(m) if m.code == QUERY_INTERRUPTED => StoreError::Cancelled,
        _ => StoreError::db(e),
    }
}

fn params(args: &[Val<'_>]) -> Params {
    if args.is_empty() {
        return Params::Empty;
    }
    Params::Positional(
        args.iter()
            .map(|a| match *a {
                Val::Int(v) => mysql::Value::Int(v),
                Val::Text(t) => mysql::Value::Bytes(t.as_bytes().to_vec()),
            })
            .collect(),
    )
}

impl Backend for Mysql {
    type Conn = MyConn;
    const NAME: &'static str = "mysql";
    const DIALECT: Dialect = Dialect {
        begin: "START TRANSACTION",
        int: "BIGINT",
        short_text: "VARCHAR(255)",
        // The default collation ignores case: a name or password hash must match exactly.
        exact_text: "VARCHAR(255) COLLATE utf8mb4_bin",
        long_text: "MEDIUMTEXT",
        table_options: " ENGINE=InnoDB DEFAULT CHARSET=utf8mb4",
        for_update: " FOR UPDATE",
        like: "LIKE",
        cast_int: "SIGNED",
        count_tables: "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = \
                       DATABASE() AND lower(table_name) IN (?, ?, ?)",
        analyze: "ANALYZE TABLE {p}users, {p}folders, {p}messages",
        // InnoDB's purge thread removes old row versions.
        reclaim: &[],
        checkpoint: "",
        load_rows: 200,
        explain: "EXPLAIN ",
    };

    fn connect(&self) -> Result<MyConn> {
        let conn = mysql::Conn::new(self.opts.clone()).map_err(|e| StoreError::Connect {
            target: self.target.clone(),
            source: Box::new(e),
        })?;
        Ok(MyConn {
            conn,
            opts: self.opts.clone(),
            killer: self.killer.clone(),
        })
    }

    fn close_helpers(&self) {
        *self.killer.lock() = None;
    }
}

impl Conn for MyConn {
    fn exec(&mut self, sql: &str, args: &[Val<'_>]) -> Result<u64> {
        let r = self.conn.exec_iter(sql, params(args)).map_err(err)?;
        Ok(r.affected_rows())
    }

    fn query(&mut self, sql: &str, args: &[Val<'_>]) -> Result<Vec<Row>> {
        let rows: Vec<mysql::Row> = self.conn.exec(sql, params(args)).map_err(err)?;
        let mut out = Vec::with_capacity(rows.len());
        for r in rows {
            let mut row = Vec::with_capacity(r.len());
            for (i, v) in r.unwrap().into_iter().enumerate() {
                row.push(match v {
                    mysql::Value::NULL => Value::Null,
                    mysql::Value::Int(v) => Value::Int(v),
                    mysql::Value::UInt(v) => Value::Int(i64::try_from(v).map_err(|_| {
                        StoreError::Schema(format!("column {i}: {v} is out of range"))
                    })?),
                    mysql::Value::Bytes(b) => Value::Text(
                        String::from_utf8(b).map_err(|e| StoreError::Schema(e.to_string()))?,
                    ),
                    _ => {
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
        self.conn.query_drop(sql).map_err(err)
    }

    fn interrupter(&self) -> Interrupt {
        let id = self.conn.connection_id();
        let killer = self.killer.clone();
        let opts = OptsBuilder::from_opts(self.opts.clone())
            .read_timeout(Some(CONNECT_TIMEOUT))
            .write_timeout(Some(CONNECT_TIMEOUT));
        Box::new(move || {
            let mut k = killer.lock();
            if k.is_none() {
                *k = mysql::Conn::new(opts).ok();
            }
            if let Some(c) = k.as_mut()
                && c.query_drop(format!("KILL QUERY {id}")).is_err()
            {
                *k = None;
            }
        })
    }

    fn in_transaction(&mut self) -> Result<bool> {
        let v: Option<i64> = self
            .conn
            .query_first("SELECT @@in_transaction")
            .map_err(err)?;
        Ok(v.unwrap_or(0) != 0)
    }
}
