//! Storage: one trait, three backends (SQLite, MariaDB/MySQL, PostgreSQL).
//!
//! The transactions are written once ([`sql`](self) over the small `backend` trait); a backend
//! only connects, runs statements and interrupts them. MariaDB and PostgreSQL are cargo features
//! (`mysql`, `postgres`, on by default).
//!
//! Every call blocks: it runs on a stage's worker thread. Calls that take a [`Meta`] honour its
//! cancellation and deadline while the database works: a [`watch`] thread interrupts the
//! statement (SQLite's interrupt handle, PostgreSQL's cancel token, MariaDB's `KILL QUERY`).
//! Every write is one transaction, so a message is never lost or duplicated, whatever stops it.

use std::fmt;
use std::sync::Arc;

use seda::Meta;

use crate::corpus::Corpus;
pub use crate::mailbox::{Folder, Message, Summary, TRASH};

mod backend;
#[cfg(feature = "mysql")]
mod mysql;
mod page;
#[cfg(feature = "postgres")]
mod postgres;
mod sql;
mod sqlite;
pub mod watch;

pub use self::page::Page;
use self::sql::SqlStore;

/// The largest page of a message list.
pub const MAX_PAGE: u32 = 200;
/// The most search results returned.
pub const MAX_RESULTS: u32 = 100;

/// Why a storage call failed.
#[derive(Debug)]
pub enum StoreError {
    /// The request was cancelled or its deadline passed; nothing was changed.
    Cancelled,
    /// The store was asked for something it cannot do (a bad URL, prefix or path, a backend
    /// left out of the build); no database was reached.
    Invalid(String),
    /// The database answered with something this service does not expect (a column of another
    /// type: tables of another schema).
    Schema(String),
    /// A connection could not be opened to `target` (the URL without its password).
    Connect {
        /// Where (no password).
        target: String,
        /// The driver's error.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The database failed (SQL, constraint, lost connection); the driver's error is the source.
    Db(Box<dyn std::error::Error + Send + Sync>),
    /// A user's password could not be hashed (loading a corpus); nothing was written for it.
    Password(crate::password::HashError),
}

impl StoreError {
    /// Wraps a driver's error.
    pub(crate) fn db(e: impl std::error::Error + Send + Sync + 'static) -> StoreError {
        StoreError::Db(Box::new(e))
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::Cancelled => f.write_str("the request was cancelled"),
            StoreError::Invalid(m) => f.write_str(m),
            StoreError::Schema(m) => write!(f, "unexpected data in the database: {m}"),
            // The driver's text is part of the message (most callers print only this line);
            // `source()` gives the error itself.
            StoreError::Connect { target, source } => {
                write!(f, "cannot connect to {target}: {source}")
            }
            StoreError::Db(e) => write!(f, "database error: {e}"),
            StoreError::Password(e) => write!(f, "cannot store a password: {e}"),
        }
    }
}

impl std::error::Error for StoreError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StoreError::Connect { source, .. } | StoreError::Db(source) => Some(source.as_ref()),
            StoreError::Password(e) => Some(e),
            _ => None,
        }
    }
}

/// `url` with any password replaced by `***`, for messages and logs.
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let (auth, host) = match rest.rfind('@') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => return url.to_string(),
    };
    match auth.split_once(':') {
        Some((user, _)) => format!("{scheme}://{user}:***{host}"),
        None => url.to_string(),
    }
}

/// Result of a storage call.
pub type Result<T> = std::result::Result<T, StoreError>;

/// Sort order of a message list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sort {
    /// Newest first.
    Date,
    /// By sender, then newest first.
    Sender,
    /// By subject, then newest first.
    Subject,
}

impl Sort {
    /// Parses `date`, `sender` or `subject`.
    pub fn from_name(s: &str) -> Option<Sort> {
        match s {
            "date" => Some(Sort::Date),
            "sender" => Some(Sort::Sender),
            "subject" => Some(Sort::Subject),
            _ => None,
        }
    }

    /// The name [`from_name`](Self::from_name) parses.
    pub fn name(self) -> &'static str {
        match self {
            Sort::Date => "date",
            Sort::Sender => "sender",
            Sort::Subject => "subject",
        }
    }
}

/// Where a search looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SearchField {
    /// Subject and sender.
    Headers,
    /// Body text (scans every body: the expensive search).
    Body,
}

