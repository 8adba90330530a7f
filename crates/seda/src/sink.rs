//! The enqueue end of a stage.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use seda_control::RejectReason;

use crate::Event;
use crate::error::Rejected;
use crate::stage::{StageCore, current_stage};

/// `enqueue_timeout` spins for this many rounds (2^round spins each) before yielding...
const BACKOFF_SPIN_ROUNDS: u32 = 6;
/// ...and yields until this many rounds before it sleeps waiting for room.
const BACKOFF_ROUNDS: u32 = 10;

/// The enqueue end of a stage. Cheap to clone; send it to whoever feeds the stage.
///
/// Every enqueue runs the stage's admission in the caller's thread (closed, expired,
/// predicates, token bucket, adaptive controller, queue threshold; see the crate's "Overload"
/// section) and either queues the event or hands it back in a [`Rejected`] with the reason.
/// Nothing blocks except [`enqueue_timeout`](Self::enqueue_timeout), which waits for room.
///
/// # Panics
///
/// No method panics on its own. Admission runs user code in the caller's thread: a predicate
/// ([`StageBuilder::admit_if`](crate::StageBuilder::admit_if)) or an
/// [`AdmissionController`](crate::AdmissionController) that panics unwinds into the enqueuer.
/// A handler's panic never reaches it, even on an inline stage: the stage catches and counts
/// it (see [`Handler`](crate::Handler)).
///
/// # Examples
///
/// ```
/// use seda::{Runtime, Stage, handler};
///
/// let rt = Runtime::start()?;
/// let sink = rt.stage(Stage::builder("log").handler(handler::each(|line: String, _cx| {
///     let _ = line.len();
/// })))?;
/// let producer = sink.clone(); // the same stage
/// producer.enqueue("hello".to_string()).expect("an empty queue admits");
/// assert_eq!(sink.name(), "log");
/// rt.shutdown();
/// # Ok::<(), seda::BuildError>(())
/// ```
pub struct Sink<E: Event> {
    pub(crate) core: Arc<StageCore<E>>,
}

impl<E: Event> Clone for Sink<E> {
    fn clone(&self) -> Self {
        Sink {
            core: self.core.clone(),
        }
    }
}

impl<E: Event> fmt::Debug for Sink<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sink")
            .field("stage", &self.core.name)
            .finish()
    }
}

impl<E: Event> Sink<E> {
    /// The stage's name.
    pub fn name(&self) -> &str {
        &self.core.name
    }

