//! SQLite (bundled) in WAL mode: a pool of connections, one per concurrent caller.

use rusqlite::{Connection, ErrorCode, OptionalExtension, Row, TransactionBehavior, params};
use seda::Meta;

use super::{
    Audit, ConnPool, Folder, Loaded, MAX_PAGE, MAX_RESULTS, Message, Moved, Result, SearchField,
    Sort, Store, StoreError, Summary, TRASH, check, like_pattern, watch,
};
use crate::corpus::Corpus;

/// How long a writer waits for the write lock before failing (SQLite allows one writer).
const BUSY_TIMEOUT_MS: u32 = 10_000;

/// The SQLite backend.
pub struct SqliteStore {
    path: String,
    p: String,
    pool: ConnPool<Connection>,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.path)
            .finish()
    }
}

fn db(e: rusqlite::Error) -> StoreError {
    if e.sqlite_error_code() == Some(ErrorCode::OperationInterrupted) {
        StoreError::Cancelled
    } else {
        StoreError::Db(e.to_string())
    }
}

const SUMMARY: &str = "id, folder_id, sender, subject, sent, size, flags";

fn summary(r: &Row<'_>) -> rusqlite::Result<Summary> {
    Ok(Summary {
        id: r.get(0)?,
        folder_id: r.get(1)?,
        sender: r.get(2)?,
        subject: r.get(3)?,
        date: r.get(4)?,
        size: r.get(5)?,
        flags: r.get(6)?,
    })
}

impl SqliteStore {
    /// Opens (creating if needed) the database file at `path`.
    pub fn open(path: &str, prefix: &str) -> Result<SqliteStore> {
        if path.is_empty() || path == ":memory:" {
            return Err(StoreError::Db(
                "SQLite needs a file path (each connection of an in-memory database is a \
                 separate database)"
                    .into(),
            ));
        }
        let store = SqliteStore {
            path: path.to_string(),
            p: prefix.to_string(),
            pool: ConnPool::new(64),
        };
        let conn = store.connect()?;
        store.pool.put(conn);
        Ok(store)
    }

    fn connect(&self) -> Result<Connection> {
        let conn = Connection::open(&self.path)
            .map_err(|e| StoreError::Db(format!("cannot open {}: {e}", self.path)))?;
        conn.busy_timeout(std::time::Duration::from_millis(BUSY_TIMEOUT_MS.into()))
            .map_err(db)?;
        conn.execute_batch("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;")
            .map_err(db)?;
        Ok(conn)
    }

    /// Runs `f` on a pooled connection; with `meta`, interrupts it when the request is
    /// cancelled or expires.
    fn with<T>(
        &self,
        meta: Option<&Meta>,
        f: impl FnOnce(&mut Connection, &str) -> rusqlite::Result<T>,
    ) -> Result<T> {
        if let Some(m) = meta {
            check(m)?;
        }
        let mut conn = match self.pool.take() {
            Some(c) => c,
            None => self.connect()?,
        };
        let mut guard = meta.map(|m| {
            let handle = conn.get_interrupt_handle();
            watch::watch(m, move || handle.interrupt())
        });
        let out = f(&mut conn, &self.p);
        let fired = guard.as_mut().is_some_and(|g| g.fired());
        drop(guard);
        self.pool.put(conn);
        match out {
            Ok(v) => Ok(v),
            Err(_) if fired => Err(StoreError::Cancelled),
            Err(e) => Err(db(e)),
        }
    }
}

fn move_message(
    tx: &rusqlite::Transaction<'_>,
    p: &str,
    id: i64,
    from: i64,
    to: i64,
) -> rusqlite::Result<()> {
    tx.prepare_cached(&format!(
        "UPDATE {p}messages SET folder_id = ?1 WHERE id = ?2"
    ))?
    .execute(params![to, id])?;
    // Lower folder id first: the same order everywhere, so concurrent moves cannot deadlock.
    let (a, da, b, db) = if from < to {
        (from, -1, to, 1)
    } else {
        (to, 1, from, -1)
    };
    let mut upd = tx.prepare_cached(&format!(
        "UPDATE {p}folders SET msg_count = msg_count + ?1 WHERE id = ?2"
    ))?;
    upd.execute(params![da, a])?;
    upd.execute(params![db, b])?;
    Ok(())
}

