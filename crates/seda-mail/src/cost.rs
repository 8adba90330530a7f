//! What each request costs on an emulated processor ([`seda::EmulatedProcessor`]): the stated
//! work that makes the service's capacity known before a run (`seda serve mail --cores K`).
//!
//! The handlers do their real work (SQLite, sessions, the page), then hold the processor for
//! their request's cost from this table. On this machine SQLite answers a request in tens of
//! microseconds; WC03's 2003 server took a good part of a second, so its capacity was set by
//! the server, not by the clients. The table restores those proportions on a processor whose
//! size the experiment states, rather than on the speed of a shared virtual machine.
//!
//! # Scaled from WC03's Arashi
//!
//! WC03 Figure 9 gives each request type's 90th-percentile response time at 16 users without
//! overload control, a light load where a response time is mostly the request's own work:
//! login 0.83 s, list folders 1.73 s, list messages 2.37 s, show message 0.70 s, delete 1.00 s,
//! refile 1.00 s, search 8.17 s. The table keeps those ratios, scaled so that showing a message
//! costs 1 ms: a mean request of the user model's mix then costs about 2 ms, and one virtual
//! core serves about 480 requests a second, while the handlers' real work stays a few percent
//! of a real core.
//!
//! A search scans its user's mailbox, so its cost grows with the mailbox: a fixed 2 ms plus
//! a part per message, sized so that a search of the lab corpus's mean mailbox
//! ([`MEAN_MAILBOX`] messages) costs the paper's 11.7 ms. The corpus's mailboxes hold 6 to
//! 12,680 messages, so searches cost from 2 ms to about 210: the heavy tail that SERT06's
//! termination and WC03's per-type control are about. A list of messages is one index seek
//! per page in our store, whatever the folder's size, so its cost is fixed.

use std::time::Duration;

use crate::request::RequestKind;

/// Mean messages per mailbox in the lab's corpus (100 users, seed 1; a test recomputes it).
pub const MEAN_MAILBOX: f64 = 581.41;

/// Cost of each request type on the emulated processor.
#[derive(Debug, Clone, PartialEq)]
pub struct CostTable {
    /// Fixed cost of each type, in [`RequestKind::ALL`] order.
    fixed: [Duration; RequestKind::ALL.len()],
    /// Added per row the request scans, by type.
    per_row: [Duration; RequestKind::ALL.len()],
}

impl CostTable {
    /// The table scaled from WC03's Arashi (see the module docs).
    pub fn arashi() -> CostTable {
        let ms = |x: f64| Duration::from_secs_f64(x / 1e3);
        // WC03 Figure 9 at 16 users, over show message's 0.70 s.
        let search_mean = 8.17 / 0.70;
        let search_fixed = 2.0;
        CostTable {
            fixed: [
                ms(0.83 / 0.70),
                ms(1.73 / 0.70),
                ms(2.37 / 0.70),
                ms(1.0),
                ms(1.00 / 0.70),
                ms(1.00 / 0.70),
                ms(search_fixed),
            ],
            per_row: [
                Duration::ZERO,
                Duration::ZERO,
                Duration::ZERO,
                Duration::ZERO,
                Duration::ZERO,
                Duration::ZERO,
                ms((search_mean - search_fixed) / MEAN_MAILBOX),
            ],
        }
    }

    /// What a request of `kind` that scans `rows` rows costs.
    pub fn cost(&self, kind: RequestKind, rows: u64) -> Duration {
        let i = kind.index();
        let rows = u32::try_from(rows).unwrap_or(u32::MAX);
        self.fixed[i].saturating_add(self.per_row[i].saturating_mul(rows))
    }

    /// What a request of `kind` costs on the corpus's mean mailbox: the table as a report
    /// states it, and what sizes a load before a run.
    pub fn mean_cost(&self, kind: RequestKind) -> Duration {
        let i = kind.index();
        self.fixed[i] + self.per_row[i].mul_f64(MEAN_MAILBOX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::corpus::Corpus;

    #[test]
    fn the_mean_mailbox_is_the_lab_corpus() {
        let corpus = Corpus::new(100, 1);
        let mean = corpus.total_messages() as f64 / corpus.users().len() as f64;
        assert!((mean - MEAN_MAILBOX).abs() < 1.0, "{mean}");
        let sizes: Vec<i64> = corpus
            .users()
            .iter()
            .map(|u| u.folders.iter().map(|f| f.count).sum())
            .collect();
        assert_eq!(
            (sizes.iter().min(), sizes.iter().max()),
            (Some(&6), Some(&12_680))
        );
    }

    #[test]
    fn costs_keep_wc03s_ratios() {
        let t = CostTable::arashi();
        let ms = |k| t.mean_cost(k).as_secs_f64() * 1e3;
        assert!((ms(RequestKind::ShowMessage) - 1.0).abs() < 1e-9);
        assert!((ms(RequestKind::Search) - 8.17 / 0.70).abs() < 1e-3);
        assert!((ms(RequestKind::ListMessages) - 2.37 / 0.70).abs() < 1e-3);
        // A search grows with its mailbox; nothing else does.
        assert_eq!(t.cost(RequestKind::Search, 0), Duration::from_millis(2));
        assert!(t.cost(RequestKind::Search, 10_000) > Duration::from_millis(100));
        assert_eq!(
            t.cost(RequestKind::Login, 10_000),
            t.cost(RequestKind::Login, 0)
        );
        assert!(t.cost(RequestKind::Search, u64::MAX) > Duration::from_secs(1));
    }
}
