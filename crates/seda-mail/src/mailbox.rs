//! What a mailbox holds: folders, and messages with their listed summary. The store keeps
//! them and the corpus generates them; both import them from here, so that the store (which
//! loads a corpus) and the corpus do not import each other. The store re-exports them.

/// The name of the folder deleted messages move to; deleting from it purges.
pub const TRASH: &str = "Trash";

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
