//! Per-request metadata carried by every event derived from a request.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

/// A request's cancellation flag, shared by every event derived from it.
///
/// Cancellation is cooperative: stages check it when they dequeue an event (a cancelled event is
/// dropped as expired, never handled), and handlers may check it between steps of long work or
/// hand it to a blocking call that can be interrupted.
#[derive(Debug, Clone, Default)]
pub struct CancelToken(Arc<AtomicBool>);

impl CancelToken {
    /// A token that is not cancelled.
    pub fn new() -> Self {
        Self::default()
    }

    /// Cancels the request: every holder of a clone sees it.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::Release);
    }

    /// Whether the request was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }
}

/// Metadata of the request an event belongs to.
///
/// Created when a request enters the service and passed on (cloned) to every event derived from
/// it, so any stage can compute the request's response time (`now - born`), honour its deadline,
/// apply class-based admission and see whether its client gave up.
#[derive(Debug, Clone)]
pub struct Meta {
    /// A process-unique request id.
    pub id: u64,
    /// When the request entered the service.
    pub born: Instant,
    /// Service class; 0 is the lowest. Class-based admission cuts lower classes first.
    pub class: u8,
    /// After this instant nobody waits for the answer: the request is dropped, not served.
    pub deadline: Option<Instant>,
    /// Set when the client goes away.
    pub cancel: CancelToken,
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

impl Meta {
    /// Metadata for a request born now, class 0, no deadline.
    pub fn new() -> Self {
        Meta::born_at(Instant::now())
    }

    /// Metadata for a request born at `born` (e.g. when its header was parsed).
    pub fn born_at(born: Instant) -> Self {
        Meta {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            born,
            class: 0,
            deadline: None,
            cancel: CancelToken::new(),
        }
    }

    /// The same metadata with another class.
    pub fn with_class(mut self, class: u8) -> Self {
        self.class = class;
        self
    }

    /// The same metadata with a deadline.
    pub fn with_deadline(mut self, deadline: Instant) -> Self {
        self.deadline = Some(deadline);
        self
    }

    /// Whether nobody waits for this request any more (reads the clock only if it has a
    /// deadline).
    pub fn is_expired_now(&self) -> bool {
        self.cancel.is_cancelled() || self.deadline.is_some_and(|d| Instant::now() >= d)
    }

    /// Whether nobody waits for this request any more at `now` (deadline passed or cancelled).
    pub fn is_expired(&self, now: Instant) -> bool {
        self.cancel.is_cancelled() || self.deadline.is_some_and(|d| now >= d)
    }
}

impl Default for Meta {
    fn default() -> Self {
        Meta::new()
    }
}

/// An event that can travel through stages.
///
/// Events that belong to a request return its [`Meta`], which turns on response-time statistics,
/// class-based admission and dropping of expired or cancelled work. Plain data needs nothing:
/// the default returns `None`.
///
/// ```
/// use seda::{Event, Meta};
/// struct Lookup { meta: Meta, key: String }
/// impl Event for Lookup {
///     fn meta(&self) -> Option<&Meta> { Some(&self.meta) }
/// }
/// ```
pub trait Event: Send + 'static {
    /// The request this event belongs to, if any.
    fn meta(&self) -> Option<&Meta> {
        None
    }
}

macro_rules! plain_events {
    ($($t:ty),*) => { $(impl Event for $t {})* };
}
plain_events!(
    (),
    bool,
    u8,
    u16,
    u32,
    u64,
    u128,
    usize,
    i8,
    i16,
    i32,
    i64,
    i128,
    isize,
    f32,
    f64,
    char,
    String,
    Vec<u8>,
    Instant
);

impl<T: Send + 'static> Event for Box<T> {}

impl<T: Send + 'static> Event for (Meta, T) {
    fn meta(&self) -> Option<&Meta> {
        Some(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn ids_are_unique_and_clones_share_cancellation() {
        let a = Meta::new();
        let b = Meta::new();
        assert_ne!(a.id, b.id);
        let derived = a.clone();
        a.cancel.cancel();
        assert!(derived.cancel.is_cancelled());
        assert!(!b.cancel.is_cancelled());
    }

    #[test]
    fn expiry_by_deadline_or_cancellation() {
        let now = Instant::now();
        let m = Meta::born_at(now).with_deadline(now + Duration::from_millis(5));
        assert!(!m.is_expired(now));
        assert!(m.is_expired(now + Duration::from_millis(5)));
        let c = Meta::born_at(now);
        c.cancel.cancel();
        assert!(c.is_expired(now));
    }
}
