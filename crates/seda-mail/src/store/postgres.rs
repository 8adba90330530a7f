//! PostgreSQL through the synchronous `postgres` crate: pooled clients, cancellation by the
//! server's cancel request.

use std::collections::HashMap;
use std::io::Write;

use postgres::error::SqlState;
use postgres::{Client, GenericClient, NoTls, Row, Statement};
use seda::Meta;

use super::{
    Audit, ConnPool, Folder, Loaded, MAX_PAGE, MAX_RESULTS, Message, Moved, Result, SearchField,
    Sort, Store, StoreError, Summary, TRASH, check, like_pattern, watch,
};
use crate::corpus::Corpus;

/// Most prepared statements kept per connection (the service uses about twenty).
const MAX_STATEMENTS: usize = 64;

/// A client and the statements prepared on it: each query is parsed once per connection, so
/// a call costs one round trip instead of two.
struct PgConn {
    client: Client,
    stmts: HashMap<String, Statement>,
}

/// The prepared statement for `sql` on this connection.
fn prep(
    stmts: &mut HashMap<String, Statement>,
    c: &mut impl GenericClient,
    sql: &str,
) -> std::result::Result<Statement, postgres::Error> {
    if let Some(s) = stmts.get(sql) {
        return Ok(s.clone());
    }
    let s = c.prepare(sql)?;
    if stmts.len() >= MAX_STATEMENTS {
        stmts.clear();
    }
    stmts.insert(sql.to_string(), s.clone());
    Ok(s)
}

type Stmts = HashMap<String, Statement>;

/// The PostgreSQL backend.
pub struct PostgresStore {
    url: String,
    p: String,
    pool: ConnPool<PgConn>,
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStore")
            .field("url", &self.url)
            .finish()
    }
}

fn db(e: postgres::Error) -> StoreError {
    if e.code() == Some(&SqlState::QUERY_CANCELED) {
        StoreError::Cancelled
    } else {
        StoreError::Db(e.to_string())
    }
}

const SUMMARY: &str = "id, folder_id, sender, subject, sent, size, flags";

fn summary(r: &Row) -> Summary {
    Summary {
        id: r.get(0),
        folder_id: r.get(1),
        sender: r.get(2),
        subject: r.get(3),
        date: r.get(4),
        size: r.get(5),
        flags: r.get(6),
    }
}

fn folder(r: &Row) -> Folder {
    Folder {
        id: r.get(0),
        name: r.get(1),
        count: r.get(2),
    }
}

/// Escapes a value for COPY's text format.
fn copy_text(out: &mut Vec<u8>, s: &str) {
    for b in s.bytes() {
        match b {
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            _ => out.push(b),
        }
    }
}

impl PostgresStore {
    /// Connects to `url` (`postgres://user@host:port/db`).
    pub fn open(url: &str, prefix: &str) -> Result<PostgresStore> {
        let store = PostgresStore {
            url: url.to_string(),
            p: prefix.to_string(),
            pool: ConnPool::new(64),
        };
        let c = store.connect()?;
        store.pool.put(c);
        Ok(store)
    }

    fn connect(&self) -> Result<PgConn> {
        let client = Client::connect(&self.url, NoTls)
            .map_err(|e| StoreError::Db(format!("cannot connect to {}: {e}", self.url)))?;
        Ok(PgConn {
            client,
            stmts: HashMap::new(),
        })
    }