/// One search of a user's messages: `text` in `field`, at most `limit` of the newest hits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SearchQuery<'a> {
    /// The text looked for (a substring, case as the backend's `LIKE` has it).
    pub text: &'a str,
    /// Where it is looked for.
    pub field: SearchField,
    /// The most hits returned (capped at [`MAX_RESULTS`]).
    pub limit: u32,
}

/// What a delete or refile did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Moved {
    /// Moved from folder `from` to folder `to`.
    Moved {
        /// Source folder.
        from: i64,
        /// Target folder.
        to: i64,
    },
    /// Deleted for good (it was in Trash).
    Purged {
        /// The folder it was in.
        from: i64,
    },
    /// The message is not in the folder the request expected (a retried delete that already
    /// moved it, or another session was first): nothing was done. `folder` is where it is.
    Unchanged {
        /// The folder it is in.
        folder: i64,
    },
    /// No such message among this user's.
    NoMessage,
    /// No such target folder among this user's.
    NoFolder,
}

/// Totals used to check consistency (tests, `seda mail corpus`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Audit {
    /// Users.
    pub users: i64,
    /// Messages.
    pub messages: i64,
    /// Sum of the folders' stored counts (equals `messages` when consistent).
    pub folder_counts: i64,
    /// Folders whose stored count differs from the messages in them.
    pub bad_folders: i64,
}

/// What [`Store::check_idle`] found among the pool's idle connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct IdleCheck {
    /// Idle connections checked (then closed).
    pub connections: u64,
    /// Of those, connections that answered a statement with no transaction open.
    pub usable: u64,
    /// Of those, connections with a transaction open.
    pub in_transaction: u64,
}

/// Counts of a corpus load.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Loaded {
    /// Users inserted.
    pub users: u64,
    /// Folders inserted.
    pub folders: u64,
    /// Messages inserted.
    pub messages: u64,
    /// Bytes of message headers and bodies.
    pub bytes: u64,
}

/// The mail storage. Implementations are shareable between threads and pool connections.
pub trait Store: Send + Sync + 'static {
    /// `sqlite`, `mysql` or `postgres`.
    fn backend(&self) -> &'static str;
    /// Creates the tables and indexes; fails, changing nothing, if one of them exists.
    fn create(&self) -> Result<()>;
    /// Drops (if present) and creates the tables and indexes: `seda mail corpus` only.
    fn reset(&self) -> Result<()>;
    /// Loads a corpus in one transaction (all or nothing).
    fn load(&self, corpus: &Corpus) -> Result<Loaded>;
    /// Consistency totals.
    fn audit(&self) -> Result<Audit>;
    /// Checks every idle pooled connection (answers a statement, no transaction open), then
    /// closes them all, and the backend's idle helper connections (MariaDB's `KILL QUERY`
    /// connection): what the early-termination soak asks of the pool.
    fn check_idle(&self) -> Result<IdleCheck>;
    /// Reclaims the row versions that updates and deletes left behind, so that a store that
    /// has served a load answers the next as a fresh one would: PostgreSQL's `VACUUM` (on a
    /// server whose autovacuum is off or behind) and a `CHECKPOINT` (the others do it on their own).
    fn reclaim(&self) -> Result<()>;
    /// Writes the committed write-ahead log into the database without blocking readers or
    /// writers: SQLite's passive checkpoint, which its commits leave to this call (see
    /// `sqlite.rs`); nothing on the servers, which checkpoint on their own.
    fn checkpoint(&self) -> Result<()>;
    /// How many of the mail tables (users, folders, messages) exist: 0 means a database this
    /// service has never touched, the only kind `seda serve mail` seeds on its own.
    fn tables(&self) -> Result<u32>;
    /// The user with this name and password, and the service class the operator gave it
    /// (`users.class`, 0 unless set).
    fn login(&self, name: &str, password: &str, meta: &Meta) -> Result<Option<(i64, u8)>>;
    /// The name and class of every user whose class (`users.class`) is not 0.
    fn classed_users(&self) -> Result<Vec<(String, u8)>>;
    /// A user's folders, by name.
    fn folders(&self, user: i64, meta: &Meta) -> Result<Vec<Folder>>;
    /// Creates what a store made by an older version lacks and this one needs (the listing
    /// indexes of [`Page`]'s docs), with `CREATE INDEX IF NOT EXISTS`: never drops or changes
    /// data. `seda serve mail` runs it at start on a store it did not seed.
    fn upgrade(&self) -> Result<()>;
    /// One page of a folder, at most `limit` messages from `page` on in `sort` order (None: not
    /// this user's folder).
    fn messages(
        &self,
        user: i64,
        folder: i64,
        sort: Sort,
        page: Page,
        limit: u32,
        meta: &Meta,
    ) -> Result<Option<(Folder, Vec<Summary>)>>;
    /// The database's own plan for [`messages`](Self::messages) of `folder` (`EXPLAIN QUERY
    /// PLAN` on SQLite, `EXPLAIN` elsewhere), one line per row, to show that a listing reads
    /// an index range and sorts nothing.
    fn listing_plan(&self, folder: i64, sort: Sort, page: Page) -> Result<Vec<String>>;
    /// One message of this user (marks it seen).
    fn message(&self, user: i64, id: i64, meta: &Meta) -> Result<Option<Message>>;
    /// Deletes a message only if it is in folder `from` (the one the client saw it in): moves
    /// it to Trash, or purges it when `from` is Trash. Without `from` it only ever moves to
    /// Trash (a message already there stays). Either way a retried request changes nothing
    /// the first did not: it answers [`Moved::Unchanged`].
    fn delete(&self, user: i64, id: i64, from: Option<i64>, meta: &Meta) -> Result<Moved>;
    /// Moves a message to another folder of the same user.
    fn refile(&self, user: i64, id: i64, to: i64, meta: &Meta) -> Result<Moved>;
    /// Messages whose subject or sender (or body) contain `text`, newest first.
    fn search(&self, user: i64, query: SearchQuery<'_>, meta: &Meta) -> Result<Vec<Summary>>;
}

