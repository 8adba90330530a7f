//! PostgreSQL through the synchronous `postgres` crate; a statement is interrupted by the
//! server's cancel request (sent on a new connection, which is why the watch thread runs it
//! outside its lock).

use std::collections::HashMap;

use postgres::error::SqlState;
use postgres::types::{ToSql, Type};
use postgres::{Client, NoTls, Statement};

use super::backend::{Backend, Conn, Dialect, Interrupt, Row, Val, Value};
use super::{Result, StoreError, redact};

/// How long opening a connection (or sending a cancel request) may take.
const CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);
/// Most prepared statements kept per connection (the service uses about twenty).
const MAX_STATEMENTS: usize = 64;

/// The PostgreSQL backend: a server URL.
pub(crate) struct Postgres {
    url: String,
    config: postgres::Config,
}

impl std::fmt::Debug for Postgres {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Postgres")
            .field("url", &redact(&self.url))
            .finish()
    }
}

impl Postgres {
    pub(crate) fn new(url: &str) -> Result<Postgres> {
        let mut config = url.parse::<postgres::Config>().map_err(|_| {
            StoreError::Invalid(format!("`{}` is not a PostgreSQL URL", redact(url)))
        })?;
        // Also bounds the cancel request, which opens a connection of its own.
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        Ok(Postgres {
            url: url.to_string(),
            config,
        })
    }
}

/// A client and the statements prepared on it: each query is parsed once per connection, so
/// a call costs one round trip instead of two.
pub(crate) struct PgConn {
    client: Client,
    stmts: HashMap<String, Statement>,
}

/// The server's own error where it sent one: the driver's `Display` says only "db error"
/// for those (a refused connection then read "cannot connect to ...: db error", hiding "sorry,
/// too many clients already").
fn detailed(e: postgres::Error) -> Box<dyn std::error::Error + Send + Sync> {
    match e.as_db_error() {
        Some(db) => Box::new(db.clone()),
        None => Box::new(e),
    }
}

fn err(e: postgres::Error) -> StoreError {
    if e.code() == Some(&SqlState::QUERY_CANCELED) {
        StoreError::Cancelled
    } else {
        StoreError::Db(detailed(e))
    }
}

/// `?` placeholders as PostgreSQL's `$1, $2, ...` (the store's SQL has no `?` in literals).
fn numbered(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len() + 16);
    let mut n = 0;
    for c in sql.chars() {
        if c == '?' {
            n += 1;
            out.push('$');
            out.push_str(&n.to_string());
        } else {
            out.push(c);
        }
    }
    out
}

impl PgConn {
    fn prepared(&mut self, sql: &str) -> Result<Statement> {
        if let Some(s) = self.stmts.get(sql) {
            return Ok(s.clone());
        }
        let s = self.client.prepare(&numbered(sql)).map_err(err)?;
        if self.stmts.len() >= MAX_STATEMENTS {
            self.stmts.clear();
        }
        self.stmts.insert(sql.to_string(), s.clone());
        Ok(s)
    }
}

fn args<'a>(args: &'a [Val<'a>]) -> Vec<&'a (dyn ToSql + Sync)> {
    args.iter()
        .map(|a| match a {
            Val::Int(v) => v as &(dyn ToSql + Sync),
            Val::Text(t) => t as &(dyn ToSql + Sync),
        })
        .collect()
}

impl Backend for Postgres {
    type Conn = PgConn;
    const NAME: &'static str = "postgres";
    const DIALECT: Dialect = Dialect {
        begin: "BEGIN",
        int: "BIGINT",
        short_text: "TEXT",
        exact_text: "TEXT",
        long_text: "TEXT",
        table_options: "",
        for_update: " FOR UPDATE",
        like: "ILIKE",
        cast_int: "BIGINT",
        count_tables: "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = \
                       current_schema() AND lower(table_name) IN (?, ?, ?)",
        analyze: "ANALYZE {p}users, {p}folders, {p}messages",
        // Autovacuum does this where it is on; where it is off, every refile leaves a dead
        // row and its index entries behind. The checkpoint writes out what the last load
        // dirtied, so that the next load does not pay for it, and restarts the server's
        // checkpoint timer (5 minutes by default), so that no timed one lands inside a
        // `pool-control` run (in one full run its best fixed pool gave 2,183/s, and 1,362/s
        // minutes later). (Separate statements: `VACUUM` cannot run in a multi-statement
        // query.)
        reclaim: &[
            "VACUUM (ANALYZE) {p}users, {p}folders, {p}messages",
            "CHECKPOINT",
        ],
        checkpoint: "",
        load_rows: 200,
        explain: "EXPLAIN ",
    };

    fn connect(&self) -> Result<PgConn> {
        let client = self
            .config
            .connect(NoTls)
            .map_err(|e| StoreError::Connect {
                target: redact(&self.url),
                source: detailed(e),
            })?;
        Ok(PgConn {
            client,
            stmts: HashMap::new(),
        })
    }
}

impl Conn for PgConn {
    fn exec(&mut self, sql: &str, a: &[Val<'_>]) -> Result<u64> {
        let st = self.prepared(sql)?;
        self.client.execute(&st, &args(a)).map_err(err)
    }

    fn query(&mut self, sql: &str, a: &[Val<'_>]) -> Result<Vec<Row>> {
        let st = self.prepared(sql)?;
        let rows = self.client.query(&st, &args(a)).map_err(err)?;
        let mut out = Vec::with_capacity(rows.len());
        for r in &rows {
            let mut row = Vec::with_capacity(r.len());
            for (i, col) in r.columns().iter().enumerate() {
                let t = col.type_();
                let v = if *t == Type::INT8 {
                    r.try_get::<_, Option<i64>>(i).map(|v| v.map(Value::Int))
                } else if *t == Type::INT4 {
                    r.try_get::<_, Option<i32>>(i)
                        .map(|v| v.map(|v| Value::Int(v.into())))
                } else {
                    r.try_get::<_, Option<String>>(i)
                        .map(|v| v.map(Value::Text))
                };
                row.push(v.map_err(err)?.unwrap_or(Value::Null));
            }
            out.push(Row(row));
        }
        Ok(out)
    }

    fn batch(&mut self, sql: &str) -> Result<()> {
        self.client.batch_execute(sql).map_err(err)
    }

    fn interrupter(&self) -> Interrupt {
        let token = self.client.cancel_token();
        Box::new(move || {
            let _ = token.cancel_query(NoTls);
        })
    }

    fn usable(&self) -> bool {
        !self.client.is_closed()
    }

    /// Outside a transaction block every statement is its own transaction, so its start is
    /// the transaction's; inside one (after `BEGIN`) they differ. Sent as a simple query (one
    /// message): with the extended protocol the Bind and Execute messages each restamp the
    /// statement's start, and the two times could differ by a microsecond outside a block.
    fn in_transaction(&mut self) -> Result<bool> {
        let messages = self
            .client
            .simple_query("SELECT statement_timestamp() <> transaction_timestamp()")
            .map_err(err)?;
        messages
            .iter()
            .find_map(|m| match m {
                postgres::SimpleQueryMessage::Row(row) => row.get(0).map(|v| v == "t"),
                _ => None,
            })
            .ok_or_else(|| StoreError::Schema("no answer to the transaction check".into()))
    }
}