    fn with<T>(
        &self,
        meta: Option<&Meta>,
        f: impl FnOnce(&mut Client, &mut Stmts, &str) -> std::result::Result<T, postgres::Error>,
    ) -> Result<T> {
        if let Some(m) = meta {
            check(m)?;
        }
        let mut conn = match self.pool.take() {
            Some(c) if !c.client.is_closed() => c,
            _ => self.connect()?,
        };
        let mut guard = meta.map(|m| {
            let token = conn.client.cancel_token();
            watch::watch(m, move || {
                let _ = token.cancel_query(NoTls);
            })
        });
        let out = f(&mut conn.client, &mut conn.stmts, &self.p);
        let fired = guard.as_mut().is_some_and(|g| g.fired());
        drop(guard);
        if !conn.client.is_closed() {
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
    tx: &mut postgres::Transaction<'_>,
    st: &mut Stmts,
    p: &str,
    id: i64,
    from: i64,
    to: i64,
) -> std::result::Result<(), postgres::Error> {
    // Lower folder id first: the same lock order everywhere, so moves cannot deadlock.
    let (a, da, b, db) = if from < to {
        (from, -1i64, to, 1i64)
    } else {
        (to, 1, from, -1)
    };
    let upd = prep(
        st,
        tx,
        &format!("UPDATE {p}folders SET msg_count = msg_count + $1 WHERE id = $2"),
    )?;
    tx.execute(&upd, &[&da, &a])?;
    tx.execute(&upd, &[&db, &b])?;
    let mv = prep(
        st,
        tx,
        &format!("UPDATE {p}messages SET folder_id = $1 WHERE id = $2"),
    )?;
    tx.execute(&mv, &[&to, &id])?;
    Ok(())
}

fn one_i64(
    c: &mut impl GenericClient,
    st: &mut Stmts,
    sql: &str,
    params: &[&(dyn postgres::types::ToSql + Sync)],
) -> std::result::Result<Option<i64>, postgres::Error> {
    let s = prep(st, c, sql)?;
    Ok(c.query_opt(&s, params)?.map(|r| r.get(0)))
}

impl Store for PostgresStore {
    fn backend(&self) -> &'static str {
        "postgres"
    }

    fn reset(&self) -> Result<()> {
        // Statements prepared against the old tables are stale: start with fresh connections.
        self.pool.clear();
        let out = self.with(None, |c, _, p| {
            c.batch_execute(&format!(
                "DROP TABLE IF EXISTS {p}messages; DROP TABLE IF EXISTS {p}folders;
                 DROP TABLE IF EXISTS {p}users;
                 CREATE TABLE {p}users (id BIGINT PRIMARY KEY, name TEXT NOT NULL UNIQUE,
                   password TEXT NOT NULL);
                 CREATE TABLE {p}folders (id BIGINT PRIMARY KEY, user_id BIGINT NOT NULL,
                   name TEXT NOT NULL, msg_count BIGINT NOT NULL, UNIQUE (user_id, name));
                 CREATE TABLE {p}messages (id BIGINT PRIMARY KEY, user_id BIGINT NOT NULL,
                   folder_id BIGINT NOT NULL, sender TEXT NOT NULL, recipient TEXT NOT NULL,
                   subject TEXT NOT NULL, sent BIGINT NOT NULL, size BIGINT NOT NULL,
                   flags BIGINT NOT NULL, headers TEXT NOT NULL, body TEXT NOT NULL);
                 CREATE INDEX {p}m_date ON {p}messages (folder_id, sent, id);
                 CREATE INDEX {p}m_sender ON {p}messages (folder_id, sender, sent);
                 CREATE INDEX {p}m_subject ON {p}messages (folder_id, subject, sent);
                 CREATE INDEX {p}m_user ON {p}messages (user_id, sent);"
            ))
        });
        self.pool.clear();
        out
    }

    fn load(&self, corpus: &Corpus) -> Result<Loaded> {
        let mut n = Loaded::default();
        let mut io_error = None;
        let out = self.with(None, |c, _, p| {
            let mut tx = c.transaction()?;
            for u in corpus.users() {
                tx.execute(
                    &format!("INSERT INTO {p}users (id, name, password) VALUES ($1, $2, $3)"),
                    &[&u.id, &u.name, &u.password],
                )?;
                n.users += 1;
                for f in &u.folders {
                    tx.execute(
                        &format!(
                            "INSERT INTO {p}folders (id, user_id, name, msg_count) \
                             VALUES ($1, $2, $3, $4)"
                        ),
                        &[&f.id, &u.id, &f.name, &f.count],
                    )?;
                    n.folders += 1;
                }
            }
            // COPY in text format: far faster than row-by-row INSERTs.
            let mut w = tx.copy_in(&format!(
                "COPY {p}messages (id, user_id, folder_id, sender, recipient, subject, sent, \
                 size, flags, headers, body) FROM STDIN"
            ))?;
            let mut buf = Vec::with_capacity(1 << 20);
            'users: for u in corpus.users() {
                for f in &u.folders {
                    for m in corpus.messages(u, f) {
                        let s = &m.summary;
                        buf.extend_from_slice(
                            format!("{}\t{}\t{}\t", s.id, u.id, s.folder_id).as_bytes(),
                        );
                        copy_text(&mut buf, &s.sender);
                        buf.push(b'\t');
                        copy_text(&mut buf, &m.recipient);
                        buf.push(b'\t');
                        copy_text(&mut buf, &s.subject);
                        buf.extend_from_slice(
                            format!("\t{}\t{}\t{}\t", s.date, s.size, s.flags).as_bytes(),
                        );
                        copy_text(&mut buf, &m.headers);
                        buf.push(b'\t');
                        copy_text(&mut buf, &m.body);
                        buf.push(b'\n');
                        n.messages += 1;
                        n.bytes += s.size as u64;
                        if buf.len() > 1 << 20 {
                            if let Err(e) = w.write_all(&buf) {
                                io_error = Some(e.to_string());
                                break 'users;
                            }
                            buf.clear();
                        }
                    }
                }
            }
            if io_error.is_none()
                && let Err(e) = w.write_all(&buf)
            {
                io_error = Some(e.to_string());
            }
            if io_error.is_some() {
                // Dropping the writer and the transaction aborts the COPY and rolls back.
                return Ok(());
            }
            w.finish()?;
            tx.commit()?;
            // Fresh statistics, so the planner uses the indexes from the first query on.
            c.batch_execute(&format!("ANALYZE {p}users, {p}folders, {p}messages"))
        });
        out?;
        match io_error {
            Some(e) => Err(StoreError::Db(format!("corpus load failed: {e}"))),
            None => Ok(n),
        }
    }