    /// Events waiting in the stage's queue (and slots held by prepared enqueues).
    ///
    /// # Examples
    ///
    /// ```
    /// use seda::{Runtime, Stage, handler};
    ///
    /// let rt = Runtime::start()?;
    /// let sink = rt.stage(Stage::builder("s").handler(handler::each(|_: u8, _cx| {})))?;
    /// let held = sink.enqueue_prepare(vec![1, 2, 3])?; // reserved, not yet visible
    /// assert_eq!(sink.len(), 3);
    /// drop(held); // aborts: the slots are released
    /// assert!(sink.is_empty());
    /// rt.shutdown();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn len(&self) -> usize {
        self.core.queue.len()
    }

    /// The queue threshold (`None`: unbounded).
    pub fn threshold(&self) -> Option<usize> {
        self.core.queue.threshold()
    }

    /// Changes the queue threshold while running (SEDA's adaptive load shedding adjusts it).
    /// Events already queued stay; new ones are admitted only below the new limit.
    ///
    /// # Examples
    ///
    /// ```
    /// use seda::{RejectReason, Runtime, Stage, handler};
    ///
    /// let rt = Runtime::start()?;
    /// let sink = rt.stage(Stage::builder("s").handler(handler::each(|_: u8, _cx| {})))?;
    /// assert_eq!(sink.threshold(), Some(seda::DEFAULT_THRESHOLD));
    /// sink.set_threshold(Some(0)); // shed everything new
    /// assert_eq!(sink.enqueue(1).unwrap_err().reason, RejectReason::QueueFull);
    /// sink.set_threshold(None); // unbounded
    /// assert!(sink.enqueue(2).is_ok());
    /// rt.shutdown();
    /// # Ok::<(), seda::BuildError>(())
    /// ```
    pub fn set_threshold(&self, threshold: Option<usize>) {
        self.core.queue.set_threshold(threshold);
    }

    /// Whether the queue is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Enqueues one event, or gives it back with the reason it was not admitted. Never blocks:
    /// admission runs in the caller's thread, and an admitted event is queued (or, on an
    /// inline stage, handled on this thread before the call returns).
    ///
    /// # Errors
    ///
    /// [`Rejected`], with the event back and the [`RejectReason`]: `Closed` once the runtime
    /// shuts down, `Expired` for a [`Meta`](crate::Meta) whose deadline passed or whose client
    /// cancelled, whatever a predicate ([`StageBuilder::admit_if`](crate::StageBuilder::admit_if))
    /// returned, `Rate` when the token bucket is empty, `Limit` or `Class` from the stage's
    /// adaptive controller, and `QueueFull` at the queue threshold. Each is counted in the
    /// stage's stats.
    ///
    /// # Examples
    ///
    /// ```
    /// use seda::{RejectReason, Runtime, Stage, handler};
    ///
    /// let rt = Runtime::start()?;
    /// // A token bucket of one token that refills once in 1,000 s.
    /// let sink = rt.stage(
    ///     Stage::builder("slow")
    ///         .rate_limit(0.001, 1.0)
    ///         .handler(handler::each(|_: u32, _cx| {})),
    /// )?;
    /// assert!(sink.enqueue(1).is_ok());
    /// let refused = sink.enqueue(2).unwrap_err();
    /// assert_eq!(refused.reason, RejectReason::Rate);
    /// assert_eq!(refused.into_inner(), 2); // the event comes back
    /// rt.shutdown();
    /// # Ok::<(), seda::BuildError>(())
    /// ```
    pub fn enqueue(&self, event: E) -> Result<(), Rejected<E>> {
        self.core.enqueue_one(event)
    }

    /// Enqueues all events or none of them, even against concurrent producers. An empty
    /// `events` is admitted without running admission.
    ///
    /// # Errors
    ///
    /// [`Rejected`] with every event back, for the first reason one of them was refused (the
    /// reasons of [`enqueue`](Self::enqueue)); none was queued.
    ///
    /// # Examples
    ///
    /// ```
    /// use seda::{RejectReason, Runtime, Stage, handler};
    ///
    /// let rt = Runtime::start()?;
    /// let sink = rt.stage(
    ///     Stage::builder("s")
    ///         .threshold(2)
    ///         .handler(handler::each(|_: u8, _cx| {})),
    /// )?;
    /// let held = sink.enqueue_prepare(vec![0])?; // one slot of two taken
    /// let refused = sink.enqueue_many(vec![1, 2]).unwrap_err();
    /// assert_eq!(refused.reason, RejectReason::QueueFull);
    /// assert_eq!(refused.into_inner(), vec![1, 2]); // none was queued
    /// held.commit();
    /// rt.shutdown();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn enqueue_many(&self, events: Vec<E>) -> Result<(), Rejected<Vec<E>>> {
        if events.is_empty() {
            return Ok(());
        }
        self.core.enqueue_many(events)
    }

    /// Enqueues one event; on rejection the event is dropped (and counted as rejected).
    /// Returns whether it was admitted: for events nobody answers (metrics, hints), where a
    /// refusal needs no handling.
    ///
    /// # Examples
    ///
    /// ```
    /// use seda::{Runtime, Stage, handler};
    ///
    /// let rt = Runtime::start()?;
    /// let hints = rt.stage(
    ///     Stage::builder("hints")
    ///         .rate_limit(0.001, 1.0) // one token
    ///         .handler(handler::each(|_: u64, _cx| {})),
    /// )?;
    /// assert!(hints.enqueue_lossy(1));
    /// assert!(!hints.enqueue_lossy(2)); // dropped, and counted as rejected
    /// let stats = rt.stats();
    /// assert_eq!(stats.stages[0].totals.counters.rejected_total, 1);
    /// rt.shutdown();
    /// # Ok::<(), seda::BuildError>(())
    /// ```
    pub fn enqueue_lossy(&self, event: E) -> bool {
        self.enqueue(event).is_ok()
    }

    /// Enqueues one event, waiting up to `timeout` for room when the queue is full, the rate
    /// limit has no token or the concurrency limit is reached (backpressure). Other
    /// rejections return at once. The wait spins, then yields, then sleeps until a worker
    /// frees room or the deadline passes.
    ///
    /// # Errors
    ///
    /// [`Rejected`] with the event back: reason [`RejectReason::TimedOut`] when `timeout`
    /// passed without room (counted as such in the stage's stats), or at once any reason of
    /// [`enqueue`](Self::enqueue) that waiting cannot cure (`Closed`, `Expired`, `Class`, a
    /// predicate's).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use seda::{RejectReason, Runtime, Stage, handler};
    ///
    /// let rt = Runtime::start()?;
    /// let sink = rt.stage(
    ///     Stage::builder("slow")
    ///         .rate_limit(0.001, 1.0)
    ///         .handler(handler::each(|_: u32, _cx| {})),
    /// )?;
    /// sink.enqueue(1).expect("the bucket's one token");
    /// let waited = sink.enqueue_timeout(2, Duration::from_millis(10)).unwrap_err();
    /// assert_eq!(waited.reason, RejectReason::TimedOut);
    /// rt.shutdown();
    /// # Ok::<(), seda::BuildError>(())
    /// ```
    pub fn enqueue_timeout(&self, event: E, timeout: Duration) -> Result<(), Rejected<E>> {
        let mut deadline = None;
        let mut event = event;
        let mut round = 0u32;
        loop {
            match self.core.try_enqueue_one(event) {
                Ok(()) => return Ok(()),
                Err(rejected) => {
                    let retry = matches!(
                        rejected.reason,
                        RejectReason::QueueFull | RejectReason::Rate | RejectReason::Limit
                    );
                    let now = Instant::now();
                    let deadline = *deadline.get_or_insert(now + timeout);
                    if !retry {
                        self.core.count_rejected(rejected.reason, 1);
                        return Err(rejected);
                    }
                    if now >= deadline {
                        self.core.count_rejected(RejectReason::TimedOut, 1);
                        return Err(Rejected {
                            reason: RejectReason::TimedOut,
                            ..rejected
                        });
                    }
                    event = rejected.event;
                    // A worker usually frees room within microseconds: spin, then yield, and
                    // only then sleep (a sleep and wake-up costs more than the wait itself).
                    if round < BACKOFF_SPIN_ROUNDS {
                        for _ in 0..(1u32 << round) {
                            std::hint::spin_loop();
                        }
                    } else if round < BACKOFF_ROUNDS {
                        std::thread::yield_now();
                    } else {
                        self.core.wait_for_space(deadline);
                    }
                    round = round.saturating_add(1);
                }
            }
        }
    }

    /// First half of a transactional enqueue: admits all `events` (or none) and reserves their
    /// queue slots, without making them visible to the stage yet.
    ///
    /// [`Prepared::commit`] pushes them; [`Prepared::abort`], or dropping the guard, releases the
    /// reservation, so a forgotten prepare cannot leak capacity.
    ///
    /// # Errors
    ///
    /// [`Rejected`] with every event back, for the reasons of
    /// [`enqueue_many`](Self::enqueue_many); nothing is reserved.
    ///
    /// # Examples
    ///
    /// ```
    /// use seda::{Runtime, Stage, handler};
    ///
    /// let rt = Runtime::start()?;
    /// let sink = rt.stage(Stage::builder("store").handler(handler::each(|_: u8, _cx| {})))?;
    /// let prepared = sink.enqueue_prepare(vec![1, 2])?; // both admitted, not yet visible
    /// // ... the caller's own commit succeeds ...
    /// prepared.commit();
    /// rt.shutdown();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn enqueue_prepare(&self, events: Vec<E>) -> Result<Prepared<E>, Rejected<Vec<E>>> {
        let admitted = self.core.admit_many(&events, current_stage());
        match admitted {
            Ok(()) => Ok(Prepared {
                core: self.core.clone(),
                events: Some(events),
            }),
            Err(reason) => {
                self.core.count_rejected(reason, events.len() as u64);
                Err(Rejected {
                    event: events,
                    reason,
                })
            }
        }
    }
}

