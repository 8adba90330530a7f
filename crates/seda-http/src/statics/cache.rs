//! Byte-bounded caches: S3-FIFO and LRU behind one type, so the policy is a setting and the two
//! can be compared on the same trace (`cargo bench -p seda-http --bench cache_policy`).

use std::collections::hash_map::DefaultHasher;
use std::collections::{HashMap, VecDeque};
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use crate::config::Policy;

/// The cache maps' hasher: foldhash, seeded per map. Every request hashes its path once for
/// the cache; with SipHash (std's default) a hit took 11,309 instructions, with foldhash
/// 11,210 (`bench/static-callgrind.sh`, issue 52). Only files read from the root become keys,
/// so a client cannot fill a map with colliding names.
type Keys = foldhash::fast::RandomState;

/// A cache of values with a weight (bytes), bounded by total weight.
#[derive(Debug)]
pub struct Cache<V> {
    inner: Inner<V>,
    capacity: usize,
    hits: u64,
    misses: u64,
}

#[derive(Debug)]
enum Inner<V> {
    S3(S3Fifo<V>),
    Lru(Lru<V>),
}

/// Hit and size counters of a cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct CacheStats {
    /// Lookups that found a value.
    pub hits: u64,
    /// Lookups that did not.
    pub misses: u64,
    /// Values held.
    pub entries: usize,
    /// Total weight held.
    pub bytes: usize,
    /// Weight bound.
    pub capacity: usize,
}

impl<V: Clone> Cache<V> {
    /// A cache of at most `capacity` total weight, with `policy`.
    pub fn new(policy: Policy, capacity: usize) -> Self {
        Self::with_threshold(policy, capacity, 1)
    }

    /// Like [`new`](Self::new); S3-FIFO moves an entry from the small to the main queue when
    /// it was hit at least `move_threshold` times while in the small queue.
    pub fn with_threshold(policy: Policy, capacity: usize, move_threshold: u8) -> Self {
        let inner = match policy {
            Policy::S3fifo => Inner::S3(S3Fifo::new(capacity, move_threshold)),
            Policy::Lru => Inner::Lru(Lru::new(capacity)),
        };
        Cache {
            inner,
            capacity,
            hits: 0,
            misses: 0,
        }
    }

    /// Looks `key` up, recording a hit or a miss.
    pub fn get(&mut self, key: &str) -> Option<V> {
        let v = match &mut self.inner {
            Inner::S3(c) => c.get(key),
            Inner::Lru(c) => c.get(key),
        };
        if v.is_some() {
            self.hits += 1;
        } else {
            self.misses += 1;
        }
        v
    }

    /// Inserts (or replaces) `key`, evicting as needed. A value heavier than the whole cache
    /// is not kept.
    pub fn insert(&mut self, key: Arc<str>, value: V, weight: usize) {
        if weight > self.capacity {
            return;
        }
        match &mut self.inner {
            Inner::S3(c) => c.insert(key, value, weight),
            Inner::Lru(c) => c.insert(key, value, weight),
        }
    }

    /// Current counters.
    pub fn stats(&self) -> CacheStats {
        let (entries, bytes) = match &self.inner {
            Inner::S3(c) => (c.map.len(), c.small_bytes + c.main_bytes),
            Inner::Lru(c) => (c.map.len(), c.bytes),
        };
        CacheStats {
            hits: self.hits,
            misses: self.misses,
            entries,
            bytes,
            capacity: self.capacity,
        }
    }
}

// ===== S3-FIFO =====
// Yang, Zhang, Qiu, Yue, Rashmi, "FIFO queues are all you need for cache eviction" (SOSP'23):
// new keys enter a small FIFO (10% of the bytes); a key hit while there moves to the main FIFO
// when it reaches the tail, others leave for a ghost FIFO of keys only. Keys found in the ghost
// go straight to main. Main is FIFO with reinsertion of keys hit since their last pass (a
// 2-bit frequency). Hits never reorder anything: a hit only bumps a counter.

#[derive(Debug)]
struct S3Entry<V> {
    value: V,
    weight: usize,
    freq: u8,
    main: bool,
}