    fn audit(&self) -> Result<Audit> {
        self.with(None, |c, _, p| {
            let q = |c: &mut Client, sql: String| -> std::result::Result<i64, postgres::Error> {
                Ok(c.query_one(&sql, &[])?.get(0))
            };
            Ok(Audit {
                users: q(c, format!("SELECT COUNT(*) FROM {p}users"))?,
                messages: q(c, format!("SELECT COUNT(*) FROM {p}messages"))?,
                folder_counts: q(
                    c,
                    format!("SELECT COALESCE(SUM(msg_count), 0)::BIGINT FROM {p}folders"),
                )?,
                bad_folders: q(
                    c,
                    format!(
                        "SELECT COUNT(*) FROM {p}folders f WHERE f.msg_count <>
                         (SELECT COUNT(*) FROM {p}messages m WHERE m.folder_id = f.id)"
                    ),
                )?,
            })
        })
    }

    fn tables(&self) -> Result<u32> {
        let [u, f, m] = super::table_names(&self.p);
        self.with(None, |c, _, _| {
            let n: i64 = c
                .query_one(
                    "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = \
                     current_schema() AND lower(table_name) IN ($1, $2, $3)",
                    &[&u, &f, &m],
                )?
                .get(0);
            Ok(n as u32)
        })
    }

    fn login(&self, name: &str, password: &str, meta: &Meta) -> Result<Option<i64>> {
        self.with(Some(meta), |c, st, p| {
            one_i64(
                c,
                st,
                &format!("SELECT id FROM {p}users WHERE name = $1 AND password = $2"),
                &[&name, &password],
            )
        })
    }

