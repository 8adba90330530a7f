//! Per-request metadata carried by every event derived from a request.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::time::Instant;

/// A request's cancellation flag, shared by every event derived from it.
///
/// Cancellation is cooperative: stages check it when they dequeue an event (a cancelled event is
/// dropped as expired, never handled), and handlers check it at *safe points* between steps of
/// long work with [`checkpoint`](Self::checkpoint), or hand it to a blocking call that can be
/// interrupted (the mail store interrupts its statement).
///
/// Two parties cancel: the front end when the client goes away ([`cancel`](Self::cancel)), and
/// the runtime's terminator when a request of a terminable stage runs past the stage's
/// threshold (SERT06). A handler that gives up on a terminated request says so by calling
/// `checkpoint` (which returns [`CancelReason::Terminated`]); the stage then counts the request
/// as terminated, never as a latency sample. A request the terminator asked to stop but whose
/// handler finished first counts as completed: what the client received decides.
#[derive(Debug, Clone, Default)]
pub struct CancelToken(Arc<AtomicU8>);

const LIVE: u8 = 0;
const CANCELLED: u8 = 1;
const TERMINATING: u8 = 2;
const TERMINATED: u8 = 3;

/// Why a request was cancelled (see [`CancelToken::checkpoint`]). New reasons may be added:
/// match with a `_` arm.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CancelReason {
    /// Its client went away, or its owner cancelled it.
    Cancelled,
    /// The stage's terminator cut it: it ran past the termination threshold.
    Terminated,
}

impl CancelReason {
    /// A short name (`cancelled`, `terminated`), as the HTTP front end's reason header gives it.
    pub fn as_str(self) -> &'static str {
        match self {
            CancelReason::Cancelled => "cancelled",
            CancelReason::Terminated => "terminated",
        }
    }
}

impl std::fmt::Display for CancelReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::error::Error for CancelReason {}

impl CancelToken {
    /// A token that is not cancelled.
    pub fn new() -> Self {
        Self::default()
    }

    /// Cancels the request: every holder of a clone sees it. A request already terminated
    /// stays terminated.
    pub fn cancel(&self) {
        let _ = self
            .0
            .compare_exchange(LIVE, CANCELLED, Ordering::AcqRel, Ordering::Acquire);
    }

    /// Asks the request to stop because it ran too long; false if it was already cancelled.
    pub(crate) fn terminate(&self) -> bool {
        self.0
            .compare_exchange(LIVE, TERMINATING, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// Whether the request was cancelled (for any reason).
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Acquire) != LIVE
    }

    /// Why the request was cancelled, if it was; reading it changes nothing.
    pub fn reason(&self) -> Option<CancelReason> {
        match self.0.load(Ordering::Acquire) {
            LIVE => None,
            CANCELLED => Some(CancelReason::Cancelled),
            _ => Some(CancelReason::Terminated),
        }
    }

    /// A safe point: `Ok` if the request goes on, else why it must stop. Returning
    /// `Err(Terminated)` records that the handler gave the request up, so the stage counts it
    /// as terminated (see the type's documentation).
    ///
    /// # Errors
    ///
    /// [`CancelReason::Cancelled`] when the client left, [`CancelReason::Terminated`] when the
    /// stage's terminator cut the request: the handler stops and returns.
    pub fn checkpoint(&self) -> Result<(), CancelReason> {
        match self.0.load(Ordering::Acquire) {
            LIVE => Ok(()),
            CANCELLED => Err(CancelReason::Cancelled),
            _ => {
                self.0.store(TERMINATED, Ordering::Release);
                Err(CancelReason::Terminated)
            }
        }
    }

    /// Gives the request up as terminated without running it: for a handler that can tell
    /// the request would run past its stage's termination threshold
    /// ([`Cx::termination_threshold`](crate::handler::Cx::termination_threshold)), so that it
    /// is not cut after spending that long. The stage counts it terminated, as if its
    /// terminator had cut it (never a latency sample). False, changing nothing, if the
    /// request was cancelled.
    pub fn terminate_now(&self) -> bool {
        match self
            .0
            .compare_exchange(LIVE, TERMINATED, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) | Err(TERMINATED) => true,
            Err(TERMINATING) => {
                self.0.store(TERMINATED, Ordering::Release);
                true
            }
            Err(_) => false,
        }
    }

    /// Whether a handler gave the request up at a [`checkpoint`](Self::checkpoint) after its
    /// termination.
    pub(crate) fn was_terminated(&self) -> bool {
        self.0.load(Ordering::Acquire) == TERMINATED
    }
}

