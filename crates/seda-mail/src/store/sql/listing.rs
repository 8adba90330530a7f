//! The query behind a message list: offset pages, and keyset pages that continue after (or
//! before) a message in the list's sort order.

use super::{SUMMARY, SqlStore};
use crate::store::backend::{Backend, Conn, Val};
use crate::store::page::Key;
use crate::store::{MAX_PAGE, Page, Result, Sort};

/// One listing to read: whose folder, in which order, which page, how many messages.
#[derive(Debug, Clone, Copy)]
pub(super) struct Listing {
    pub(super) user: i64,
    pub(super) folder: i64,
    pub(super) sort: Sort,
    pub(super) page: Page,
    pub(super) limit: u32,
}

impl<B: Backend> SqlStore<B> {
    /// The query that lists `limit` messages of `page`, its arguments, and whether its rows
    /// come backwards (a "previous" page). A keyset page whose message is not this user's
    /// lists from the start. `key` holds the cursor's sort key for the arguments.
    pub(super) fn listing<'a>(
        &self,
        c: &mut B::Conn,
        q: &Listing,
        key: &'a mut Option<Key>,
    ) -> Result<(String, Vec<Val<'a>>, bool)> {
        let Listing {
            user,
            folder: folder_id,
            sort,
            page,
            limit,
        } = *q;
        let limit = i64::from(limit.min(MAX_PAGE));
        let p = &self.p;
        let cursor = match page {
            Page::Offset(_) => None,
            Page::After(id) => Some((id, true)),
            Page::Before(id) => Some((id, false)),
        };
        if let Some((id, _)) = cursor {
            let mut rows = c.query(
                &format!(
                    "SELECT sender, subject, sent, id FROM {p}messages WHERE id = ? AND user_id = ?"
                ),
                &[id.into(), user.into()],
            )?;
            *key = match rows.first_mut() {
                Some(r) => Some(Key {
                    sender: r.text(0)?,
                    subject: r.text(1)?,
                    sent: r.int(2)?,
                    id: r.int(3)?,
                }),
                None => None,
            };
        }
        let head = format!("SELECT {SUMMARY} FROM {p}messages WHERE folder_id = ?");
        Ok(match (cursor, key.as_ref()) {
            (Some((_, forward)), Some(key)) => {
                let (cond, mut args) = sort.keyset(key, forward);
                args.insert(0, folder_id.into());
                args.push(limit.into());
                let order = if forward {
                    sort.order_by()
                } else {
                    sort.reverse_order_by()
                };
                (
                    format!("{head} AND {cond} ORDER BY {order} LIMIT ?"),
                    args,
                    !forward,
                )
            }
            _ => {
                let offset = match page {
                    Page::Offset(o) => o,
                    _ => 0,
                };
                (
                    format!("{head} ORDER BY {} LIMIT ? OFFSET ?", sort.order_by()),
                    vec![folder_id.into(), limit.into(), i64::from(offset).into()],
                    false,
                )
            }
        })
    }
}