#[derive(Debug)]
struct S3Fifo<V> {
    map: HashMap<Arc<str>, S3Entry<V>, Keys>,
    small: VecDeque<Arc<str>>,
    main: VecDeque<Arc<str>>,
    ghost: VecDeque<u64>,
    ghost_set: HashMap<u64, u32>,
    small_bytes: usize,
    main_bytes: usize,
    capacity: usize,
    small_capacity: usize,
    move_threshold: u8,
}

fn hash_of(key: &str) -> u64 {
    let mut h = DefaultHasher::new();
    key.hash(&mut h);
    h.finish()
}

impl<V: Clone> S3Fifo<V> {
    fn new(capacity: usize, move_threshold: u8) -> Self {
        S3Fifo {
            map: HashMap::default(),
            small: VecDeque::new(),
            main: VecDeque::new(),
            ghost: VecDeque::new(),
            ghost_set: HashMap::new(),
            small_bytes: 0,
            main_bytes: 0,
            capacity,
            small_capacity: capacity / 10,
            move_threshold: move_threshold.max(1),
        }
    }

    fn get(&mut self, key: &str) -> Option<V> {
        let e = self.map.get_mut(key)?;
        e.freq = (e.freq + 1).min(3);
        Some(e.value.clone())
    }

    fn insert(&mut self, key: Arc<str>, value: V, weight: usize) {
        if let Some(e) = self.map.get_mut(&*key) {
            let old = std::mem::replace(&mut e.weight, weight);
            e.value = value;
            if e.main {
                self.main_bytes = self.main_bytes - old + weight;
            } else {
                self.small_bytes = self.small_bytes - old + weight;
            }
        } else {
            let h = hash_of(&key);
            let ghosted = match self.ghost_set.get_mut(&h) {
                Some(n) => {
                    *n -= 1;
                    if *n == 0 {
                        self.ghost_set.remove(&h);
                    }
                    true
                }
                None => false,
            };
            let entry = S3Entry {
                value,
                weight,
                freq: 0,
                main: ghosted,
            };
            if ghosted {
                self.main.push_back(key.clone());
                self.main_bytes += weight;
            } else {
                self.small.push_back(key.clone());
                self.small_bytes += weight;
            }
            self.map.insert(key, entry);
        }
        while self.small_bytes + self.main_bytes > self.capacity {
            if self.small_bytes > self.small_capacity || self.main.is_empty() {
                self.evict_small();
            } else {
                self.evict_main();
            }
        }
    }

    fn evict_small(&mut self) {
        let Some(key) = self.small.pop_front() else {
            return;
        };
        let Some(e) = self.map.get_mut(&key) else {
            return;
        };
        self.small_bytes -= e.weight;
        if e.freq >= self.move_threshold {
            e.freq = 0;
            e.main = true;
            self.main_bytes += e.weight;
            self.main.push_back(key);
        } else {
            self.map.remove(&key);
            let h = hash_of(&key);
            self.ghost.push_back(h);
            *self.ghost_set.entry(h).or_insert(0) += 1;
            // The ghost remembers about as many keys as the cache holds.
            while self.ghost.len() > self.map.len().max(16) {
                if let Some(old) = self.ghost.pop_front()
                    && let Some(n) = self.ghost_set.get_mut(&old)
                {
                    *n -= 1;
                    if *n == 0 {
                        self.ghost_set.remove(&old);
                    }
                }
            }
        }
    }

    fn evict_main(&mut self) {
        let Some(key) = self.main.pop_front() else {
            return;
        };
        let Some(e) = self.map.get_mut(&key) else {
            return;
        };
        if e.freq > 0 {
            e.freq -= 1;
            self.main.push_back(key);
        } else {
            self.main_bytes -= e.weight;
            self.map.remove(&key);
        }
    }
}

// ===== LRU =====
// A doubly linked list over a slab, most recent at the head.

const NIL: usize = usize::MAX;

#[derive(Debug)]
struct Node<V> {
    key: Arc<str>,
    value: V,
    weight: usize,
    prev: usize,
    next: usize,
}

