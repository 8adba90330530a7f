//! What several of the layer's integration tests share.

use std::time::Duration;

use seda_control::{AdmissionController, RejectReason, Time};

/// Admits everything: for tests about termination and deadlines, not admission.
#[derive(Debug, Clone, Copy)]
pub struct Open;

impl AdmissionController for Open {
    fn name(&self) -> &'static str {
        "open"
    }
    fn admit(&mut self, _now: Time, _class: u8) -> Result<(), RejectReason> {
        Ok(())
    }
    fn undo_admit(&mut self, _now: Time, _class: u8) {}
    fn on_complete(&mut self, _now: Time, _class: u8, _response: Duration, _sojourn: Duration) {}
    fn on_drop(&mut self, _now: Time, _class: u8) {}
    fn state(&self) -> Vec<(&'static str, f64)> {
        Vec::new()
    }
}
