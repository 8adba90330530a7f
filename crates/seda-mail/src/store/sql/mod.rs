//! The mail store, written once: every transaction of [`Store`] over a [`Backend`].
//!
//! Reading one method here tells what every backend does. Writes are single transactions;
//! preconditions are checked in one order everywhere (the target folder, then the message), so
//! an edge case answers the same on SQLite, PostgreSQL and MariaDB.

use seda::Meta;

use super::backend::{Backend, Conn, ConnPool, Row, Val};
use super::page::LISTING_INDEXES;
use super::{
    Audit, Folder, IdleCheck, Loaded, MAX_PAGE, MAX_RESULTS, Message, Moved, Page, Result,
    SearchField, SearchQuery, Sort, Store, StoreError, Summary, TRASH, check, like_pattern, watch,
};
use crate::corpus::Corpus;

mod listing;
mod load;

use listing::Listing;

/// Most idle connections kept.
const MAX_IDLE: usize = 64;
/// Bytes of message text per multi-row `INSERT` of a load (under MariaDB's default 16 MB
/// `max_allowed_packet`).
const LOAD_BYTES: usize = 2 << 20;

const SUMMARY: &str = "id, folder_id, sender, subject, sent, size, flags";

fn summary(r: &mut Row) -> Result<Summary> {
    Ok(Summary {
        id: r.int(0)?,
        folder_id: r.int(1)?,
        sender: r.text(2)?,
        subject: r.text(3)?,
        date: r.int(4)?,
        size: r.int(5)?,
        flags: r.int(6)?,
    })
}

fn folder(r: &mut Row) -> Result<Folder> {
    Ok(Folder {
        id: r.int(0)?,
        name: r.text(1)?,
        count: r.int(2)?,
    })
}

/// The first column of the first row, if any.
fn first_int(rows: &[Row]) -> Result<Option<i64>> {
    rows.first().map(|r| r.int(0)).transpose()
}

/// A store on backend `B`, with table names prefixed by `p`.
pub(crate) struct SqlStore<B: Backend> {
    backend: B,
    p: String,
    pool: ConnPool<B::Conn>,
}

impl<B: Backend> std::fmt::Debug for SqlStore<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqlStore")
            .field("backend", &B::NAME)
            .field("prefix", &self.p)
            .finish_non_exhaustive()
    }
}

impl<B: Backend> SqlStore<B> {
    /// Opens one connection at once, so a wrong address fails here rather than at the first
    /// request.
    pub(crate) fn new(backend: B, prefix: &str) -> Result<Self> {
        let store = SqlStore {
            backend,
            p: prefix.to_string(),
            pool: ConnPool::new(MAX_IDLE),
        };
        let c = store.backend.connect()?;
        store.pool.put(c);
        Ok(store)
    }

    /// Runs `f` on a pooled connection; with `meta`, interrupts it when the request is
    /// cancelled or expires. A connection comes back to the pool only after a call that
    /// succeeded and was not interrupted: after an error it may sit in a failed transaction,
    /// and after an interrupt a late cancel could hit the next statement run on it.
    fn with<T>(&self, meta: Option<&Meta>, f: impl FnOnce(&mut B::Conn) -> Result<T>) -> Result<T> {
        if let Some(m) = meta {
            check(m)?;
        }
        let mut conn = loop {
            match self.pool.take() {
                Some(c) if c.usable() => break c,
                Some(_) => continue,
                None => break self.backend.connect()?,
            }
        };
        let guard = meta.map(|m| watch::watch(m, conn.interrupter()));
        let out = f(&mut conn);
        // After this the interrupt never runs, unless it was already taken (then `fired`).
        let fired = guard.is_some_and(watch::Guard::finish);
        match out {
            Ok(v) => {
                if !fired {
                    self.pool.put(conn);
                }
                Ok(v)
            }
            Err(_) if fired => Err(StoreError::Cancelled),
            Err(e) => Err(e),
        }
    }

    /// Runs `f` in one write transaction: committed if it returns `Ok`, rolled back otherwise.
    fn tx<T>(&self, meta: Option<&Meta>, f: impl FnOnce(&mut B::Conn) -> Result<T>) -> Result<T> {
        self.with(meta, |c| {
            c.batch(B::DIALECT.begin)?;
            match f(c) {
                Ok(v) => {
                    c.batch("COMMIT")?;
                    Ok(v)
                }
                Err(e) => {
                    // The connection is dropped after an error anyway; closing it rolls back too.
                    let _ = c.batch("ROLLBACK");
                    Err(e)
                }
            }
        })
    }

