//! Loading a corpus into the tables: one transaction, messages in multi-row `INSERT`s sized
//! for every backend's packet limit, then fresh planner statistics.

use super::{LOAD_BYTES, SqlStore};
use crate::corpus::Corpus;
use crate::store::backend::{Backend, Conn, Val};
use crate::store::{Loaded, Message, Result, StoreError};

impl<B: Backend> SqlStore<B> {
    /// Loads `corpus` in one transaction: users and folders a row each, messages in
    /// multi-row batches.
    pub(super) fn load_corpus(&self, corpus: &Corpus) -> Result<Loaded> {
        let p = &self.p;
        let n = self.tx(None, |c| {
            let mut n = Loaded::default();
            for u in corpus.users() {
                // Hashed once per user, here: the corpus keeps the clear text (tests and the
                // load generator log in with it), the database only the salted hash.
                let hash = crate::password::hash(&u.password).map_err(StoreError::Password)?;
                c.exec(
                    &format!(
                        "INSERT INTO {p}users (id, name, password, class) VALUES (?, ?, ?, ?)"
                    ),
                    &[
                        u.id.into(),
                        u.name.as_str().into(),
                        hash.as_str().into(),
                        i64::from(u.class).into(),
                    ],
                )?;
                n.users += 1;
                for f in &u.folders {
                    c.exec(
                        &format!(
                            "INSERT INTO {p}folders (id, user_id, name, msg_count) \
                             VALUES (?, ?, ?, ?)"
                        ),
                        &[
                            f.id.into(),
                            u.id.into(),
                            f.name.as_str().into(),
                            f.count.into(),
                        ],
                    )?;
                    n.folders += 1;
                }
            }
            // Multi-row INSERTs: one round trip and one statement per batch.
            let rows = B::DIALECT.load_rows;
            let mut batch = Vec::with_capacity(rows);
            let mut bytes = 0;
            for u in corpus.users() {
                for f in &u.folders {
                    for m in corpus.messages(u, f) {
                        bytes += m.summary.size as usize;
                        n.messages += 1;
                        n.bytes += m.summary.size as u64;
                        batch.push((u.id, m));
                        if batch.len() >= rows || bytes >= LOAD_BYTES {
                            self.flush(c, &mut batch)?;
                            bytes = 0;
                        }
                    }
                }
            }
            self.flush(c, &mut batch)?;
            Ok(n)
        })?;
        // Fresh statistics, so the planner uses the indexes from the first query on.
        if !B::DIALECT.analyze.is_empty() {
            self.with(None, |c| c.batch(&B::DIALECT.analyze.replace("{p}", p)))?;
        }
        Ok(n)
    }

    /// Inserts `rows` messages (11 values each) in one statement.
    fn insert_messages(&self, c: &mut B::Conn, args: &[Val<'_>]) -> Result<()> {
        let n = args.len() / 11;
        if n == 0 {
            return Ok(());
        }
        let mut sql = format!(
            "INSERT INTO {}messages (id, user_id, folder_id, sender, recipient, subject, sent, \
             size, flags, headers, body) VALUES ",
            self.p
        );
        for i in 0..n {
            if i > 0 {
                sql.push(',');
            }
            sql.push_str("(?,?,?,?,?,?,?,?,?,?,?)");
        }
        c.exec(&sql, args)?;
        Ok(())
    }

    /// Inserts the batched messages and empties the batch.
    fn flush(&self, c: &mut B::Conn, batch: &mut Vec<(i64, Message)>) -> Result<()> {
        let mut args: Vec<Val<'_>> = Vec::with_capacity(batch.len() * 11);
        for (user, m) in batch.iter() {
            let s = &m.summary;
            args.extend([
                Val::Int(s.id),
                Val::Int(*user),
                Val::Int(s.folder_id),
                Val::Text(&s.sender),
                Val::Text(&m.recipient),
                Val::Text(&s.subject),
                Val::Int(s.date),
                Val::Int(s.size),
                Val::Int(s.flags),
                Val::Text(&m.headers),
                Val::Text(&m.body),
            ]);
        }
        self.insert_messages(c, &args)?;
        batch.clear();
        Ok(())
    }
}
