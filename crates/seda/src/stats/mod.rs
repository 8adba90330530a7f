//! Per-stage measurements: counters and histograms, rolled into a snapshot once per period.

mod histogram;

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use seda_control::RejectReason;
use serde::{Deserialize, Deserializer, Serialize};

pub(crate) use histogram::AtomicHistogram;
pub use histogram::{Histogram, HistogramSummary};

/// Sources that get their own edge counter; index 0 is "outside any stage", the last index
/// collects stages beyond this many.
pub(crate) const EDGE_SOURCES: usize = 256;

const REASONS: usize = RejectReason::ALL.len();

/// Live counters of one stage. Producers and workers update them with relaxed atomics.
pub(crate) struct StageStats {
    /// Admitted events by the stage that enqueued them (`[0]` = outside any stage).
    edges: Box<[AtomicU64]>,
    rejected: [AtomicU64; REASONS],
    dropped: [AtomicU64; REASONS],
    completed: AtomicU64,
    /// Nanoseconds the stage's handlers ran, summed over threads (monotonic).
    busy_ns: AtomicU64,
    terminated: AtomicU64,
    batches: AtomicU64,
    failed: AtomicU64,
    panics: AtomicU64,
    pub(crate) queueing: AtomicHistogram,
    pub(crate) service: AtomicHistogram,
    pub(crate) response: AtomicHistogram,
    period: Mutex<PeriodState>,
}

struct PeriodState {
    started: Instant,
    previous: Counters,
    last: Option<PeriodSnapshot>,
    queueing: Histogram,
    service: Histogram,
    response: Histogram,
}

impl StageStats {
    pub(crate) fn new(now: Instant) -> Self {
        StageStats {
            edges: (0..=EDGE_SOURCES).map(|_| AtomicU64::new(0)).collect(),
            rejected: std::array::from_fn(|_| AtomicU64::new(0)),
            dropped: std::array::from_fn(|_| AtomicU64::new(0)),
            completed: AtomicU64::new(0),
            busy_ns: AtomicU64::new(0),
            terminated: AtomicU64::new(0),
            batches: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            panics: AtomicU64::new(0),
            queueing: AtomicHistogram::new(),
            service: AtomicHistogram::new(),
            response: AtomicHistogram::new(),
            period: Mutex::new(PeriodState {
                started: now,
                previous: Counters::default(),
                last: None,
                queueing: Histogram::default(),
                service: Histogram::default(),
                response: Histogram::default(),
            }),
        }
    }

    pub(crate) fn admitted_from(&self, source: usize, n: u64) {
        self.edges[source.min(EDGE_SOURCES)].fetch_add(n, Ordering::Relaxed);
    }

    pub(crate) fn rejected(&self, reason: RejectReason, n: u64) {
        self.rejected[reason.index()].fetch_add(n, Ordering::Relaxed);
    }

    pub(crate) fn dropped(&self, reason: RejectReason, n: u64) {
        self.dropped[reason.index()].fetch_add(n, Ordering::Relaxed);
    }

    /// One batch was handled, of which `n` events completed.
    pub(crate) fn completed(&self, n: u64) {
        self.completed.fetch_add(n, Ordering::Relaxed);
        self.batches.fetch_add(1, Ordering::Relaxed);
    }

    /// `n` events were given up by their handler after the stage's terminator cut them.
    pub(crate) fn terminated(&self, n: u64) {
        self.terminated.fetch_add(n, Ordering::Relaxed);
    }

    pub(crate) fn failed(&self, events: u64, panics: u64) {
        self.failed.fetch_add(events, Ordering::Relaxed);
        self.panics.fetch_add(panics, Ordering::Relaxed);
    }

    pub(crate) fn admitted_total(&self) -> u64 {
        self.edges.iter().map(|c| c.load(Ordering::SeqCst)).sum()
    }

