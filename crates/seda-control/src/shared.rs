//! One admission controller that several stages consult and feed: WC03 Section 4.4's
//! *single-stage* admission control, "a single admission controller that filters all incoming
//! requests, regardless of type", as opposed to one controller per request-type stage.
//!
//! Each stage holds a clone of a [`SharedController`]; every clone locks the same controller, so
//! it sees every arrival, dequeue and response time of all the stages together and rejects
//! without regard to which stage a request was headed for.

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use crate::{AdmissionController, RejectReason, Time};

/// A handle on one controller shared by several stages (clone it for each).
#[derive(Clone)]
pub struct SharedController {
    inner: Arc<Mutex<Box<dyn AdmissionController>>>,
}

impl SharedController {
    /// Shares `controller`.
    pub fn new(controller: Box<dyn AdmissionController>) -> SharedController {
        SharedController {
            inner: Arc::new(Mutex::new(controller)),
        }
    }

    /// Runs `f` on the controller under one lock: several calls that belong together (a
    /// dequeue and the response time of one request) cost one lock, not one each, and no
    /// clone of the handle (a reference count up and down) is needed to call them.
    pub fn with<R>(&self, f: impl FnOnce(&mut dyn AdmissionController) -> R) -> R {
        f(self.lock().as_mut())
    }

    fn lock(&self) -> MutexGuard<'_, Box<dyn AdmissionController>> {
        // A controller is a plain state machine: a panic in another stage's call leaves it
        // usable, so a poisoned lock is taken over rather than spreading the panic.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl fmt::Debug for SharedController {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedController")
            .field("controller", &self.lock().name())
            .field("holders", &Arc::strong_count(&self.inner))
            .finish()
    }
}

impl AdmissionController for SharedController {
    fn name(&self) -> &'static str {
        self.lock().name()
    }

    fn admit(&mut self, now: Time, class: u8) -> Result<(), RejectReason> {
        self.lock().admit(now, class)
    }

    fn undo_admit(&mut self, now: Time, class: u8) {
        self.lock().undo_admit(now, class);
    }

    fn on_dequeue(&mut self, now: Time, queued: Duration) -> bool {
        self.lock().on_dequeue(now, queued)
    }

    fn on_served(&mut self, now: Time, class: u8, beyond_wait: Duration) {
        self.lock().on_served(now, class, beyond_wait);
    }

    fn on_complete(&mut self, now: Time, class: u8, response: Duration, sojourn: Duration) {
        self.lock().on_complete(now, class, response, sojourn);
    }

    fn on_drop(&mut self, now: Time, class: u8) {
        self.lock().on_drop(now, class);
    }

    fn tick(&mut self, now: Time) {
        self.lock().tick(now);
    }

    fn state(&self) -> Vec<(&'static str, f64)> {
        self.lock().state()
    }

    fn knob(&self, name: &str) -> Option<crate::KnobCell> {
        self.lock().knob(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{TunedConfig, TunedResponseTimeController};

    #[test]
    fn clones_share_one_queue_limit() {
        let tuned = TunedResponseTimeController::new(TunedConfig::new(Duration::from_secs(1)))
            .expect("valid config");
        let a = SharedController::new(Box::new(tuned));
        let (mut x, mut y) = (a.clone(), a.clone());
        let t = Duration::ZERO;
        // The limit is 10 queued events before any departure: five through each handle fill it.
        for _ in 0..5 {
            assert!(x.admit(t, 0).is_ok());
            assert!(y.admit(t, 0).is_ok());
        }
        assert_eq!(x.admit(t, 0), Err(RejectReason::QueueFull));
        assert_eq!(y.admit(t, 1), Err(RejectReason::QueueFull));
        // A dequeue seen through one handle frees a place for the other.
        assert!(!x.on_dequeue(t, Duration::ZERO));
        assert!(y.admit(t, 0).is_ok());
        let queued = a.state().iter().find(|(k, _)| *k == "queued").map(|p| p.1);
        assert_eq!(queued, Some(10.0));
        assert_eq!(a.name(), "response_time_tuned");
        assert!(format!("{a:?}").contains("holders: 3"));
    }
}
