//! Storage: one trait, three backends (SQLite, MariaDB/MySQL, PostgreSQL).
//!
//! Every call blocks: it runs on a stage's worker thread. Calls that take a [`Meta`] honour its
//! cancellation and deadline while the database works: a [`watch`] thread interrupts the
//! statement (SQLite's interrupt handle, PostgreSQL's cancel token, MariaDB's `KILL QUERY`).
//! Every write is one transaction, so a message is never lost or duplicated, whatever stops it.

use std::fmt;
use std::sync::Arc;

use seda::Meta;

use crate::corpus::Corpus;

mod mysql;
mod postgres;
mod sqlite;
pub mod watch;

pub use self::mysql::MysqlStore;
pub use self::postgres::PostgresStore;
pub use self::sqlite::SqliteStore;

/// The name of the folder deleted messages move to; deleting from it purges.
pub const TRASH: &str = "Trash";
/// The largest page of a message list.
pub const MAX_PAGE: u32 = 200;
/// The most search results returned.
pub const MAX_RESULTS: u32 = 100;

/// Why a storage call failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreError {
    /// The request was cancelled or its deadline passed; nothing was changed.
    Cancelled,
    /// The database failed (connection, SQL, constraint): the message says what.
    Db(String),
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::Cancelled => f.write_str("the request was cancelled"),
            StoreError::Db(m) => write!(f, "database error: {m}"),
        }
    }
}

impl std::error::Error for StoreError {}

/// Result of a storage call.
pub type Result<T> = std::result::Result<T, StoreError>;

/// A folder and its message count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Folder {
    /// Folder id.
    pub id: i64,
    /// Name.
    pub name: String,
    /// Messages in it.
    pub count: i64,
}

/// A message as listed (no body).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    /// Message id.
    pub id: i64,
    /// Folder it is in.
    pub folder_id: i64,
    /// From.
    pub sender: String,
    /// Subject.
    pub subject: String,
    /// Unix seconds.
    pub date: i64,
    /// Size in bytes (headers and body).
    pub size: i64,
    /// Flags (bit 0: seen).
    pub flags: i64,
}

/// A whole message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// The listed fields.
    pub summary: Summary,
    /// To.
    pub recipient: String,
    /// Raw header block.
    pub headers: String,
    /// Body text.
    pub body: String,
}

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

    pub(crate) fn order_by(self) -> &'static str {
        match self {
            Sort::Date => "sent DESC, id DESC",
            Sort::Sender => "sender ASC, sent DESC, id DESC",
            Sort::Subject => "subject ASC, sent DESC, id DESC",
        }
    }
}

/// Where a search looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SearchField {
    /// Subject and sender.
    Headers,
    /// Body text (scans every body: the expensive search).
    Body,
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
    /// Drops (if present) and creates the tables and indexes.
    fn reset(&self) -> Result<()>;
    /// Loads a corpus in one transaction (all or nothing).
    fn load(&self, corpus: &Corpus) -> Result<Loaded>;
    /// Consistency totals.
    fn audit(&self) -> Result<Audit>;
    /// How many of the mail tables (users, folders, messages) exist: 0 means a database this
    /// service has never touched, the only kind `seda serve mail` seeds on its own.
    fn tables(&self) -> Result<u32>;
    /// The user with this name and password.
    fn login(&self, name: &str, password: &str, meta: &Meta) -> Result<Option<i64>>;
    /// A user's folders, by name.
    fn folders(&self, user: i64, meta: &Meta) -> Result<Vec<Folder>>;
    /// One page of a folder (None: not this user's folder).
    fn messages(
        &self,
        user: i64,
        folder: i64,
        sort: Sort,
        offset: u32,
        limit: u32,
        meta: &Meta,
    ) -> Result<Option<(Folder, Vec<Summary>)>>;
    /// One message of this user (marks it seen).
    fn message(&self, user: i64, id: i64, meta: &Meta) -> Result<Option<Message>>;
    /// Moves a message to Trash, or purges it when it is in Trash.
    fn delete(&self, user: i64, id: i64, meta: &Meta) -> Result<Moved>;
    /// Moves a message to another folder of the same user.
    fn refile(&self, user: i64, id: i64, to: i64, meta: &Meta) -> Result<Moved>;
    /// Messages whose subject or sender (or body) contain `text`, newest first.
    fn search(
        &self,
        user: i64,
        text: &str,
        field: SearchField,
        limit: u32,
        meta: &Meta,
    ) -> Result<Vec<Summary>>;
}

/// Opens a store from a URL: a path or `sqlite://path`, `mysql://user@host:port/db`,
/// `postgres://user@host:port/db`. `prefix` is prepended to every table name (tests use their
/// own).
pub fn open(url: &str, prefix: &str) -> Result<Arc<dyn Store>> {
    if !prefix
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'_')
    {
        return Err(StoreError::Db(format!(
            "table prefix `{prefix}` must be letters, digits and underscores"
        )));
    }
    if url.starts_with("mysql://") || url.starts_with("mariadb://") {
        let url = url.replacen("mariadb://", "mysql://", 1);
        Ok(Arc::new(MysqlStore::open(&url, prefix)?))
    } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        Ok(Arc::new(PostgresStore::open(url, prefix)?))
    } else {
        let path = url.strip_prefix("sqlite://").unwrap_or(url);
        Ok(Arc::new(SqliteStore::open(path, prefix)?))
    }
}

/// Escapes `%`, `_` and `\` for a `LIKE ... ESCAPE '\'` pattern and wraps it in `%`.
pub(crate) fn like_pattern(text: &str) -> String {
    let mut p = String::with_capacity(text.len() + 2);
    p.push('%');
    for c in text.chars() {
        if matches!(c, '%' | '_' | '\\') {
            p.push('\\');
        }
        p.push(c);
    }
    p.push('%');
    p
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
        self.idle.lock().clear();
    }

    pub(crate) fn put(&self, conn: C) {
        let mut idle = self.idle.lock();
        if idle.len() < self.max_idle {
            idle.push(conn);
        }
    }
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