impl Store for SqliteStore {
    fn backend(&self) -> &'static str {
        "sqlite"
    }

    fn reset(&self) -> Result<()> {
        self.with(None, |c, p| {
            c.execute_batch(&format!(
                "BEGIN;
                 DROP TABLE IF EXISTS {p}messages; DROP TABLE IF EXISTS {p}folders;
                 DROP TABLE IF EXISTS {p}users;
                 CREATE TABLE {p}users (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE,
                   password TEXT NOT NULL);
                 CREATE TABLE {p}folders (id INTEGER PRIMARY KEY, user_id INTEGER NOT NULL,
                   name TEXT NOT NULL, msg_count INTEGER NOT NULL, UNIQUE (user_id, name));
                 CREATE TABLE {p}messages (id INTEGER PRIMARY KEY, user_id INTEGER NOT NULL,
                   folder_id INTEGER NOT NULL, sender TEXT NOT NULL, recipient TEXT NOT NULL,
                   subject TEXT NOT NULL, sent INTEGER NOT NULL, size INTEGER NOT NULL,
                   flags INTEGER NOT NULL, headers TEXT NOT NULL, body TEXT NOT NULL);
                 CREATE INDEX {p}m_date ON {p}messages (folder_id, sent, id);
                 CREATE INDEX {p}m_sender ON {p}messages (folder_id, sender, sent);
                 CREATE INDEX {p}m_subject ON {p}messages (folder_id, subject, sent);
                 CREATE INDEX {p}m_user ON {p}messages (user_id, sent);
                 COMMIT;"
            ))
        })
    }

    fn load(&self, corpus: &Corpus) -> Result<Loaded> {
        self.with(None, |c, p| {
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let mut n = Loaded::default();
            {
                let mut ins_user = tx.prepare(&format!(
                    "INSERT INTO {p}users (id, name, password) VALUES (?1, ?2, ?3)"
                ))?;
                let mut ins_folder = tx.prepare(&format!(
                    "INSERT INTO {p}folders (id, user_id, name, msg_count) VALUES (?1,?2,?3,?4)"
                ))?;
                let mut ins_msg = tx.prepare(&format!(
                    "INSERT INTO {p}messages (id, user_id, folder_id, sender, recipient, subject,
                     sent, size, flags, headers, body) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11)"
                ))?;
                for u in corpus.users() {
                    ins_user.execute(params![u.id, u.name, u.password])?;
                    n.users += 1;
                    for f in &u.folders {
                        ins_folder.execute(params![f.id, u.id, f.name, f.count])?;
                        n.folders += 1;
                        for m in corpus.messages(u, f) {
                            let s = &m.summary;
                            ins_msg.execute(params![
                                s.id,
                                u.id,
                                s.folder_id,
                                s.sender,
                                m.recipient,
                                s.subject,
                                s.date,
                                s.size,
                                s.flags,
                                m.headers,
                                m.body
                            ])?;
                            n.messages += 1;
                            n.bytes += s.size as u64;
                        }
                    }
                }
            }
            tx.commit()?;
            Ok(n)
        })
    }

    fn audit(&self) -> Result<Audit> {
        self.with(None, |c, p| {
            let users = c.query_row(&format!("SELECT COUNT(*) FROM {p}users"), [], |r| r.get(0))?;
            let messages = c.query_row(&format!("SELECT COUNT(*) FROM {p}messages"), [], |r| {
                r.get(0)
            })?;
            let folder_counts = c.query_row(
                &format!("SELECT COALESCE(SUM(msg_count), 0) FROM {p}folders"),
                [],
                |r| r.get(0),
            )?;
            let bad_folders = c.query_row(
                &format!(
                    "SELECT COUNT(*) FROM {p}folders f WHERE f.msg_count <>
                     (SELECT COUNT(*) FROM {p}messages m WHERE m.folder_id = f.id)"
                ),
                [],
                |r| r.get(0),
            )?;
            Ok(Audit {
                users,
                messages,
                folder_counts,
                bad_folders,
            })
        })
    }

    fn tables(&self) -> Result<u32> {
        let [u, f, m] = super::table_names(&self.p);
        self.with(None, |c, _| {
            c.query_row(
                "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND lower(name) IN (?1, ?2, ?3)",
                params![u, f, m],
                |r| r.get(0),
            )
        })
    }

    fn login(&self, name: &str, password: &str, meta: &Meta) -> Result<Option<i64>> {
        self.with(Some(meta), |c, p| {
            c.prepare_cached(&format!(
                "SELECT id FROM {p}users WHERE name = ?1 AND password = ?2"
            ))?
            .query_row(params![name, password], |r| r.get(0))
            .optional()
        })
    }

    fn folders(&self, user: i64, meta: &Meta) -> Result<Vec<Folder>> {
        self.with(Some(meta), |c, p| {
            let mut st = c.prepare_cached(&format!(
                "SELECT id, name, msg_count FROM {p}folders WHERE user_id = ?1 ORDER BY name"
            ))?;
            let rows = st.query_map(params![user], |r| {
                Ok(Folder {
                    id: r.get(0)?,
                    name: r.get(1)?,
                    count: r.get(2)?,
                })
            })?;
            rows.collect()
        })
    }

    fn messages(
        &self,
        user: i64,
        folder: i64,
        sort: Sort,
        offset: u32,
        limit: u32,
        meta: &Meta,
    ) -> Result<Option<(Folder, Vec<Summary>)>> {
        self.with(Some(meta), |c, p| {
            let f = c
                .prepare_cached(&format!(
                    "SELECT id, name, msg_count FROM {p}folders WHERE id = ?1 AND user_id = ?2"
                ))?
                .query_row(params![folder, user], |r| {
                    Ok(Folder {
                        id: r.get(0)?,
                        name: r.get(1)?,
                        count: r.get(2)?,
                    })
                })
                .optional()?;
            let Some(f) = f else { return Ok(None) };
            let mut st = c.prepare_cached(&format!(
                "SELECT {SUMMARY} FROM {p}messages WHERE folder_id = ?1 ORDER BY {} \
                 LIMIT ?2 OFFSET ?3",
                sort.order_by()
            ))?;
            let rows = st
                .query_map(params![folder, limit.min(MAX_PAGE), offset], summary)?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(Some((f, rows)))
        })
    }

    fn message(&self, user: i64, id: i64, meta: &Meta) -> Result<Option<Message>> {
        self.with(Some(meta), |c, p| {
            let m = c
                .prepare_cached(&format!(
                    "SELECT {SUMMARY}, recipient, headers, body FROM {p}messages
                     WHERE id = ?1 AND user_id = ?2"
                ))?
                .query_row(params![id, user], |r| {
                    Ok(Message {
                        summary: summary(r)?,
                        recipient: r.get(7)?,
                        headers: r.get(8)?,
                        body: r.get(9)?,
                    })
                })
                .optional()?;
            if let Some(m) = &m
                && m.summary.flags & 1 == 0
            {
                c.prepare_cached(&format!(
                    "UPDATE {p}messages SET flags = flags | 1 WHERE id = ?1"
                ))?
                .execute(params![id])?;
            }
            Ok(m)
        })
    }

    fn delete(&self, user: i64, id: i64, meta: &Meta) -> Result<Moved> {
        self.with(Some(meta), |c, p| {
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let from: Option<i64> = tx
                .prepare_cached(&format!(
                    "SELECT folder_id FROM {p}messages WHERE id = ?1 AND user_id = ?2"
                ))?
                .query_row(params![id, user], |r| r.get(0))
                .optional()?;
            let Some(from) = from else {
                return Ok(Moved::NoMessage);
            };
            let trash: Option<i64> = tx
                .prepare_cached(&format!(
                    "SELECT id FROM {p}folders WHERE user_id = ?1 AND name = ?2"
                ))?
                .query_row(params![user, TRASH], |r| r.get(0))
                .optional()?;
            let Some(trash) = trash else {
                return Ok(Moved::NoFolder);
            };
            let done = if from == trash {
                tx.prepare_cached(&format!("DELETE FROM {p}messages WHERE id = ?1"))?
                    .execute(params![id])?;
                tx.prepare_cached(&format!(
                    "UPDATE {p}folders SET msg_count = msg_count - 1 WHERE id = ?1"
                ))?
                .execute(params![from])?;
                Moved::Purged { from }
            } else {
                move_message(&tx, p, id, from, trash)?;
                Moved::Moved { from, to: trash }
            };
            tx.commit()?;
            Ok(done)
        })
    }

    fn refile(&self, user: i64, id: i64, to: i64, meta: &Meta) -> Result<Moved> {
        self.with(Some(meta), |c, p| {
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let owns: Option<i64> = tx
                .prepare_cached(&format!(
                    "SELECT id FROM {p}folders WHERE id = ?1 AND user_id = ?2"
                ))?
                .query_row(params![to, user], |r| r.get(0))
                .optional()?;
            if owns.is_none() {
                return Ok(Moved::NoFolder);
            }
            let from: Option<i64> = tx
                .prepare_cached(&format!(
                    "SELECT folder_id FROM {p}messages WHERE id = ?1 AND user_id = ?2"
                ))?
                .query_row(params![id, user], |r| r.get(0))
                .optional()?;
            let Some(from) = from else {
                return Ok(Moved::NoMessage);
            };
            if from != to {
                move_message(&tx, p, id, from, to)?;
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
            let filter = match field {
                SearchField::Headers => {
                    "(subject LIKE ?2 ESCAPE '\\' OR sender LIKE ?2 ESCAPE '\\')"
                }
                SearchField::Body => "body LIKE ?2 ESCAPE '\\'",
            };
            let mut st = c.prepare_cached(&format!(
                "SELECT {SUMMARY} FROM {p}messages WHERE user_id = ?1 AND {filter} \
                 ORDER BY sent DESC LIMIT ?3"
            ))?;
            let rows = st.query_map(params![user, pattern, limit.min(MAX_RESULTS)], summary)?;
            rows.collect()
        })
    }
}