    /// Admitted events that left the stage: handled, terminated, failed or dropped.
    pub(crate) fn settled_total(&self) -> u64 {
        self.completed.load(Ordering::SeqCst)
            + self.terminated.load(Ordering::SeqCst)
            + self.failed.load(Ordering::SeqCst)
            + self
                .dropped
                .iter()
                .map(|c| c.load(Ordering::SeqCst))
                .sum::<u64>()
    }

    /// A handler ran a batch for `d`.
    pub(crate) fn busy(&self, d: std::time::Duration) {
        let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        self.busy_ns.fetch_add(ns, Ordering::Relaxed);
    }

    /// Nanoseconds the stage's handlers have run, summed over threads (monotonic).
    pub(crate) fn busy_total_ns(&self) -> u64 {
        self.busy_ns.load(Ordering::Relaxed)
    }

    pub(crate) fn completed_total(&self) -> u64 {
        self.completed.load(Ordering::Relaxed)
    }

    /// Events admitted from each source index (non-zero entries only).
    pub(crate) fn edge_counts(&self) -> Vec<(usize, u64)> {
        self.edges
            .iter()
            .enumerate()
            .map(|(i, c)| (i, c.load(Ordering::Relaxed)))
            .filter(|&(_, n)| n > 0)
            .collect()
    }

    pub(crate) fn counters(&self) -> Counters {
        let load = |a: &[AtomicU64; REASONS]| -> [u64; REASONS] {
            std::array::from_fn(|i| a[i].load(Ordering::Relaxed))
        };
        Counters {
            admitted: self.edges.iter().map(|c| c.load(Ordering::Relaxed)).sum(),
            rejected: load(&self.rejected),
            dropped: load(&self.dropped),
            completed: self.completed.load(Ordering::Relaxed),
            terminated: self.terminated.load(Ordering::Relaxed),
            batches: self.batches.load(Ordering::Relaxed),
            failed: self.failed.load(Ordering::Relaxed),
            panics: self.panics.load(Ordering::Relaxed),
        }
    }

    /// Closes the current period at `now`: its counters and histograms become the last period.
    pub(crate) fn roll(&self, now: Instant) {
        let mut p = self.period.lock();
        let totals = self.counters();
        let mut queueing = Histogram::default();
        let mut service = Histogram::default();
        let mut response = Histogram::default();
        self.queueing.take_into(&mut queueing);
        self.service.take_into(&mut service);
        self.response.take_into(&mut response);
        p.queueing.merge(&queueing);
        p.service.merge(&service);
        p.response.merge(&response);
        let counters = totals.minus(&p.previous);
        p.last = Some(PeriodSnapshot {
            duration_s: now.saturating_duration_since(p.started).as_secs_f64(),
            counters: counters.to_view(),
            queueing: queueing.summary(),
            service: service.summary(),
            response: response.summary(),
        });
        p.previous = totals;
        p.started = now;
    }

    /// The histograms since start (including the running period), for exporters that render
    /// their own buckets (Prometheus). Reads the live counts without resetting them.
    pub(crate) fn histograms(&self) -> StageHistograms {
        let p = self.period.lock();
        let mut h = StageHistograms {
            queueing: p.queueing.clone(),
            service: p.service.clone(),
            response: p.response.clone(),
        };
        drop(p);
        self.queueing.add_to(&mut h.queueing);
        self.service.add_to(&mut h.service);
        self.response.add_to(&mut h.response);
        h
    }

    /// Totals since start (including the running period) and the last closed period.
    pub(crate) fn snapshot(&self) -> (PeriodSnapshot, Option<PeriodSnapshot>) {
        let p = self.period.lock();
        let mut queueing = p.queueing.clone();
        let mut service = p.service.clone();
        let mut response = p.response.clone();
        self.queueing.add_to(&mut queueing);
        self.service.add_to(&mut service);
        self.response.add_to(&mut response);
        let totals = PeriodSnapshot {
            duration_s: 0.0,
            counters: self.counters().to_view(),
            queueing: queueing.summary(),
            service: service.summary(),
            response: response.summary(),
        };
        (totals, p.last.clone())
    }
}