    fn folders(&self, user: i64, meta: &Meta) -> Result<Vec<Folder>> {
        self.with(Some(meta), |c, st, p| {
            let stmt = prep(
                st,
                c,
                &format!(
                    "SELECT id, name, msg_count FROM {p}folders WHERE user_id = $1 ORDER BY name"
                ),
            )?;
            let rows = c.query(&stmt, &[&user])?;
            Ok(rows.iter().map(folder).collect())
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
        self.with(Some(meta), |c, st, p| {
            let stmt = prep(
                st,
                c,
                &format!(
                    "SELECT id, name, msg_count FROM {p}folders WHERE id = $1 AND user_id = $2"
                ),
            )?;
            let f = c.query_opt(&stmt, &[&folder_id, &user])?;
            let Some(f) = f.as_ref().map(folder) else {
                return Ok(None);
            };
            let stmt = prep(
                st,
                c,
                &format!(
                    "SELECT {SUMMARY} FROM {p}messages WHERE folder_id = $1 ORDER BY {} \
                     LIMIT $2 OFFSET $3",
                    sort.order_by()
                ),
            )?;
            let rows = c.query(
                &stmt,
                &[
                    &folder_id,
                    &i64::from(limit.min(MAX_PAGE)),
                    &i64::from(offset),
                ],
            )?;
            Ok(Some((f, rows.iter().map(summary).collect())))
        })
    }

    fn message(&self, user: i64, id: i64, meta: &Meta) -> Result<Option<Message>> {
        self.with(Some(meta), |c, st, p| {
            let stmt = prep(
                st,
                c,
                &format!(
                    "SELECT {SUMMARY}, recipient, headers, body FROM {p}messages \
                     WHERE id = $1 AND user_id = $2"
                ),
            )?;
            let r = c.query_opt(&stmt, &[&id, &user])?;
            let m = r.map(|r| Message {
                summary: summary(&r),
                recipient: r.get(7),
                headers: r.get(8),
                body: r.get(9),
            });
            if let Some(m) = &m
                && m.summary.flags & 1 == 0
            {
                let stmt = prep(
                    st,
                    c,
                    &format!("UPDATE {p}messages SET flags = flags | 1 WHERE id = $1"),
                )?;
                c.execute(&stmt, &[&id])?;
            }
            Ok(m)
        })
    }

    fn delete(&self, user: i64, id: i64, meta: &Meta) -> Result<Moved> {
        self.with(Some(meta), |c, st, p| {
            let mut tx = c.transaction()?;
            let trash = one_i64(
                &mut tx,
                st,
                &format!("SELECT id FROM {p}folders WHERE user_id = $1 AND name = $2"),
                &[&user, &TRASH],
            )?;
            let Some(trash) = trash else {
                return Ok(Moved::NoFolder);
            };
            let from = one_i64(
                &mut tx,
                st,
                &format!(
                    "SELECT folder_id FROM {p}messages WHERE id = $1 AND user_id = $2 FOR UPDATE"
                ),
                &[&id, &user],
            )?;
            let Some(from) = from else {
                return Ok(Moved::NoMessage);
            };
            let done = if from == trash {
                let stmt = prep(
                    st,
                    &mut tx,
                    &format!("UPDATE {p}folders SET msg_count = msg_count - 1 WHERE id = $1"),
                )?;
                tx.execute(&stmt, &[&from])?;
                let stmt = prep(
                    st,
                    &mut tx,
                    &format!("DELETE FROM {p}messages WHERE id = $1"),
                )?;
                tx.execute(&stmt, &[&id])?;
                Moved::Purged { from }
            } else {
                move_message(&mut tx, st, p, id, from, trash)?;
                Moved::Moved { from, to: trash }
            };
            tx.commit()?;
            Ok(done)
        })
    }

    fn refile(&self, user: i64, id: i64, to: i64, meta: &Meta) -> Result<Moved> {
        self.with(Some(meta), |c, st, p| {
            let mut tx = c.transaction()?;
            let owns = one_i64(
                &mut tx,
                st,
                &format!("SELECT id FROM {p}folders WHERE id = $1 AND user_id = $2"),
                &[&to, &user],
            )?;
            if owns.is_none() {
                return Ok(Moved::NoFolder);
            }
            let from = one_i64(
                &mut tx,
                st,
                &format!(
                    "SELECT folder_id FROM {p}messages WHERE id = $1 AND user_id = $2 FOR UPDATE"
                ),
                &[&id, &user],
            )?;
            let Some(from) = from else {
                return Ok(Moved::NoMessage);
            };
            if from != to {
                move_message(&mut tx, st, p, id, from, to)?;
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
        self.with(Some(meta), |c, st, p| {
            let filter = match field {
                SearchField::Headers => {
                    "(subject ILIKE $2 ESCAPE '\\' OR sender ILIKE $2 ESCAPE '\\')"
                }
                SearchField::Body => "body ILIKE $2 ESCAPE '\\'",
            };
            let stmt = prep(
                st,
                c,
                &format!(
                    "SELECT {SUMMARY} FROM {p}messages WHERE user_id = $1 AND {filter} \
                     ORDER BY sent DESC LIMIT $3"
                ),
            )?;
            let rows = c.query(
                &stmt,
                &[&user, &pattern, &i64::from(limit.min(MAX_RESULTS))],
            )?;
            Ok(rows.iter().map(summary).collect())
        })
    }
}
