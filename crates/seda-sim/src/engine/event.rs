//! The future-event list: a binary heap ordered by (time, insertion order), so simultaneous
//! events run in the order they were scheduled and a run is deterministic.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// What an event does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// An open source's next arrival (`a` = source).
    Arrival,
    /// A partly-open source's next session (`a` = source).
    Session,
    /// A user sends its next request (`a` = user).
    Send,
    /// A server finishes (`a` = server).
    Done,
    /// A client's timeout (`a` = slot, `b` = slot generation).
    Timeout,
    /// The controller's periodic tick.
    Tick,
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct Event {
    key: u128,
    pub kind: Kind,
    pub a: u32,
    pub b: u32,
}

impl Event {
    #[inline]
    pub fn time(&self) -> u64 {
        (self.key >> 64) as u64
    }
}

impl PartialEq for Event {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}

impl Eq for Event {}

impl PartialOrd for Event {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Event {
    // Reversed: the max-heap pops the earliest event.
    #[inline]
    fn cmp(&self, other: &Self) -> Ordering {
        other.key.cmp(&self.key)
    }
}

/// Pending events.
#[derive(Debug, Default)]
pub(crate) struct EventQueue {
    heap: BinaryHeap<Event>,
    seq: u64,
}

impl EventQueue {
    pub fn with_capacity(n: usize) -> Self {
        EventQueue {
            heap: BinaryHeap::with_capacity(n),
            seq: 0,
        }
    }

    #[inline]
    pub fn push(&mut self, time_ns: u64, kind: Kind, a: u32, b: u32) {
        self.seq += 1;
        let key = (u128::from(time_ns) << 64) | u128::from(self.seq);
        self.heap.push(Event { key, kind, a, b });
    }

    #[inline]
    pub fn pop(&mut self) -> Option<Event> {
        self.heap.pop()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pops_in_time_order_then_fifo() {
        let mut q = EventQueue::default();
        q.push(5, Kind::Tick, 0, 0);
        q.push(3, Kind::Done, 1, 0);
        q.push(5, Kind::Send, 2, 0);
        q.push(1, Kind::Arrival, 3, 0);
        let order: Vec<(u64, u32)> = std::iter::from_fn(|| q.pop())
            .map(|e| (e.time(), e.a))
            .collect();
        assert_eq!(order, vec![(1, 3), (3, 1), (5, 0), (5, 2)]);
    }
}
