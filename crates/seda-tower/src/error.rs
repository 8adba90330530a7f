//! The error a non-HTTP service returns when the layer turns a request away.

use std::error::Error;
use std::fmt;

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
