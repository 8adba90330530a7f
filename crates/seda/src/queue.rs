//! A stage's event queue: FIFO or LIFO, with exact occupancy accounting for admission.
//!
//! `occupancy` counts queued events plus slots reserved by admitted-but-not-yet-pushed enqueues
//! (prepared transactions). Admission reserves slots with a compare-and-swap against the
//! threshold, so concurrent producers can never overshoot it and an all-or-none enqueue either
//! gets every slot or none.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use parking_lot::Mutex;

/// An event with the time it entered the queue.
pub(crate) struct Slot<E> {
    pub(crate) event: E,
    pub(crate) enqueued: Instant,
}

/// Dequeue order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Order {
    /// First in, first out (the default).
    #[default]
    Fifo,
    /// Last in, first out: under overload the newest requests, whose clients still wait, are
    /// served first.
    Lifo,
}

pub(crate) struct Queue<E> {
    items: Mutex<VecDeque<Slot<E>>>,
    occupancy: AtomicUsize,
    /// Events pushed and not yet popped (excludes reservations): what workers wait for.
    ready: AtomicUsize,
    threshold: AtomicUsize,
    order: Order,
}

impl<E> Queue<E> {
    pub(crate) fn new(threshold: Option<usize>, order: Order) -> Self {
        Queue {
            items: Mutex::new(VecDeque::new()),
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
        self.threshold.store(threshold.unwrap_or(usize::MAX), Ordering::Relaxed);
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

    /// Pushes events into slots reserved earlier.
    pub(crate) fn push_reserved(&self, events: impl IntoIterator<Item = E>, now: Instant) {
        let mut items = self.items.lock();
        let before = items.len();
        items.extend(events.into_iter().map(|event| Slot { event, enqueued: now }));
        self.ready.fetch_add(items.len() - before, Ordering::SeqCst);
    }

    /// Pushes one event into a slot reserved earlier.
    pub(crate) fn push_one_reserved(&self, event: E, now: Instant) {
        let mut items = self.items.lock();
        items.push_back(Slot { event, enqueued: now });
        self.ready.fetch_add(1, Ordering::SeqCst);
    }

    /// Moves up to `max` events into `out`, in dequeue order, and frees their slots.
    pub(crate) fn pop_batch(&self, max: usize, out: &mut Vec<Slot<E>>) -> usize {
        let n = {
            let mut items = self.items.lock();
            let n = max.min(items.len());
            match self.order {
                Order::Fifo => out.extend(items.drain(..n)),
                Order::Lifo => {
                    let start = items.len() - n;
                    out.extend(items.drain(start..).rev());
                }
            }
            if n > 0 {
                self.ready.fetch_sub(n, Ordering::SeqCst);
            }
            n
        };
        if n > 0 {
            self.occupancy.fetch_sub(n, Ordering::SeqCst);
        }
        n
    }

    /// Removes every queued event (used when a shutdown gives up waiting).
    pub(crate) fn drain_all(&self) -> Vec<Slot<E>> {
        let drained: Vec<_> = {
            let mut items = self.items.lock();
            self.ready.fetch_sub(items.len(), Ordering::SeqCst);
            items.drain(..).collect()
        };
        self.occupancy.fetch_sub(drained.len(), Ordering::SeqCst);
        drained
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn popped(q: &Queue<u32>, max: usize) -> Vec<u32> {
        let mut out = Vec::new();
        q.pop_batch(max, &mut out);
        out.into_iter().map(|s| s.event).collect()
    }

    #[test]
    fn fifo_and_lifo_orders() {
        let now = Instant::now();
        let fifo = Queue::new(None, Order::Fifo);
        assert!(fifo.reserve(4));
        fifo.push_reserved([1, 2, 3, 4], now);
        assert_eq!(popped(&fifo, 3), vec![1, 2, 3]);
        let lifo = Queue::new(None, Order::Lifo);
        assert!(lifo.reserve(4));
        lifo.push_reserved([1, 2, 3, 4], now);
        assert_eq!(popped(&lifo, 3), vec![4, 3, 2]);
        assert_eq!(lifo.len(), 1);
    }

    #[test]
    fn reservations_respect_the_threshold() {
        let q: Queue<u32> = Queue::new(Some(3), Order::Fifo);
        assert!(q.reserve(2));
        assert!(!q.reserve(2));
        assert!(q.reserve(1));
        q.unreserve(1);
        assert_eq!(q.len(), 2);
    }
}
