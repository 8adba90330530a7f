//! The future-event list, ordered by (time, insertion order), so simultaneous events run in the
//! order they were scheduled and a run is deterministic.

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
    /// The levers' control period: pool sizing and the terminator (see `SimConfig::levers`).
    Lever,
    /// A request in service may have run past the termination threshold (`a` = server,
    /// `b` = stage, `c` = the server's start generation).
    Cut,
    /// A thesis client's patience ran out (`a` = user, `b` = source, `c` = its request number).
    Patience,
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct Event {
    key: u64,
    pub a: u32,
    pub b: u32,
    /// A generation: stale `Done` and `Cut` events of a server that moved on are ignored.
    pub c: u32,
    pub kind: Kind,
}

impl Event {
    #[inline]
    pub fn time(&self) -> u64 {
        self.key
    }
}

/// Pending events, in a radix heap keyed by time in nanoseconds: virtual time never runs
/// backwards, so a monotone priority queue suffices. An event sits in the bucket of the highest
/// bit in which its time differs from the last time popped; popping refills bucket 0 from the
/// lowest non-empty bucket. Buckets are plain vectors, which keeps a million pending events
/// cache-friendly where a binary heap's sift-down takes a cache miss per level. Events at the
/// same nanosecond pop in a fixed (last-in, first-out) order, so runs stay deterministic.
#[derive(Debug)]
pub(crate) struct EventQueue {
    buckets: Vec<Vec<Event>>,
    /// Bit i set when bucket i is non-empty (bucket 64 is tracked apart: it does not fit).
    occupied: u64,
    last: u64,
    len: usize,
}

impl Default for EventQueue {
    fn default() -> Self {
        EventQueue::with_capacity(0)
    }
}

#[inline]
fn bucket_of(key: u64, last: u64) -> usize {
    (64 - (key ^ last).leading_zeros()) as usize
}

impl EventQueue {
    pub fn with_capacity(n: usize) -> Self {
        let mut buckets: Vec<Vec<Event>> = (0..65).map(|_| Vec::new()).collect();
        buckets[64].reserve(n);
        EventQueue {
            buckets,
            occupied: 0,
            last: 0,
            len: 0,
        }
    }

    #[inline]
    pub fn push(&mut self, time_ns: u64, kind: Kind, a: u32, b: u32) {
        self.push_gen(time_ns, kind, a, b, 0);
    }

    /// As [`EventQueue::push`], with a generation `c`.
    #[inline]
    pub fn push_gen(&mut self, time_ns: u64, kind: Kind, a: u32, b: u32, c: u32) {
        // Scheduling in the past would break monotonicity: run it now instead.
        let key = time_ns.max(self.last);
        let i = bucket_of(key, self.last);
        self.buckets[i].push(Event { key, a, b, c, kind });
        self.mark(i);
        self.len += 1;
    }

    #[inline]
    pub fn pop(&mut self) -> Option<Event> {
        if self.len == 0 {
            return None;
        }
        if self.buckets[0].is_empty() {
            let i = if self.occupied != 0 {
                self.occupied.trailing_zeros() as usize
            } else {
                64
            };
            let moving = std::mem::take(&mut self.buckets[i]);
            let min = moving.iter().map(|e| e.key).min()?;
            self.last = min;
            if i < 64 {
                self.occupied &= !(1u64 << i);
            }
            for e in &moving {
                let j = bucket_of(e.key, min);
                self.buckets[j].push(*e);
                self.mark(j);
            }
            // Give the emptied vector back so its capacity is reused.
            let mut moving = moving;
            moving.clear();
            self.buckets[i] = moving;
        }
        self.len -= 1;
        let e = self.buckets[0].pop();
        if self.buckets[0].is_empty() {
            self.occupied &= !1;
        }
        e
    }

    #[inline]
    fn mark(&mut self, i: usize) {
        if i < 64 {
            self.occupied |= 1u64 << i;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pops_in_time_order() {
        let mut q = EventQueue::default();
        q.push(5, Kind::Tick, 0, 0);
        q.push(3, Kind::Done, 1, 0);
        q.push(5, Kind::Send, 2, 0);
        q.push(1, Kind::Arrival, 3, 0);
        let order: Vec<(u64, u32)> = std::iter::from_fn(|| q.pop())
            .map(|e| (e.time(), e.a))
            .collect();
        assert_eq!(order, vec![(1, 3), (3, 1), (5, 2), (5, 0)]);
    }

    #[test]
    fn matches_a_sorted_order_under_interleaved_pushes_and_pops() {
        let mut q = EventQueue::default();
        let mut rng = crate::Rng::new(9);
        let mut reference = std::collections::BTreeSet::new();
        let mut now = 0u64;
        let mut seq = 0u64;
        for round in 0..20_000 {
            for _ in 0..(round % 3) {
                let t = now + (rng.uniform() * 1e6) as u64;
                seq += 1;
                q.push(t, Kind::Tick, seq as u32, 0);
                reference.insert((t, seq));
            }
            if let Some(e) = q.pop() {
                assert!(reference.remove(&(e.time(), u64::from(e.a))));
                let first = reference.first().map_or(u64::MAX, |f| f.0);
                assert!(e.time() <= first, "popped {} before {first}", e.time());
                now = e.time();
            }
        }
        assert_eq!(q.len, reference.len());
    }
}
