//! Counters for one interval (or a whole run).

use super::LogHistogram;

/// Classes with their own counters; higher classes share the last slot.
pub const CLASSES: usize = 4;

/// What happened in one interval. Every offered request ends exactly once, as rejected
/// (admission or client window), expired (dropped at dequeue) or completed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Bucket {
    /// Requests offered (sent by clients, including those their own window refused).
    pub offered: u64,
    /// Requests admitted to stage 0's queue.
    pub admitted: u64,
    /// Requests refused (admission controller, queue bound or client window).
    pub rejected: u64,
    /// Admitted requests dropped at dequeue (deadline passed, queued too long).
    pub expired: u64,
    /// Requests cut in service by the terminator (not latency samples).
    pub terminated: u64,
    /// Requests served to completion (including ones their client had given up on).
    pub completed: u64,
    /// Completed within the target and before the client gave up.
    pub good: u64,
    /// Requests whose client timed out before the reply.
    pub timed_out: u64,
    /// Response times of completed requests.
    pub response: LogHistogram,
    /// Per class: offered.
    pub class_offered: [u64; CLASSES],
    /// Per class: rejected or expired.
    pub class_refused: [u64; CLASSES],
    /// Per class: completed.
    pub class_completed: [u64; CLASSES],
    /// Per class: good.
    pub class_good: [u64; CLASSES],
    /// Per class: response times of completed requests.
    pub class_response: [LogHistogram; CLASSES],
    /// The admission controller's state at the interval's last tick.
    pub state: Vec<(&'static str, f64)>,
}

impl Bucket {
    /// Adds `o`'s counts (the state of the later bucket wins).
    pub fn merge(&mut self, o: &Bucket) {
        self.offered += o.offered;
        self.admitted += o.admitted;
        self.rejected += o.rejected;
        self.expired += o.expired;
        self.terminated += o.terminated;
        self.completed += o.completed;
        self.good += o.good;
        self.timed_out += o.timed_out;
        self.response.merge(&o.response);
        for c in 0..CLASSES {
            self.class_offered[c] += o.class_offered[c];
            self.class_refused[c] += o.class_refused[c];
            self.class_completed[c] += o.class_completed[c];
            self.class_good[c] += o.class_good[c];
            self.class_response[c].merge(&o.class_response[c]);
        }
        if !o.state.is_empty() {
            self.state.clone_from(&o.state);
        }
    }

    /// A quantile of completed requests' response times, in seconds.
    pub fn quantile(&self, p: f64) -> Option<f64> {
        self.response.quantile(p)
    }

    /// A quantile of class `c`'s completed requests' response times, in seconds.
    pub fn class_quantile(&self, c: usize, p: f64) -> Option<f64> {
        self.class_response[c.min(CLASSES - 1)].quantile(p)
    }

    /// Share of offered requests that were rejected or expired.
    pub fn refused_fraction(&self) -> f64 {
        if self.offered == 0 {
            0.0
        } else {
            (self.rejected + self.expired) as f64 / self.offered as f64
        }
    }

    /// Share of class `c`'s offered requests that were rejected or expired.
    pub fn class_refused_fraction(&self, c: usize) -> f64 {
        let c = c.min(CLASSES - 1);
        if self.class_offered[c] == 0 {
            0.0
        } else {
            self.class_refused[c] as f64 / self.class_offered[c] as f64
        }
    }
}