#[derive(Debug)]
struct Lru<V> {
    map: HashMap<Arc<str>, usize, Keys>,
    nodes: Vec<Option<Node<V>>>,
    free: Vec<usize>,
    head: usize,
    tail: usize,
    bytes: usize,
    capacity: usize,
}

impl<V: Clone> Lru<V> {
    fn new(capacity: usize) -> Self {
        Lru {
            map: HashMap::default(),
            nodes: Vec::new(),
            free: Vec::new(),
            head: NIL,
            tail: NIL,
            bytes: 0,
            capacity,
        }
    }

    fn node(&mut self, i: usize) -> Option<&mut Node<V>> {
        self.nodes.get_mut(i).and_then(Option::as_mut)
    }

    fn unlink(&mut self, i: usize) {
        let Some((prev, next)) = self.node(i).map(|n| (n.prev, n.next)) else {
            return;
        };
        match self.node(prev) {
            Some(p) => p.next = next,
            None => self.head = next,
        }
        match self.node(next) {
            Some(n) => n.prev = prev,
            None => self.tail = prev,
        }
    }

    fn push_front(&mut self, i: usize) {
        let head = self.head;
        if let Some(n) = self.node(i) {
            n.prev = NIL;
            n.next = head;
        }
        match self.node(head) {
            Some(h) => h.prev = i,
            None => self.tail = i,
        }
        self.head = i;
    }

    fn get(&mut self, key: &str) -> Option<V> {
        let i = *self.map.get(key)?;
        self.unlink(i);
        self.push_front(i);
        self.node(i).map(|n| n.value.clone())
    }

    fn insert(&mut self, key: Arc<str>, value: V, weight: usize) {
        if let Some(&i) = self.map.get(&*key) {
            self.unlink(i);
            if let Some(old) = self.nodes.get_mut(i).and_then(Option::take) {
                self.bytes -= old.weight;
            }
            self.free.push(i);
            self.map.remove(&*key);
        }
        let node = Node {
            key: key.clone(),
            value,
            weight,
            prev: NIL,
            next: NIL,
        };
        let i = match self.free.pop() {
            Some(i) => {
                self.nodes[i] = Some(node);
                i
            }
            None => {
                self.nodes.push(Some(node));
                self.nodes.len() - 1
            }
        };
        self.push_front(i);
        self.map.insert(key, i);
        self.bytes += weight;
        while self.bytes > self.capacity && self.tail != NIL {
            let t = self.tail;
            self.unlink(t);
            if let Some(old) = self.nodes.get_mut(t).and_then(Option::take) {
                self.bytes -= old.weight;
                self.map.remove(&old.key);
            }
            self.free.push(t);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(i: usize) -> Arc<str> {
        Arc::from(format!("k{i}"))
    }

    #[test]
    fn both_policies_stay_within_capacity_and_return_values() {
        for policy in [Policy::S3fifo, Policy::Lru] {
            let mut c = Cache::new(policy, 1000);
            for i in 0..500 {
                c.insert(key(i), i, 10 + i % 90);
                let s = c.stats();
                assert!(s.bytes <= 1000, "{policy:?}: {} bytes", s.bytes);
                assert_eq!(c.get(&key(i)), Some(i), "{policy:?}: fresh key {i}");
            }
            c.insert(key(9999), 0, 1001);
            assert_eq!(c.get("k9999"), None, "heavier than the cache");
        }
    }

    #[test]
    fn lru_evicts_the_least_recent() {
        let mut c = Cache::new(Policy::Lru, 30);
        c.insert(key(1), 1, 10);
        c.insert(key(2), 2, 10);
        c.insert(key(3), 3, 10);
        assert_eq!(c.get("k1"), Some(1));
        c.insert(key(4), 4, 10);
        assert_eq!(c.get("k2"), None);
        assert_eq!(c.get("k1"), Some(1));
    }

    #[test]
    fn s3fifo_keeps_a_hot_key_through_a_scan() {
        let mut c = Cache::new(Policy::S3fifo, 100);
        c.insert(key(0), 0, 10);
        assert_eq!(c.get("k0"), Some(0));
        for i in 1..200 {
            c.insert(key(i), i, 10);
            assert!(c.get("k0").is_some(), "hot key evicted by one-hit key {i}");
        }
    }
}
