//! A stage's event queue: FIFO or LIFO, with exact occupancy accounting for admission.
//!
//! `occupancy` counts queued events plus slots reserved by admitted-but-not-yet-pushed enqueues
//! (prepared transactions). Admission reserves slots with a compare-and-swap against the
//! threshold, so concurrent producers can never overshoot it and an all-or-none enqueue either
//! gets every slot or none.
//!
//! Enqueue times are stored run-length encoded beside the events: a batch enqueued together
//! shares one time stamp, so a batch hop costs one lock, one copy and one stamp, and queueing
//! times are still exact per event.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::clock::Stamp;

use parking_lot::Mutex;

/// Dequeue order. New orders may be added: match with a `_` arm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Order {
    /// First in, first out (the default).
    #[default]
    Fifo,
    /// Last in, first out: under overload the newest requests, whose clients still wait, are
    /// served first.
    Lifo,
}

/// `count` consecutive events enqueued at `at`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Run {
    pub(crate) at: Stamp,
    pub(crate) count: usize,
}

struct Items<E> {
    events: VecDeque<E>,
    runs: VecDeque<Run>,
}

pub(crate) struct Queue<E> {
    items: Mutex<Items<E>>,
    /// Queued events plus reserved slots.
    occupancy: AtomicUsize,
    /// Events pushed and not yet popped (no reservations): what workers wait for.
    ready: AtomicUsize,
    threshold: AtomicUsize,
    order: Order,
}

impl<E> Queue<E> {
    pub(crate) fn new(threshold: Option<usize>, order: Order) -> Self {
        Queue {
            items: Mutex::new(Items {
                events: VecDeque::new(),
                runs: VecDeque::new(),
            }),
            occupancy: AtomicUsize::new(0),
            ready: AtomicUsize::new(0),
            threshold: AtomicUsize::new(threshold.unwrap_or(usize::MAX)),
            order,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.occupancy.load(Ordering::SeqCst)
    }

    /// Whether a worker would find an event to pop.
    ///
    /// Sequentially consistent with the push, so a worker that announces it is going to sleep
    /// and then sees no event cannot miss a producer's wake-up.
    pub(crate) fn has_ready(&self) -> bool {
        self.ready.load(Ordering::SeqCst) > 0
    }

    pub(crate) fn threshold(&self) -> Option<usize> {
        match self.threshold.load(Ordering::Relaxed) {
            usize::MAX => None,
            t => Some(t),
        }
    }

    pub(crate) fn set_threshold(&self, threshold: Option<usize>) {
        self.threshold
            .store(threshold.unwrap_or(usize::MAX), Ordering::Relaxed);
    }

    /// Reserves `n` slots if they fit under the threshold.
    pub(crate) fn reserve(&self, n: usize) -> bool {
        let limit = self.threshold.load(Ordering::Relaxed);
        if limit == usize::MAX {
            self.occupancy.fetch_add(n, Ordering::SeqCst);
            return true;
        }
        self.occupancy
            .fetch_update(Ordering::SeqCst, Ordering::Relaxed, |occ| {
                occ.checked_add(n).filter(|&total| total <= limit)
            })
            .is_ok()
    }

    /// Gives back `n` reserved slots that will not be used.
    pub(crate) fn unreserve(&self, n: usize) {
        self.occupancy.fetch_sub(n, Ordering::SeqCst);
    }

    /// Pushes events, enqueued at `at`, into slots reserved earlier.
    pub(crate) fn push_reserved(&self, events: impl IntoIterator<Item = E>, at: Stamp) {
        let mut items = self.items.lock();
        let before = items.events.len();
        items.events.extend(events);
        let count = items.events.len() - before;
        if count == 0 {
            return;
        }
        match items.runs.back_mut() {
            Some(last) if last.at == at => last.count += count,
            _ => items.runs.push_back(Run { at, count }),
        }
        self.ready.fetch_add(count, Ordering::SeqCst);
    }

    /// Moves up to `max` events into `out` and their enqueue times into `runs`, in dequeue
    /// order, and frees their slots.
    pub(crate) fn pop_batch(&self, max: usize, out: &mut Vec<E>, runs: &mut Vec<Run>) -> usize {
        let n = {
            let mut items = self.items.lock();
            let n = max.min(items.events.len());
            if n == 0 {
                return 0;
            }
            let lifo = self.order == Order::Lifo;
            if lifo {
                let start = items.events.len() - n;
                out.extend(items.events.drain(start..).rev());
            } else {
                out.extend(items.events.drain(..n));
            }
            take_runs(&mut items.runs, n, lifo, runs);
            self.ready.fetch_sub(n, Ordering::SeqCst);
            n
        };
        self.occupancy.fetch_sub(n, Ordering::SeqCst);
        n
    }

    /// Removes every queued event (used when a shutdown gives up waiting).
    pub(crate) fn drain_all(&self) -> Vec<E> {
        let (mut out, mut runs) = (Vec::new(), Vec::new());
        self.pop_batch(usize::MAX, &mut out, &mut runs);
        out
    }
}

/// Moves the stamps of `n` events from one end of `from` to `out`, splitting a run if needed.
fn take_runs(from: &mut VecDeque<Run>, mut n: usize, from_back: bool, out: &mut Vec<Run>) {
    while n > 0 {
        let end = if from_back {
            from.back_mut()
        } else {
            from.front_mut()
        };
        let Some(run) = end else { break };
        let take = n.min(run.count);
        out.push(Run {
            at: run.at,
            count: take,
        });
        run.count -= take;
        n -= take;
        if run.count == 0 {
            if from_back {
                from.pop_back();
            } else {
                from.pop_front();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn popped(q: &Queue<u32>, max: usize) -> (Vec<u32>, Vec<usize>) {
        let (mut out, mut runs) = (Vec::new(), Vec::new());
        q.pop_batch(max, &mut out, &mut runs);
        (out, runs.iter().map(|r| r.count).collect())
    }

    #[test]
    fn fifo_and_lifo_orders_with_their_stamps() {
        let (t0, t1) = (10, 20);
        for (order, expect) in [
            (Order::Fifo, (vec![1, 2, 3], vec![2, 1])),
            (Order::Lifo, (vec![4, 3, 2], vec![2, 1])),
        ] {
            let q = Queue::new(None, order);
            assert!(q.reserve(4));
            q.push_reserved([1, 2], t0);
            q.push_reserved([3, 4], t1);
            assert_eq!(popped(&q, 3), expect, "{order:?}");
            assert_eq!(q.len(), 1);
            assert!(q.has_ready());
            assert_eq!(popped(&q, 3).0.len(), 1);
            assert!(!q.has_ready());
        }
    }

    #[test]
    fn same_instant_pushes_share_a_run() {
        let t0 = 10;
        let q = Queue::new(None, Order::Fifo);
        assert!(q.reserve(3));
        q.push_reserved([1], t0);
        q.push_reserved([2, 3], t0);
        assert_eq!(popped(&q, 10), (vec![1, 2, 3], vec![3]));
    }

    #[test]
    fn reservations_respect_the_threshold() {
        let q: Queue<u32> = Queue::new(Some(3), Order::Fifo);
        assert!(q.reserve(2));
        assert!(!q.reserve(2));
        assert!(q.reserve(1));
        q.unreserve(1);
        assert_eq!(q.len(), 2);
        assert!(!q.has_ready(), "reservations are not ready events");
    }
}
