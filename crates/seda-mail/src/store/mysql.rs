//! MariaDB / MySQL through the `mysql` crate: pooled connections, cancellation by `KILL QUERY`
//! from a separate connection.

use std::sync::Arc;

use mysql::prelude::Queryable;
use mysql::{Conn, Opts, TxOpts, Value};
use parking_lot::Mutex;
use seda::Meta;

use super::{
    Audit, ConnPool, Folder, Loaded, MAX_PAGE, MAX_RESULTS, Message, Moved, Result, SearchField,
    Sort, Store, StoreError, Summary, TRASH, check, like_pattern, watch,
};
use crate::corpus::Corpus;

/// MySQL's "query execution was interrupted" (ER_QUERY_INTERRUPTED).
const QUERY_INTERRUPTED: u16 = 1317;
/// Rows per multi-row INSERT of the corpus load, and bytes before a batch is flushed (well under
/// the default 16 MB `max_allowed_packet`).
const LOAD_ROWS: usize = 200;
const LOAD_BYTES: usize = 2 << 20;

/// The MariaDB/MySQL backend.
pub struct MysqlStore {
    opts: Opts,
    p: String,
    pool: ConnPool<Conn>,
    /// Sends `KILL QUERY` for cancelled requests.
    killer: Arc<Mutex<Option<Conn>>>,
}

impl std::fmt::Debug for MysqlStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MysqlStore").finish_non_exhaustive()
    }
}

fn db(e: mysql::Error) -> StoreError {
    match &e {
        mysql::Error::MySqlError(m) if m.code == QUERY_INTERRUPTED => StoreError::Cancelled,
        _ => StoreError::Db(e.to_string()),
    }
}

const SUMMARY: &str = "id, folder_id, sender, subject, sent, size, flags";

type SummaryRow = (i64, i64, String, String, i64, i64, i64);

fn summary(r: SummaryRow) -> Summary {
    Summary {
        id: r.0,
        folder_id: r.1,
        sender: r.2,
        subject: r.3,
        date: r.4,
        size: r.5,
        flags: r.6,
    }
}

impl MysqlStore {
    /// Connects to `url` (`mysql://user:password@host:port/db`).
    pub fn open(url: &str, prefix: &str) -> Result<MysqlStore> {
        let opts = Opts::from_url(url).map_err(|e| StoreError::Db(format!("{url}: {e}")))?;
        let store = MysqlStore {
            opts,
            p: prefix.to_string(),
            pool: ConnPool::new(64),
            killer: Arc::new(Mutex::new(None)),
        };
        let c = store.connect()?;
        store.pool.put(c);
        Ok(store)
    }

    fn connect(&self) -> Result<Conn> {
        Conn::new(self.opts.clone()).map_err(|e| StoreError::Db(format!("cannot connect: {e}")))
    }

    fn with<T>(
        &self,
        meta: Option<&Meta>,
        f: impl FnOnce(&mut Conn, &str) -> std::result::Result<T, mysql::Error>,
    ) -> Result<T> {
        if let Some(m) = meta {
            check(m)?;
        }
        let mut conn = match self.pool.take() {
            Some(c) => c,
            None => self.connect()?,
        };
        let mut guard = meta.map(|m| {
            let id = conn.connection_id();
            let killer = self.killer.clone();
            let opts = self.opts.clone();
            watch::watch(m, move || {
                let mut k = killer.lock();
                if k.is_none() {
                    *k = Conn::new(opts).ok();
                }
                if let Some(c) = k.as_mut()
                    && c.query_drop(format!("KILL QUERY {id}")).is_err()
                {
                    *k = None;
                }
            })
        });
        let out = f(&mut conn, &self.p);
        let fired = guard.as_mut().is_some_and(|g| g.fired());
        drop(guard);
        let broken = matches!(
            &out,
            Err(mysql::Error::IoError(_)
                | mysql::Error::CodecError(_)
                | mysql::Error::DriverError(_))
        );
        if !broken {
            self.pool.put(conn);
        }
        match out {
            Ok(v) => Ok(v),
            Err(_) if fired => Err(StoreError::Cancelled),
            Err(e) => Err(db(e)),
        }
    }
}