/// Metadata of the request an event belongs to.
///
/// Created when a request enters the service and passed on (cloned) to every event derived from
/// it, so any stage can compute the request's response time (`now - born`), honour its deadline,
/// apply class-based admission and see whether its client gave up.
///
/// Build it with [`Meta::new`] or [`Meta::born_at`] and its `with_*` methods, read it with its
/// accessors. Its id and birth are fixed once made; its class, deadline and token can be
/// changed (`set_*`, `with_*`) by whoever owns the request.
///
/// # Examples
///
/// ```
/// use std::time::{Duration, Instant};
/// use seda::Meta;
///
/// let born = Instant::now();
/// let meta = Meta::born_at(born).with_class(2).with_deadline(born + Duration::from_secs(1));
/// let derived = meta.clone(); // an event derived from the same request
/// assert_eq!((derived.id(), derived.class()), (meta.id(), 2));
/// assert!(!meta.is_expired(born));
/// meta.cancel_token().cancel(); // the client went away
/// assert!(derived.is_expired(born));
/// ```
#[derive(Debug, Clone)]
pub struct Meta {
    pub(crate) id: u64,
    pub(crate) born: Instant,
    pub(crate) class: u8,
    pub(crate) deadline: Option<Instant>,
    pub(crate) cancel: CancelToken,
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

    /// A process-unique request id.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// When the request entered the service: its response time is measured from here.
    pub fn born(&self) -> Instant {
        self.born
    }

    /// Service class; 0 is the lowest. Class-based admission cuts lower classes first.
    pub fn class(&self) -> u8 {
        self.class
    }

    /// After this instant nobody waits for the answer: the request is dropped, not served.
    pub fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// The request's cancellation flag, shared by every event derived from it: cancelled when
    /// the client goes away, or by the stage's terminator.
    pub fn cancel_token(&self) -> &CancelToken {
        &self.cancel
    }

    /// Changes the class (a service that classifies a request once it has read it).
    pub fn set_class(&mut self, class: u8) {
        self.class = class;
    }

    /// Changes the deadline (`None`: nobody gives up on the request).
    pub fn set_deadline(&mut self, deadline: Option<Instant>) {
        self.deadline = deadline;
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

    /// The same metadata with another cancellation flag: `CancelToken::new()` detaches the
    /// request from whoever held the old one (a front end that cancels when its client leaves).
    pub fn with_cancel_token(mut self, cancel: CancelToken) -> Self {
        self.cancel = cancel;
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

    #[test]
    fn termination_is_counted_only_once_a_handler_gives_up() {
        let t = CancelToken::new();
        assert_eq!(t.checkpoint(), Ok(()));
        assert!(t.terminate());
        assert!(t.is_cancelled() && !t.was_terminated());
        assert_eq!(t.reason(), Some(CancelReason::Terminated));
        t.cancel(); // a client leaving afterwards does not change the reason
        assert_eq!(t.checkpoint(), Err(CancelReason::Terminated));
        assert!(t.was_terminated());
        let gone = CancelToken::new();
        gone.cancel();
        assert!(!gone.terminate());
        assert_eq!(gone.checkpoint(), Err(CancelReason::Cancelled));
        assert!(!gone.was_terminated());
    }

    #[test]
    fn a_handler_may_terminate_a_request_before_running_it() {
        let t = CancelToken::new();
        assert!(t.terminate_now());
        assert!(t.was_terminated());
        assert_eq!(t.checkpoint(), Err(CancelReason::Terminated));
        // Asked to stop by the terminator first: the same.
        let asked = CancelToken::new();
        assert!(asked.terminate());
        assert!(asked.terminate_now() && asked.was_terminated());
        // A client that left first keeps its reason.
        let gone = CancelToken::new();
        gone.cancel();
        assert!(!gone.terminate_now());
        assert_eq!(gone.reason(), Some(CancelReason::Cancelled));
    }
}