    fn create_tables(&self, c: &mut B::Conn) -> Result<()> {
        let p = &self.p;
        let d = &B::DIALECT;
        let (int, short, exact, long, opts) = (
            d.int,
            d.short_text,
            d.exact_text,
            d.long_text,
            d.table_options,
        );
        for sql in [
            format!(
                "CREATE TABLE {p}users (id {int} PRIMARY KEY, name {exact} NOT NULL UNIQUE, \
                 password {exact} NOT NULL, class {int} NOT NULL DEFAULT 0){opts}"
            ),
            format!(
                "CREATE TABLE {p}folders (id {int} PRIMARY KEY, user_id {int} NOT NULL, \
                 name {short} NOT NULL, msg_count {int} NOT NULL, UNIQUE (user_id, name)){opts}"
            ),
            format!(
                "CREATE TABLE {p}messages (id {int} PRIMARY KEY, user_id {int} NOT NULL, \
                 folder_id {int} NOT NULL, sender {short} NOT NULL, recipient {short} NOT NULL, \
                 subject {short} NOT NULL, sent {int} NOT NULL, size {int} NOT NULL, \
                 flags {int} NOT NULL, headers {long} NOT NULL, body {long} NOT NULL){opts}"
            ),
            format!("CREATE INDEX {p}m_user ON {p}messages (user_id, sent)"),
        ] {
            c.batch(&sql)?;
        }
        self.create_listing_indexes(c)
    }

    fn create_listing_indexes(&self, c: &mut B::Conn) -> Result<()> {
        for sql in LISTING_INDEXES {
            c.batch(&sql.replace("{p}", &self.p))?;
        }
        Ok(())
    }

    /// Moves message `id` from folder `from` to `to` and fixes both counts.
    fn move_message(&self, c: &mut B::Conn, id: i64, from: i64, to: i64) -> Result<()> {
        let p = &self.p;
        // Lower folder id first: the same lock order everywhere, so moves cannot deadlock.
        let (a, da, b, db) = if from < to {
            (from, -1, to, 1)
        } else {
            (to, 1, from, -1)
        };
        let upd = format!("UPDATE {p}folders SET msg_count = msg_count + ? WHERE id = ?");
        c.exec(&upd, &[da.into(), a.into()])?;
        c.exec(&upd, &[db.into(), b.into()])?;
        c.exec(
            &format!("UPDATE {p}messages SET folder_id = ? WHERE id = ?"),
            &[to.into(), id.into()],
        )?;
        Ok(())
    }

    /// The folder message `id` of `user` is in, locked for this transaction.
    fn folder_of(&self, c: &mut B::Conn, user: i64, id: i64) -> Result<Option<i64>> {
        let rows = c.query(
            &format!(
                "SELECT folder_id FROM {}messages WHERE id = ? AND user_id = ?{}",
                self.p,
                B::DIALECT.for_update
            ),
            &[id.into(), user.into()],
        )?;
        first_int(&rows)
    }
}