/// Opens a store from a URL: a path or `sqlite://path`, `mysql://user@host:port/db`,
/// `postgres://user@host:port/db`. `prefix` is prepended to every table name (tests use their
/// own). Errors never contain the URL's password.
pub fn open(url: &str, prefix: &str) -> Result<Arc<dyn Store>> {
    if !prefix
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'_')
        || prefix.len() > 32
    {
        return Err(StoreError::Invalid(format!(
            "table prefix `{prefix}` must be at most 32 letters, digits and underscores"
        )));
    }
    if url.starts_with("mysql://") || url.starts_with("mariadb://") {
        open_mysql(&url.replacen("mariadb://", "mysql://", 1), prefix)
    } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        open_postgres(url, prefix)
    } else {
        let path = url.strip_prefix("sqlite://").unwrap_or(url);
        Ok(Arc::new(SqlStore::new(sqlite::Sqlite::new(path)?, prefix)?))
    }
}

#[cfg(feature = "mysql")]
fn open_mysql(url: &str, prefix: &str) -> Result<Arc<dyn Store>> {
    Ok(Arc::new(SqlStore::new(mysql::Mysql::new(url)?, prefix)?))
}

#[cfg(not(feature = "mysql"))]
fn open_mysql(_url: &str, _prefix: &str) -> Result<Arc<dyn Store>> {
    Err(StoreError::Invalid(
        "this build has no MariaDB/MySQL backend (cargo feature `mysql`)".into(),
    ))
}

#[cfg(feature = "postgres")]
fn open_postgres(url: &str, prefix: &str) -> Result<Arc<dyn Store>> {
    Ok(Arc::new(SqlStore::new(
        postgres::Postgres::new(url)?,
        prefix,
    )?))
}

#[cfg(not(feature = "postgres"))]
fn open_postgres(_url: &str, _prefix: &str) -> Result<Arc<dyn Store>> {
    Err(StoreError::Invalid(
        "this build has no PostgreSQL backend (cargo feature `postgres`)".into(),
    ))
}

/// Escapes `%`, `_` and `!` for a `LIKE ... ESCAPE '!'` pattern and wraps it in `%`. (`!`, not
/// a backslash: MariaDB reads a backslash in a string literal as an escape of its own.)
pub(crate) fn like_pattern(text: &str) -> String {
    let mut p = String::with_capacity(text.len() + 2);
    p.push('%');
    for c in text.chars() {
        if matches!(c, '%' | '_' | '!') {
            p.push('!');
        }
        p.push(c);
    }
    p.push('%');
    p
}

/// The three table names under `prefix`, lower-cased (catalogues are searched that way).
pub(crate) fn table_names(prefix: &str) -> [String; 3] {
    ["users", "folders", "messages"].map(|t| format!("{prefix}{t}").to_lowercase())
}

/// Fails fast with `Cancelled` when nobody waits for the answer any more.
pub(crate) fn check(meta: &Meta) -> Result<()> {
    if meta.is_expired_now() {
        Err(StoreError::Cancelled)
    } else {
        Ok(())
    }
}
