//! What a search will cost, learned from the searches run, so that one its stage's terminator
//! would cut is refused before it runs instead of spending the threshold first (SERT06 cuts a
//! request only once it has run that long).
//!
//! A search's handler time is nearly the mailbox it scans times a rate that depends on what it
//! looks for and where: a word found in few messages scans the whole mailbox, a common one
//! stops at the first page of hits. On the lab's corpus the searches of the 100 users cost 1 ms
//! at the median and up to 1.9 s (`Alice` in the bodies of a mailbox of 12,680 messages); the
//! 4.5% of searches that cost more than 28 ms held 75% of the searches' work. So the model is,
//! per query and field, CPU seconds per message of the user's mailbox, learned from every
//! search that ran (a search that was cut gives a lower bound). The wall-clock time that the
//! terminator counts is that CPU time over the share of a core the search stage's threads get,
//! which falls as the other stages' threads contend for the core: it is learned the same way.

use std::collections::HashMap;
use std::time::Duration;

use parking_lot::Mutex;

use crate::store::SearchField;

/// At most this many queries are remembered (the whole memory is a few hundred kilobytes); a
/// new query past it forgets the rates learned so far.
const MAX_QUERIES: usize = 4096;
/// Weight of the newest reading in the averages.
const NEW_WEIGHT: f64 = 0.5;
/// The least share of a core a reading may claim (a search descheduled for its whole run).
const MIN_SHARE: f64 = 0.01;

/// One search, as the model sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SearchJob {
    /// What it looks for, folded to lower case (SQL's `LIKE` ignores ASCII case), and where.
    key: (SearchField, String),
    /// Messages in its user's mailbox.
    messages: u64,
}

impl SearchJob {
    pub(crate) fn new(query: &str, field: SearchField, messages: u64) -> SearchJob {
        SearchJob {
            key: (field, query.to_lowercase()),
            messages,
        }
    }

    /// Messages in its user's mailbox.
    pub(crate) fn messages(&self) -> u64 {
        self.messages
    }
}

/// The learned costs, shared by a search stage's threads.
#[derive(Debug, Default)]
pub(crate) struct SearchCosts(Mutex<Costs>);

#[derive(Debug, Default)]
struct Costs {
    /// CPU seconds per message of the mailbox, by query.
    per_message_s: HashMap<(SearchField, String), f64>,
    /// CPU time over wall-clock running time of the recent searches (`None` before the first).
    share: Option<f64>,
}

impl SearchCosts {
    /// Whether `job` would run past `threshold` of wall-clock time: false for a query never
    /// run, so every query runs once.
    pub(crate) fn would_run_past(&self, job: &SearchJob, threshold: Duration) -> bool {
        let costs = self.0.lock();
        let Some(rate) = costs.per_message_s.get(&job.key) else {
            return false;
        };
        let wall_s = rate * job.messages as f64 / costs.share.unwrap_or(1.0);
        wall_s > threshold.as_secs_f64()
    }

    /// Learns from `job`, which used `cpu` of handler time over `wall` of running time, and was
    /// answered or else cut (its cost is then at least what it used).
    pub(crate) fn record(&self, job: &SearchJob, cpu: Duration, wall: Duration, answered: bool) {
        let mut costs = self.0.lock();
        if wall > Duration::ZERO {
            let share = (cpu.as_secs_f64() / wall.as_secs_f64()).clamp(MIN_SHARE, 1.0);
            costs.share = Some(costs.share.map_or(share, |s| average(s, share)));
        }
        let rate = cpu.as_secs_f64() / job.messages.max(1) as f64;
        if !costs.per_message_s.contains_key(&job.key) && costs.per_message_s.len() >= MAX_QUERIES {
            costs.per_message_s.clear();
        }
        let learned = costs.per_message_s.entry(job.key.clone()).or_insert(rate);
        *learned = if answered {
            average(*learned, rate)
        } else {
            learned.max(rate)
        };
    }
}

fn average(old: f64, new: f64) -> f64 {
    old + NEW_WEIGHT * (new - old)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn a_query_never_run_runs() {
        let costs = SearchCosts::default();
        let job = SearchJob::new("Alice", SearchField::Body, 12_680);
        assert!(!costs.would_run_past(&job, Duration::ZERO));
    }

    #[test]
    fn the_rate_learned_on_one_mailbox_predicts_another() {
        let costs = SearchCosts::default();
        // 100 ms for 10,000 messages, with the core to itself: 10 us per message.
        costs.record(
            &SearchJob::new("alice", SearchField::Body, 10_000),
            100 * MS,
            100 * MS,
            true,
        );
        let big = SearchJob::new("ALICE", SearchField::Body, 20_000);
        assert!(costs.would_run_past(&big, 150 * MS));
        assert!(!costs.would_run_past(&big, 250 * MS));
        // The same words in the headers are another query.
        let headers = SearchJob::new("alice", SearchField::Headers, 20_000);
        assert!(!costs.would_run_past(&headers, Duration::ZERO));
    }

    #[test]
    fn contention_stretches_the_wall_clock_time_predicted() {
        let costs = SearchCosts::default();
        let small = SearchJob::new("lunch", SearchField::Headers, 1_000);
        // 10 ms of CPU over 10 ms, then twice over 40 ms: the share falls to about 0.44.
        costs.record(&small, 10 * MS, 10 * MS, true);
        assert!(!costs.would_run_past(&small, 15 * MS));
        costs.record(&small, 10 * MS, 40 * MS, true);
        costs.record(&small, 10 * MS, 40 * MS, true);
        assert!(costs.would_run_past(&small, 15 * MS));
        assert!(!costs.would_run_past(&small, 30 * MS));
    }

    #[test]
    fn a_cut_search_raises_the_rate_and_never_lowers_it() {
        let costs = SearchCosts::default();
        let job = SearchJob::new("re:", SearchField::Body, 1_000);
        costs.record(&job, MS, MS, true);
        assert!(!costs.would_run_past(&job, 2 * MS));
        // Cut after 5 ms of CPU: it costs at least that.
        costs.record(&job, 5 * MS, 5 * MS, false);
        assert!(costs.would_run_past(&job, 2 * MS));
        // A cut that came sooner says nothing new.
        costs.record(&job, MS, MS, false);
        assert!(costs.would_run_past(&job, 2 * MS));
    }
}