fn move_message(
    tx: &mut mysql::Transaction<'_>,
    p: &str,
    id: i64,
    from: i64,
    to: i64,
) -> std::result::Result<(), mysql::Error> {
    // Lower folder id first: the same lock order everywhere, so moves cannot deadlock.
    let (a, da, b, db) = if from < to {
        (from, -1i64, to, 1i64)
    } else {
        (to, 1, from, -1)
    };
    let upd = format!("UPDATE {p}folders SET msg_count = msg_count + ? WHERE id = ?");
    tx.exec_drop(&upd, (da, a))?;
    tx.exec_drop(&upd, (db, b))?;
    tx.exec_drop(
        format!("UPDATE {p}messages SET folder_id = ? WHERE id = ?"),
        (to, id),
    )?;
    Ok(())
}

fn flush(
    tx: &mut mysql::Transaction<'_>,
    p: &str,
    rows: &mut Vec<Value>,
) -> std::result::Result<(), mysql::Error> {
    let n = rows.len() / 11;
    if n == 0 {
        return Ok(());
    }
    let mut sql = format!(
        "INSERT INTO {p}messages (id, user_id, folder_id, sender, recipient, subject, sent, \
         size, flags, headers, body) VALUES "
    );
    for i in 0..n {
        if i > 0 {
            sql.push(',');
        }
        sql.push_str("(?,?,?,?,?,?,?,?,?,?,?)");
    }
    tx.exec_drop(sql, std::mem::take(rows))
}