impl<B: Backend> Store for SqlStore<B> {
    fn backend(&self) -> &'static str {
        B::NAME
    }

    fn create(&self) -> Result<()> {
        self.pool.clear();
        let out = self.tx(None, |c| self.create_tables(c));
        // Statements prepared against the old catalogue are stale: start with fresh connections.
        self.pool.clear();
        out
    }

    fn reset(&self) -> Result<()> {
        self.pool.clear();
        let out = self.tx(None, |c| {
            for t in ["messages", "folders", "users"] {
                c.batch(&format!("DROP TABLE IF EXISTS {}{t}", self.p))?;
            }
            self.create_tables(c)
        });
        self.pool.clear();
        out
    }

    fn load(&self, corpus: &Corpus) -> Result<Loaded> {
        self.load_corpus(corpus)
    }

    fn audit(&self) -> Result<Audit> {
        let p = &self.p;
        let cast = B::DIALECT.cast_int;
        self.with(None, |c| {
            let mut q =
                |sql: String| -> Result<i64> { Ok(first_int(&c.query(&sql, &[])?)?.unwrap_or(0)) };
            Ok(Audit {
                users: q(format!("SELECT COUNT(*) FROM {p}users"))?,
                messages: q(format!("SELECT COUNT(*) FROM {p}messages"))?,
                folder_counts: q(format!(
                    "SELECT CAST(COALESCE(SUM(msg_count), 0) AS {cast}) FROM {p}folders"
                ))?,
                bad_folders: q(format!(
                    "SELECT COUNT(*) FROM {p}folders f WHERE f.msg_count <> \
                     (SELECT COUNT(*) FROM {p}messages m WHERE m.folder_id = f.id)"
                ))?,
            })
        })
    }

    fn check_idle(&self) -> Result<IdleCheck> {
        let mut check = IdleCheck::default();
        for mut c in self.pool.take_all() {
            check.connections += 1;
            let answers = c.usable() && c.query("SELECT 1", &[]).is_ok();
            match c.in_transaction() {
                Ok(true) => check.in_transaction += 1,
                Ok(false) if answers => check.usable += 1,
                _ => {}
            }
            // Closed here: the caller counts the process's open files without them.
        }
        self.backend.close_helpers();
        Ok(check)
    }

    fn reclaim(&self) -> Result<()> {
        if B::DIALECT.reclaim.is_empty() {
            return Ok(());
        }
        self.with(None, |c| {
            B::DIALECT
                .reclaim
                .iter()
                .try_for_each(|sql| c.batch(&sql.replace("{p}", &self.p)))
        })
    }

    fn checkpoint(&self) -> Result<()> {
        if B::DIALECT.checkpoint.is_empty() {
            return Ok(());
        }
        self.with(None, |c| c.query(B::DIALECT.checkpoint, &[]).map(drop))
    }

    fn tables(&self) -> Result<u32> {
        let [u, f, m] = super::table_names(&self.p);
        self.with(None, |c| {
            let rows = c.query(
                B::DIALECT.count_tables,
                &[u.as_str().into(), f.as_str().into(), m.as_str().into()],
            )?;
            Ok(first_int(&rows)?.unwrap_or(0).clamp(0, 3) as u32)
        })
    }

    fn login(&self, name: &str, password: &str, meta: &Meta) -> Result<Option<(i64, u8)>> {
        let row = self.with(Some(meta), |c| {
            let mut rows = c.query(
                &format!(
                    "SELECT id, password, class FROM {}users WHERE name = ?",
                    self.p
                ),
                &[name.into()],
            )?;
            match rows.first_mut() {
                Some(r) => Ok(Some((r.int(0)?, r.text(1)?, r.int(2)?))),
                None => Ok(None),
            }
        })?;
        // Verified here, off the connection: the hash's cost holds no database resource.
        match row {
            Some((id, hash, class)) if crate::password::verify(password, &hash) => {
                let class = u8::try_from(class.clamp(0, i64::from(crate::MAX_CLASS))).unwrap_or(0);
                Ok(Some((id, class)))
            }
            Some(_) => Ok(None),
            None => {
                crate::password::verify_nobody(password);
                Ok(None)
            }
        }
    }

    fn classed_users(&self) -> Result<Vec<(String, u8)>> {
        self.with(None, |c| {
            c.query(
                &format!("SELECT name, class FROM {}users WHERE class <> 0", self.p),
                &[],
            )?
            .iter_mut()
            .map(|r| {
                let class = r.int(1)?.clamp(0, i64::from(crate::MAX_CLASS));
                Ok((r.text(0)?, u8::try_from(class).unwrap_or(0)))
            })
            .collect()
        })
    }

    fn folders(&self, user: i64, meta: &Meta) -> Result<Vec<Folder>> {
        self.with(Some(meta), |c| {
            c.query(
                &format!(
                    "SELECT id, name, msg_count FROM {}folders WHERE user_id = ? ORDER BY name",
                    self.p
                ),
                &[user.into()],
            )?
            .iter_mut()
            .map(folder)
            .collect()
        })
    }

    fn upgrade(&self) -> Result<()> {
        let out = self.with(None, |c| self.create_listing_indexes(c));
        // Statements prepared before the new indexes may keep their old plans.
        self.pool.clear();
        out
    }

    fn messages(
        &self,
        user: i64,
        folder_id: i64,
        sort: Sort,
        page: Page,
        limit: u32,
        meta: &Meta,
    ) -> Result<Option<(Folder, Vec<Summary>)>> {
        let p = &self.p;
        self.with(Some(meta), |c| {
            let mut f = c.query(
                &format!("SELECT id, name, msg_count FROM {p}folders WHERE id = ? AND user_id = ?"),
                &[folder_id.into(), user.into()],
            )?;
            let Some(f) = f.first_mut().map(folder).transpose()? else {
                return Ok(None);
            };
            let mut key = None;
            let q = Listing {
                user,
                folder: folder_id,
                sort,
                page,
                limit,
            };
            let (sql, args, backwards) = self.listing(c, &q, &mut key)?;
            let mut rows = c
                .query(&sql, &args)?
                .iter_mut()
                .map(summary)
                .collect::<Result<Vec<_>>>()?;
            if backwards {
                rows.reverse();
            }
            Ok(Some((f, rows)))
        })
    }

    fn listing_plan(&self, folder_id: i64, sort: Sort, page: Page) -> Result<Vec<String>> {
        self.with(None, |c| {
            // The plan of the query `messages` runs for the folder's owner.
            let owner = first_int(&c.query(
                &format!("SELECT user_id FROM {}folders WHERE id = ?", self.p),
                &[folder_id.into()],
            )?)?
            .unwrap_or(0);
            let mut key = None;
            let q = Listing {
                user: owner,
                folder: folder_id,
                sort,
                page,
                limit: MAX_PAGE,
            };
            let (sql, args, _) = self.listing(c, &q, &mut key)?;
            Ok(c.query(&format!("{}{sql}", B::DIALECT.explain), &args)?
                .iter()
                .map(Row::line)
                .collect())
        })
    }

    fn message(&self, user: i64, id: i64, meta: &Meta) -> Result<Option<Message>> {
        let p = &self.p;
        self.with(Some(meta), |c| {
            let mut rows = c.query(
                &format!(
                    "SELECT {SUMMARY}, recipient, headers, body FROM {p}messages \
                     WHERE id = ? AND user_id = ?"
                ),
                &[id.into(), user.into()],
            )?;
            let Some(r) = rows.first_mut() else {
                return Ok(None);
            };
            let m = Message {
                summary: summary(r)?,
                recipient: r.text(7)?,
                headers: r.text(8)?,
                body: r.text(9)?,
            };
            if m.summary.flags & 1 == 0 {
                c.exec(
                    &format!("UPDATE {p}messages SET flags = flags | 1 WHERE id = ?"),
                    &[id.into()],
                )?;
            }
            Ok(Some(m))
        })
    }

    fn delete(&self, user: i64, id: i64, expect: Option<i64>, meta: &Meta) -> Result<Moved> {
        let p = &self.p;
        self.tx(Some(meta), |c| {
            let trash = first_int(&c.query(
                &format!("SELECT id FROM {p}folders WHERE user_id = ? AND name = ?"),
                &[user.into(), TRASH.into()],
            )?)?;
            let Some(trash) = trash else {
                return Ok(Moved::NoFolder);
            };
            let Some(from) = self.folder_of(c, user, id)? else {
                return Ok(Moved::NoMessage);
            };
            // Idempotent: act only where the client saw the message; purge only when told to.
            if expect.is_some_and(|e| e != from) || (expect.is_none() && from == trash) {
                return Ok(Moved::Unchanged { folder: from });
            }
            if from != trash {
                self.move_message(c, id, from, trash)?;
                return Ok(Moved::Moved { from, to: trash });
            }
            c.exec(
                &format!("UPDATE {p}folders SET msg_count = msg_count - 1 WHERE id = ?"),
                &[from.into()],
            )?;
            c.exec(
                &format!("DELETE FROM {p}messages WHERE id = ?"),
                &[id.into()],
            )?;
            Ok(Moved::Purged { from })
        })
    }

    fn refile(&self, user: i64, id: i64, to: i64, meta: &Meta) -> Result<Moved> {
        self.tx(Some(meta), |c| {
            let owns = first_int(&c.query(
                &format!(
                    "SELECT id FROM {}folders WHERE id = ? AND user_id = ?",
                    self.p
                ),
                &[to.into(), user.into()],
            )?)?;
            if owns.is_none() {
                return Ok(Moved::NoFolder);
            }
            let Some(from) = self.folder_of(c, user, id)? else {
                return Ok(Moved::NoMessage);
            };
            if from != to {
                self.move_message(c, id, from, to)?;
            }
            Ok(Moved::Moved { from, to })
        })
    }

    fn search(&self, user: i64, query: SearchQuery<'_>, meta: &Meta) -> Result<Vec<Summary>> {
        let SearchQuery { text, field, limit } = query;
        let pattern = like_pattern(text);
        let like = B::DIALECT.like;
        let limit = i64::from(limit.min(MAX_RESULTS));
        let (filter, args): (String, Vec<Val<'_>>) = match field {
            SearchField::Headers => (
                format!("(subject {like} ? ESCAPE '!' OR sender {like} ? ESCAPE '!')"),
                vec![
                    user.into(),
                    pattern.as_str().into(),
                    pattern.as_str().into(),
                    limit.into(),
                ],
            ),
            SearchField::Body => (
                format!("body {like} ? ESCAPE '!'"),
                vec![user.into(), pattern.as_str().into(), limit.into()],
            ),
        };
        self.with(Some(meta), |c| {
            c.query(
                &format!(
                    "SELECT {SUMMARY} FROM {}messages WHERE user_id = ? AND {filter} \
                     ORDER BY sent DESC LIMIT ?",
                    self.p
                ),
                &args,
            )?
            .iter_mut()
            .map(summary)
            .collect()
        })
    }
}