/// Raw counter values.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Counters {
    admitted: u64,
    rejected: [u64; REASONS],
    dropped: [u64; REASONS],
    completed: u64,
    terminated: u64,
    batches: u64,
    failed: u64,
    panics: u64,
}

impl Counters {
    /// Enqueue attempts: admitted and rejected.
    pub(crate) fn arrivals(&self) -> u64 {
        self.admitted + self.rejected.iter().sum::<u64>()
    }

    /// Admitted events terminated.
    pub(crate) fn terminated(&self) -> u64 {
        self.terminated
    }

    /// Arrivals not completed: rejected, dropped or terminated (SERT06's throughput loss
    /// counts these; failures are bugs, not load).
    pub(crate) fn lost(&self) -> u64 {
        self.rejected.iter().sum::<u64>() + self.dropped.iter().sum::<u64>() + self.terminated
    }

    fn minus(&self, earlier: &Counters) -> Counters {
        let sub = |a: &[u64; REASONS], b: &[u64; REASONS]| -> [u64; REASONS] {
            std::array::from_fn(|i| a[i].saturating_sub(b[i]))
        };
        Counters {
            admitted: self.admitted.saturating_sub(earlier.admitted),
            rejected: sub(&self.rejected, &earlier.rejected),
            dropped: sub(&self.dropped, &earlier.dropped),
            completed: self.completed.saturating_sub(earlier.completed),
            terminated: self.terminated.saturating_sub(earlier.terminated),
            batches: self.batches.saturating_sub(earlier.batches),
            failed: self.failed.saturating_sub(earlier.failed),
            panics: self.panics.saturating_sub(earlier.panics),
        }
    }

    fn to_view(&self) -> CounterSnapshot {
        let by_reason = |a: &[u64; REASONS]| -> BTreeMap<Cow<'static, str>, u64> {
            RejectReason::ALL
                .iter()
                .map(|r| (Cow::Borrowed(r.as_str()), a[r.index()]))
                .collect()
        };
        let rejected_total: u64 = self.rejected.iter().sum();
        CounterSnapshot {
            arrivals: self.admitted + rejected_total,
            admitted: self.admitted,
            rejected_total,
            rejected: by_reason(&self.rejected),
            dropped_total: self.dropped.iter().sum(),
            dropped: by_reason(&self.dropped),
            completed: self.completed,
            terminated: self.terminated,
            batches: self.batches,
            failed: self.failed,
            panics: self.panics,
        }
    }
}

/// Event counts of a stage over some span.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CounterSnapshot {
    /// Enqueue attempts (admitted + rejected).
    pub arrivals: u64,
    /// Events that entered the stage.
    pub admitted: u64,
    /// Events turned away at enqueue, in total.
    pub rejected_total: u64,
    /// Events turned away at enqueue, by reason.
    pub rejected: BTreeMap<Cow<'static, str>, u64>,
    /// Admitted events dropped before handling (expired, cancelled, left at shutdown), in total.
    pub dropped_total: u64,
    /// Admitted events dropped before handling, by reason.
    pub dropped: BTreeMap<Cow<'static, str>, u64>,
    /// Events handled.
    pub completed: u64,
    /// Events whose handler gave them up after the stage's terminator cut them (SERT06): a
    /// loss, never a latency sample.
    pub terminated: u64,
    /// Batches handed to the handler (`completed / batches` is the mean batch size).
    pub batches: u64,
    /// Events lost because their handler panicked.
    pub failed: u64,
    /// Handler panics caught.
    pub panics: u64,
}