impl Store for MysqlStore {
    fn backend(&self) -> &'static str {
        "mysql"
    }

    fn reset(&self) -> Result<()> {
        self.with(None, |c, p| {
            c.query_drop(format!(
                "DROP TABLE IF EXISTS {p}messages, {p}folders, {p}users"
            ))?;
            c.query_drop(format!(
                "CREATE TABLE {p}users (id BIGINT PRIMARY KEY, name VARCHAR(64) NOT NULL UNIQUE,
                   password VARCHAR(64) NOT NULL) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4"
            ))?;
            c.query_drop(format!(
                "CREATE TABLE {p}folders (id BIGINT PRIMARY KEY, user_id BIGINT NOT NULL,
                   name VARCHAR(64) NOT NULL, msg_count BIGINT NOT NULL,
                   UNIQUE (user_id, name)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4"
            ))?;
            c.query_drop(format!(
                "CREATE TABLE {p}messages (id BIGINT PRIMARY KEY, user_id BIGINT NOT NULL,
                   folder_id BIGINT NOT NULL, sender VARCHAR(255) NOT NULL,
                   recipient VARCHAR(255) NOT NULL, subject VARCHAR(255) NOT NULL,
                   sent BIGINT NOT NULL, size BIGINT NOT NULL, flags BIGINT NOT NULL,
                   headers TEXT NOT NULL, body MEDIUMTEXT NOT NULL,
                   INDEX {p}m_date (folder_id, sent, id),
                   INDEX {p}m_sender (folder_id, sender, sent),
                   INDEX {p}m_subject (folder_id, subject, sent),
                   INDEX {p}m_user (user_id, sent)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4"
            ))
        })
    }

    fn load(&self, corpus: &Corpus) -> Result<Loaded> {
        self.with(None, |c, p| {
            let mut n = Loaded::default();
            let mut tx = c.start_transaction(TxOpts::default())?;
            for u in corpus.users() {
                tx.exec_drop(
                    format!("INSERT INTO {p}users (id, name, password) VALUES (?, ?, ?)"),
                    (u.id, &u.name, &u.password),
                )?;
                n.users += 1;
                for f in &u.folders {
                    tx.exec_drop(
                        format!(
                            "INSERT INTO {p}folders (id, user_id, name, msg_count) \
                             VALUES (?, ?, ?, ?)"
                        ),
                        (f.id, u.id, &f.name, f.count),
                    )?;
                    n.folders += 1;
                }
            }
            let mut rows: Vec<Value> = Vec::with_capacity(LOAD_ROWS * 11);
            let mut bytes = 0;
            for u in corpus.users() {
                for f in &u.folders {
                    for m in corpus.messages(u, f) {
                        let s = m.summary;
                        bytes += s.size as usize;
                        n.messages += 1;
                        n.bytes += s.size as u64;
                        rows.extend([
                            Value::from(s.id),
                            Value::from(u.id),
                            Value::from(s.folder_id),
                            Value::from(s.sender),
                            Value::from(m.recipient),
                            Value::from(s.subject),
                            Value::from(s.date),
                            Value::from(s.size),
                            Value::from(s.flags),
                            Value::from(m.headers),
                            Value::from(m.body),
                        ]);
                        if rows.len() >= LOAD_ROWS * 11 || bytes >= LOAD_BYTES {
                            flush(&mut tx, p, &mut rows)?;
                            bytes = 0;
                        }
                    }
                }
            }
            flush(&mut tx, p, &mut rows)?;
            tx.commit()?;
            // Fresh index statistics for the planner.
            c.query_drop(format!("ANALYZE TABLE {p}users, {p}folders, {p}messages"))?;
            Ok(n)
        })
    }

    fn audit(&self) -> Result<Audit> {
        self.with(None, |c, p| {
            let mut q = |sql: String| -> std::result::Result<i64, mysql::Error> {
                Ok(c.query_first::<Option<i64>, _>(sql)?.flatten().unwrap_or(0))
            };
            Ok(Audit {
                users: q(format!("SELECT COUNT(*) FROM {p}users"))?,
                messages: q(format!("SELECT COUNT(*) FROM {p}messages"))?,
                folder_counts: q(format!(
                    "SELECT CAST(COALESCE(SUM(msg_count), 0) AS SIGNED) FROM {p}folders"
                ))?,
                bad_folders: q(format!(
                    "SELECT COUNT(*) FROM {p}folders f WHERE f.msg_count <>
                     (SELECT COUNT(*) FROM {p}messages m WHERE m.folder_id = f.id)"
                ))?,
            })
        })
    }

    fn tables(&self) -> Result<u32> {
        let [u, f, m] = super::table_names(&self.p);
        self.with(None, |c, _| {
            let n: Option<u32> = c.exec_first(
                "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = DATABASE() \
                 AND lower(table_name) IN (?, ?, ?)",
                (u, f, m),
            )?;
            Ok(n.unwrap_or(0))
        })
    }

    fn login(&self, name: &str, password: &str, meta: &Meta) -> Result<Option<i64>> {
        self.with(Some(meta), |c, p| {
            c.exec_first(
                format!("SELECT id FROM {p}users WHERE name = ? AND password = ?"),
                (name, password),
            )
        })
    }

    fn folders(&self, user: i64, meta: &Meta) -> Result<Vec<Folder>> {
        self.with(Some(meta), |c, p| {
            c.exec_map(
                format!(
                    "SELECT id, name, msg_count FROM {p}folders WHERE user_id = ? ORDER BY name"
                ),
                (user,),
                |(id, name, count)| Folder { id, name, count },
            )
        })
    }

    fn messages(
        &self,
        user: i64,
        folder_id: i64,
        sort: Sort,
        offset: u32,
        limit: u32,
        meta: &Meta,
    ) -> Result<Option<(Folder, Vec<Summary>)>> {
        self.with(Some(meta), |c, p| {
            let f: Option<(i64, String, i64)> = c.exec_first(
                format!("SELECT id, name, msg_count FROM {p}folders WHERE id = ? AND user_id = ?"),
                (folder_id, user),
            )?;
            let Some((id, name, count)) = f else {
                return Ok(None);
            };
            let rows = c.exec_map(
                format!(
                    "SELECT {SUMMARY} FROM {p}messages WHERE folder_id = ? ORDER BY {} \
                     LIMIT ? OFFSET ?",
                    sort.order_by()
                ),
                (folder_id, limit.min(MAX_PAGE), offset),
                summary,
            )?;
            Ok(Some((Folder { id, name, count }, rows)))
        })
    }

    fn message(&self, user: i64, id: i64, meta: &Meta) -> Result<Option<Message>> {
        self.with(Some(meta), |c, p| {
            type Row = (
                i64,
                i64,
                String,
                String,
                i64,
                i64,
                i64,
                String,
                String,
                String,
            );
            let r: Option<Row> = c.exec_first(
                format!(
                    "SELECT {SUMMARY}, recipient, headers, body FROM {p}messages \
                     WHERE id = ? AND user_id = ?"
                ),
                (id, user),
            )?;
            let m = r.map(|r| Message {
                summary: summary((r.0, r.1, r.2, r.3, r.4, r.5, r.6)),
                recipient: r.7,
                headers: r.8,
                body: r.9,
            });
            if let Some(m) = &m
                && m.summary.flags & 1 == 0
            {
                c.exec_drop(
                    format!("UPDATE {p}messages SET flags = flags | 1 WHERE id = ?"),
                    (id,),
                )?;
            }
            Ok(m)
        })
    }

    fn delete(&self, user: i64, id: i64, meta: &Meta) -> Result<Moved> {
        self.with(Some(meta), |c, p| {
            let mut tx = c.start_transaction(TxOpts::default())?;
            let trash: Option<i64> = tx.exec_first(
                format!("SELECT id FROM {p}folders WHERE user_id = ? AND name = ?"),
                (user, TRASH),
            )?;
            let Some(trash) = trash else {
                return Ok(Moved::NoFolder);
            };
            let from: Option<i64> = tx.exec_first(
                format!(
                    "SELECT folder_id FROM {p}messages WHERE id = ? AND user_id = ? FOR UPDATE"
                ),
                (id, user),
            )?;
            let Some(from) = from else {
                return Ok(Moved::NoMessage);
            };
            let done = if from == trash {
                tx.exec_drop(
                    format!("UPDATE {p}folders SET msg_count = msg_count - 1 WHERE id = ?"),
                    (from,),
                )?;
                tx.exec_drop(format!("DELETE FROM {p}messages WHERE id = ?"), (id,))?;
                Moved::Purged { from }
            } else {
                move_message(&mut tx, p, id, from, trash)?;
                Moved::Moved { from, to: trash }
            };
            tx.commit()?;
            Ok(done)
        })
    }

    fn refile(&self, user: i64, id: i64, to: i64, meta: &Meta) -> Result<Moved> {
        self.with(Some(meta), |c, p| {
            let mut tx = c.start_transaction(TxOpts::default())?;
            let owns: Option<i64> = tx.exec_first(
                format!("SELECT id FROM {p}folders WHERE id = ? AND user_id = ?"),
                (to, user),
            )?;
            if owns.is_none() {
                return Ok(Moved::NoFolder);
            }
            let from: Option<i64> = tx.exec_first(
                format!(
                    "SELECT folder_id FROM {p}messages WHERE id = ? AND user_id = ? FOR UPDATE"
                ),
                (id, user),
            )?;
            let Some(from) = from else {
                return Ok(Moved::NoMessage);
            };
            if from != to {
                move_message(&mut tx, p, id, from, to)?;
            }
            tx.commit()?;
            Ok(Moved::Moved { from, to })
        })
    }

    fn search(
        &self,
        user: i64,
        text: &str,
        field: SearchField,
        limit: u32,
        meta: &Meta,
    ) -> Result<Vec<Summary>> {
        let pattern = like_pattern(text);
        self.with(Some(meta), |c, p| {
            let (filter, params): (&str, Vec<Value>) = match field {
                SearchField::Headers => (
                    "(subject LIKE ? ESCAPE '\\\\' OR sender LIKE ? ESCAPE '\\\\')",
                    vec![
                        user.into(),
                        pattern.clone().into(),
                        pattern.clone().into(),
                        limit.min(MAX_RESULTS).into(),
                    ],
                ),
                SearchField::Body => (
                    "body LIKE ? ESCAPE '\\\\'",
                    vec![
                        user.into(),
                        pattern.clone().into(),
                        limit.min(MAX_RESULTS).into(),
                    ],
                ),
            };
            c.exec_map(
                format!(
                    "SELECT {SUMMARY} FROM {p}messages WHERE user_id = ? AND {filter} \
                     ORDER BY sent DESC LIMIT ?"
                ),
                params,
                summary,
            )
        })
    }
}
