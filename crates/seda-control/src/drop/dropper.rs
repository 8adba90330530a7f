//! Early selective dropping (FAIR07, Section 4.2.3).
//!
//! "If the queuing time of the request is over the threshold, the request will be filtered":
//! admission lets everything in (the queue absorbs safe peaks), and at dequeue an event that has
//! waited longer than the threshold is dropped as expired instead of being served late. FAIR07's
//! experiments use an 80 ms threshold for a 100 ms p90 target.

use std::time::Duration;

use crate::entry::{Entry, Role};
use crate::{AdmissionController, RejectReason, Time};

/// The name configurations give this controller (`admission = { kind = "selective_dropper" }`).
pub const SELECTIVE_DROPPER: &str = "selective_dropper";

/// The catalogue entry of [`SelectiveDropper`].
pub(crate) const ENTRY: Entry = Entry {
    name: SELECTIVE_DROPPER,
    about: "early selective dropping, threshold = target / 2",
    source: "FAIR07 Section 4.2.3",
    role: Role::Drop,
    compared: true,
    build: |p| {
        let threshold = p.secs("threshold_s", DEFAULT_DROP_THRESHOLD);
        Ok(Box::new(SelectiveDropper::new(threshold)))
    },
    aim,
};

/// Aimed at a target, an event that queued half of it is dropped (FAIR07 drops at 80 ms for a
/// 100 ms target, leaving the rest of the target to the service time).
fn aim(target: Duration) -> Vec<(&'static str, f64)> {
    vec![("threshold_s", target.as_secs_f64() / 2.0)]
}

/// FAIR07's threshold in its experiments.
pub const DEFAULT_DROP_THRESHOLD: Duration = Duration::from_millis(80);

/// Drops, at dequeue, events whose queueing time exceeds a fixed threshold.
#[derive(Debug, Clone)]
pub struct SelectiveDropper {
    threshold: Duration,
    dropped: u64,
}

impl SelectiveDropper {
    /// A dropper with `threshold`.
    pub fn new(threshold: Duration) -> Self {
        SelectiveDropper {
            threshold,
            dropped: 0,
        }
    }

    /// The threshold.
    pub fn threshold(&self) -> Duration {
        self.threshold
    }
}

impl Default for SelectiveDropper {
    fn default() -> Self {
        SelectiveDropper::new(DEFAULT_DROP_THRESHOLD)
    }
}

impl AdmissionController for SelectiveDropper {
    fn name(&self) -> &'static str {
        "selective_dropper"
    }

    fn admit(&mut self, _now: Time, _class: u8) -> Result<(), RejectReason> {
        Ok(())
    }

    fn undo_admit(&mut self, _now: Time, _class: u8) {}

    fn on_dequeue(&mut self, _now: Time, queued: Duration) -> bool {
        let drop = queued > self.threshold;
        self.dropped += u64::from(drop);
        drop
    }

    fn on_complete(&mut self, _now: Time, _class: u8, _response: Duration, _sojourn: Duration) {}

    fn state(&self) -> Vec<(&'static str, f64)> {
        vec![
            ("threshold_s", self.threshold.as_secs_f64()),
            ("dropped", self.dropped as f64),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drops_exactly_what_queued_past_the_threshold() {
        let mut d = SelectiveDropper::default();
        let t = Duration::from_secs(1);
        assert!(d.admit(t, 0).is_ok());
        assert!(!d.on_dequeue(t, Duration::from_millis(80)));
        assert!(d.on_dequeue(t, Duration::from_millis(81)));
        assert!(!d.on_dequeue(t, Duration::ZERO));
        assert_eq!(d.state()[1], ("dropped", 1.0));
    }
}
