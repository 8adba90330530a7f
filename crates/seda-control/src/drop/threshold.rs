//! Sandstorm's `QueueThresholdPredicate`: reject when the queue would exceed a length.

/// Admits while the queue holds fewer than `limit` events; `None` means unbounded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueThreshold {
    /// The largest queue length that may be reached; `None` for no limit.
    pub limit: Option<usize>,
}

impl QueueThreshold {
    /// A threshold of `limit` events.
    pub fn new(limit: usize) -> Self {
        QueueThreshold { limit: Some(limit) }
    }

    /// No limit (Sandstorm's threshold of -1).
    pub fn unbounded() -> Self {
        QueueThreshold { limit: None }
    }

    /// Whether `incoming` more events fit in a queue currently holding `len`.
    pub fn admits(&self, len: usize, incoming: usize) -> bool {
        match self.limit {
            None => true,
            Some(limit) => len.saturating_add(incoming) <= limit,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admits_up_to_the_limit_and_no_further() {
        let t = QueueThreshold::new(3);
        assert!(t.admits(0, 3));
        assert!(t.admits(2, 1));
        assert!(!t.admits(3, 1));
        assert!(!t.admits(1, 3));
    }

    #[test]
    fn unbounded_admits_everything() {
        assert!(QueueThreshold::unbounded().admits(usize::MAX, 1));
    }
}
