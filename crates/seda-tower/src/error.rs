//! The errors a non-HTTP service returns when the layer turns a request away or terminates it.

use std::error::Error;
use std::fmt;
use std::time::Duration;

use seda_control::RejectReason;

/// The request was not admitted: the service is overloaded. Retry later, with back-off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Overloaded {
    reason: RejectReason,
}

impl Overloaded {
    pub(crate) fn new(reason: RejectReason) -> Self {
        Overloaded { reason }
    }

    /// Why the controller turned the request away.
    pub fn reason(&self) -> RejectReason {
        self.reason
    }
}

impl fmt::Display for Overloaded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "service overloaded ({}); retry later", self.reason)
    }
}

impl Error for Overloaded {}

/// The request ran past the layer's termination threshold and was cut: its future was dropped,
/// releasing what it held. The service is overloaded; retry later, with back-off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Terminated {
    threshold: Duration,
}

impl Terminated {
    pub(crate) fn new(threshold: Duration) -> Self {
        Terminated { threshold }
    }

    /// The threshold in force when the request was cut.
    pub fn threshold(&self) -> Duration {
        self.threshold
    }
}

impl fmt::Display for Terminated {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "request terminated after running past {:?} (service overloaded); retry later",
            self.threshold
        )
    }
}

impl Error for Terminated {}
