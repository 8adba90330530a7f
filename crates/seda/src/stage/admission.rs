//! A stage's admission checks, composed in order: predicates, token bucket, controller.
//! (The queue threshold is checked last, by the queue's slot reservation.)

use parking_lot::Mutex;
use seda_control::{AdmissionController, RejectReason, TokenBucket};

use crate::{Event, Time};

/// A user predicate on enqueue: `Err(reason)` turns the event away.
pub(crate) type Predicate<E> = Box<dyn Fn(&E) -> Result<(), RejectReason> + Send + Sync>;

pub(crate) struct Admission<E> {
    pub(crate) predicates: Vec<Predicate<E>>,
    pub(crate) rate: Option<Mutex<TokenBucket>>,
    pub(crate) controller: Option<Mutex<Box<dyn AdmissionController>>>,
}

fn class_of<E: Event>(e: &E) -> u8 {
    e.meta().map_or(0, |m| m.class)
}

impl<E: Event> Admission<E> {
    /// Admits all `events` or none; on failure nothing stays taken.
    pub(crate) fn admit(&self, events: &[E], now: Time) -> Result<(), RejectReason> {
        for p in &self.predicates {
            for e in events {
                p(e)?;
            }
        }
        let n = events.len() as f64;
        if let Some(rate) = &self.rate
            && !rate.lock().try_take(now, n)
        {
            return Err(RejectReason::Rate);
        }
        if let Some(controller) = &self.controller {
            let mut c = controller.lock();
            for (i, e) in events.iter().enumerate() {
                if let Err(reason) = c.admit(now, class_of(e)) {
                    for earlier in &events[..i] {
                        c.undo_admit(now, class_of(earlier));
                    }
                    drop(c);
                    if let Some(rate) = &self.rate {
                        rate.lock().give_back(n);
                    }
                    return Err(reason);
                }
            }
        }
        Ok(())
    }

    /// Gives back what [`admit`](Self::admit) took for `events`.
    pub(crate) fn undo(&self, events: &[E], now: Time) {
        if let Some(rate) = &self.rate {
            rate.lock().give_back(events.len() as f64);
        }
        if let Some(controller) = &self.controller {
            let mut c = controller.lock();
            for e in events {
                c.undo_admit(now, class_of(e));
            }
        }
    }

    pub(crate) fn is_trivial(&self) -> bool {
        self.predicates.is_empty() && self.rate.is_none() && self.controller.is_none()
    }
}

/// Composes a stage's admission from its parts.
pub(crate) fn admission_of<E>(
    predicates: Vec<Predicate<E>>,
    rate: Option<TokenBucket>,
    controller: Option<Box<dyn AdmissionController>>,
) -> Admission<E> {
    Admission {
        predicates,
        rate: rate.map(Mutex::new),
        controller: controller.map(Mutex::new),
    }
}
