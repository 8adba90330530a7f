//! Which page of a folder listing to read, and the SQL that reads it without sorting.
//!
//! Why: a listing must cost the same whatever the sort and however deep the page. Two things
//! stood in the way. The sender and subject orders (`sender ASC, sent DESC, id DESC`) did not
//! match their indexes (`sender, sent` ascending), so every such page sorted the whole folder
//! in a temporary B-tree: 17 x the date order's cost on the 10,323-message folder. And `OFFSET
//! n` walks and discards n index entries, so page 400 of that folder costs 400 first pages. So
//! each order has an index whose columns and directions are the order itself
//! ([`LISTING_INDEXES`]), and the pages the UI links to are *keyset* pages: "the page after
//! message m" ([`Page::After`]) starts the index scan at m's sort key, so it reads 25 entries
//! however deep it is. A page number ([`Page::Offset`]) still works, for a jump or an old link.

use super::Sort;
use super::backend::Val;

/// Where a page of a folder listing starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Page {
    /// Skip this many messages of the sorted folder (costs in proportion to the offset).
    Offset(u32),
    /// The messages that follow message `id` in the sort order (the UI's "next" link). A
    /// message that is no longer this user's lists from the start.
    After(i64),
    /// The messages that come just before message `id` (the UI's "previous" link), in the
    /// sort order.
    Before(i64),
}

impl Page {
    /// The first page.
    pub const FIRST: Page = Page::Offset(0);
}

/// The indexes of the listings, one per sort order, each with the order's own columns and
/// directions after the folder, so that a page is an index range scan with no sort step
/// (`{p}` is the table prefix). `CREATE INDEX IF NOT EXISTS` makes them safe to run on a store
/// made by an older version, which had `m_sender` and `m_subject` in ascending order only.
pub(crate) const LISTING_INDEXES: [&str; 3] = [
    "CREATE INDEX IF NOT EXISTS {p}m_date ON {p}messages (folder_id, sent, id)",
    "CREATE INDEX IF NOT EXISTS {p}m_sender_order ON {p}messages \
     (folder_id, sender, sent DESC, id DESC)",
    "CREATE INDEX IF NOT EXISTS {p}m_subject_order ON {p}messages \
     (folder_id, subject, sent DESC, id DESC)",
];

/// A message's place in a listing: its sort key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Key {
    pub(crate) sender: String,
    pub(crate) subject: String,
    pub(crate) sent: i64,
    pub(crate) id: i64,
}

impl Sort {
    /// The `ORDER BY` of a listing.
    pub(crate) fn order_by(self) -> &'static str {
        match self {
            Sort::Date => "sent DESC, id DESC",
            Sort::Sender => "sender ASC, sent DESC, id DESC",
            Sort::Subject => "subject ASC, sent DESC, id DESC",
        }
    }

    /// The reverse of [`order_by`](Self::order_by) (a "previous" page reads backwards).
    pub(crate) fn reverse_order_by(self) -> &'static str {
        match self {
            Sort::Date => "sent ASC, id ASC",
            Sort::Sender => "sender DESC, sent ASC, id ASC",
            Sort::Subject => "subject DESC, sent ASC, id ASC",
        }
    }

    /// The text column a listing sorts by first, if not the date.
    fn column(self) -> Option<&'static str> {
        match self {
            Sort::Date => None,
            Sort::Sender => Some("sender"),
            Sort::Subject => Some("subject"),
        }
    }

    /// The condition for the rows strictly after `key` in this order (`forward`) or strictly
    /// before it (not `forward`), with its arguments.
    ///
    /// It is written as a range on the index's leading sort column (`sender >= ?`), which every
    /// planner turns into an index seek, and a filter for the few rows of that same value on
    /// the wrong side of the key; a row-value comparison cannot express the mixed directions,
    /// and a plain `OR` chain is not used as a range by SQLite.
    pub(crate) fn keyset<'a>(self, key: &'a Key, forward: bool) -> (String, Vec<Val<'a>>) {
        let (range, tie_sent, tie_id) = if forward {
            ("<=", ">", ">=")
        } else {
            (">=", "<", "<=")
        };
        let sent_tie = format!("(sent {tie_sent} ? OR (sent = ? AND id {tie_id} ?))");
        let sent_args = [Val::Int(key.sent), Val::Int(key.sent), Val::Int(key.id)];
        match self.column() {
            None => (
                format!("sent {range} ? AND NOT {sent_tie}"),
                [Val::Int(key.sent)].into_iter().chain(sent_args).collect(),
            ),
            Some(col) => {
                let text = if col == "sender" {
                    key.sender.as_str()
                } else {
                    key.subject.as_str()
                };
                // The text column runs the other way round from the date.
                let text_range = if forward { ">=" } else { "<=" };
                (
                    format!("{col} {text_range} ? AND NOT ({col} = ? AND {sent_tie})"),
                    [Val::Text(text), Val::Text(text)]
                        .into_iter()
                        .chain(sent_args)
                        .collect(),
                )
            }
        }
    }
}