/// Events admitted by [`Sink::enqueue_prepare`], waiting for commit or abort.
#[must_use = "a prepared enqueue does nothing until committed; dropping it aborts"]
pub struct Prepared<E: Event> {
    core: Arc<StageCore<E>>,
    events: Option<Vec<E>>,
}

impl<E: Event> fmt::Debug for Prepared<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Prepared")
            .field("stage", &self.core.name)
            .field("events", &self.events.as_ref().map_or(0, Vec::len))
            .finish()
    }
}

impl<E: Event> Prepared<E> {
    /// Makes the events visible to the stage. Admission already ran: the commit cannot be
    /// refused.
    pub fn commit(mut self) {
        if let Some(events) = self.events.take() {
            self.core.push_admitted(events, current_stage());
        }
    }

    /// The admitted events, to fill in what admission did not need before they are committed:
    /// a front end admits a request on its head and reads its body only once admitted, so a
    /// refusal never costs the body's reading.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::mpsc;
    /// use seda::{Runtime, Stage, handler};
    ///
    /// let rt = Runtime::start()?;
    /// let (tx, rx) = mpsc::channel();
    /// let tx = std::sync::Mutex::new(tx);
    /// let sink = rt.stage(Stage::builder("upload").handler(handler::each(
    ///     move |body: Vec<u8>, _cx| tx.lock().unwrap().send(body.len()).unwrap(),
    /// )))?;
    /// let mut prepared = sink.enqueue_prepare(vec![Vec::new()])?; // admitted on its head
    /// prepared.events_mut()[0].extend_from_slice(b"the body, read once admitted");
    /// prepared.commit();
    /// assert_eq!(rx.recv()?, 28);
    /// rt.shutdown();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn events_mut(&mut self) -> &mut [E] {
        self.events.as_deref_mut().unwrap_or_default()
    }

    /// Releases the reservation and gives the events back (dropping the guard releases it
    /// too, dropping the events).
    ///
    /// # Examples
    ///
    /// ```
    /// use seda::{Runtime, Stage, handler};
    ///
    /// let rt = Runtime::start()?;
    /// let sink = rt.stage(Stage::builder("store").handler(handler::each(|_: u8, _cx| {})))?;
    /// let prepared = sink.enqueue_prepare(vec![1, 2])?;
    /// // ... the caller's own commit fails ...
    /// assert_eq!(prepared.abort(), vec![1, 2]);
    /// assert!(sink.is_empty()); // nothing reserved any more
    /// rt.shutdown();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn abort(mut self) -> Vec<E> {
        let events = self.events.take().unwrap_or_default();
        self.core.unadmit(&events);
        events
    }
}

impl<E: Event> Drop for Prepared<E> {
    fn drop(&mut self) {
        if let Some(events) = self.events.take() {
            self.core.unadmit(&events);
        }
    }
}