/// Counts and latency summaries over one span (a control period, or since start).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PeriodSnapshot {
    /// Length of the span in seconds (0 for totals since start).
    pub duration_s: f64,
    /// Event counts.
    pub counters: CounterSnapshot,
    /// Time from enqueue to dequeue.
    pub queueing: HistogramSummary,
    /// Handler time per event (batch time divided over its events).
    pub service: HistogramSummary,
    /// Time from the request's birth ([`Meta::born`](crate::Meta::born)) to the end of this stage.
    pub response: HistogramSummary,
}

/// A stage's state and measurements at one moment.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct StageSnapshot {
    /// Stage name.
    pub name: String,
    /// "queued", "inline", or "domain".
    pub mode: Cow<'static, str>,
    /// The pool that runs it (its own name for a queued stage; none when inline).
    pub pool: Option<String>,
    /// Events waiting (including reserved by prepared enqueues).
    pub queue_len: usize,
    /// Queue threshold, if any.
    pub threshold: Option<usize>,
    /// Worker threads of its pool.
    pub threads: usize,
    /// The most threads its pool's controller may grow to (0 when inline).
    pub threads_max: usize,
    /// The thread count its pool's sizer asks for (none under SEDA's heuristic or inline).
    pub threads_target: Option<usize>,
    /// Current batch-size target.
    pub batch_size: usize,
    /// Admission controller name and state, if one is attached.
    pub controller: Option<ControllerSnapshot>,
    /// The terminator's state, if the stage is terminable.
    pub termination: Option<TerminationSnapshot>,
    /// Since start.
    pub totals: PeriodSnapshot,
    /// The last closed control period.
    pub period: Option<PeriodSnapshot>,
}

/// An admission controller's name and state.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ControllerSnapshot {
    /// The controller's name.
    pub name: Cow<'static, str>,
    /// Its state as named numbers.
    #[serde(deserialize_with = "state_numbers")]
    pub state: BTreeMap<Cow<'static, str>, f64>,
}

/// Reads a controller's or terminator's state as JSON writes it: `serde_json` writes a number
/// that is not finite (a rate not measured yet, an unlimited one) as `null`, which reads back as
/// NaN, so that one such value does not make the whole snapshot unreadable.
pub(crate) fn state_numbers<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<BTreeMap<Cow<'static, str>, f64>, D::Error> {
    let numbers = BTreeMap::<Cow<'static, str>, Option<f64>>::deserialize(d)?;
    Ok(numbers
        .into_iter()
        .map(|(k, v)| (k, v.unwrap_or(f64::NAN)))
        .collect())
}

/// The state of a stage's terminator, for snapshots and the dashboard.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct TerminationSnapshot {
    /// The terminator's kind (`sert`, `fixed`, `percentile`).
    pub kind: std::borrow::Cow<'static, str>,
    /// The running time past which requests are cut now, seconds.
    pub threshold_s: f64,
    /// Requests running in the stage now.
    pub running: usize,
    /// Termination requests made so far (some handlers finish before their next safe point;
    /// those count as completed).
    pub requested: u64,
    /// The terminator's own state (SERT's loss `p`...).
    #[serde(deserialize_with = "state_numbers")]
    pub state: std::collections::BTreeMap<std::borrow::Cow<'static, str>, f64>,
}

/// A stage's cumulative histograms since start (see [`crate::Runtime::histograms`]).
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct StageHistograms {
    /// Time from enqueue to dequeue.
    pub queueing: Histogram,
    /// Handler time per event.
    pub service: Histogram,
    /// Time from the request's birth to the end of this stage.
    pub response: Histogram,
}

impl std::fmt::Debug for StageHistograms {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StageHistograms")
            .field("queueing", &self.queueing.count())
            .field("service", &self.service.count())
            .field("response", &self.response.count())
            .finish()
    }
}

/// Time a batch of `n` events took, recorded as `n` samples of the per-event average.
pub(crate) fn per_event(batch: Duration, n: usize) -> Duration {
    if n == 0 {
        batch
    } else {
        batch / u32::try_from(n).unwrap_or(u32::MAX)
    }
}
