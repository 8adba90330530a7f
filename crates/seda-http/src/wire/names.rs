//! Which header names a request head holds, without a header map.
//!
//! A static hit asks two questions of a request's headers: does it carry a budget
//! (`grpc-timeout`, `x-seda-deadline-ms`), and does it ask for anything but the whole file
//! (`if-none-match`, `if-modified-since`, `range`)? Building a `HeaderMap` to answer them cost
//! about 2,300 of a hit's 15,000 instructions and two allocations (issue 52's profile). The
//! parser notes which of these [`WATCHED`] names it meets in a [`NameSet`] instead; only a head
//! that holds one (or is asked about another name) builds its map to look.

use http::HeaderName;
use http::header::{IF_MODIFIED_SINCE, IF_NONE_MATCH, RANGE};

/// The names a [`NameSet`] records exactly: those the front end and a static hit ask about
/// on every request. Each has its own length (the build fails otherwise), so a name is
/// compared with one of them at most.
pub const WATCHED: [&str; 5] = [
    "range",
    "grpc-timeout",
    "if-none-match",
    "if-modified-since",
    "x-seda-deadline-ms",
];

/// [`WATCHED`] as `HeaderName`s.
const WATCHED_NAMES: [HeaderName; 5] = [
    RANGE,
    HeaderName::from_static("grpc-timeout"),
    IF_NONE_MATCH,
    IF_MODIFIED_SINCE,
    HeaderName::from_static("x-seda-deadline-ms"),
];

/// Which [`WATCHED`] names a head holds (compared without regard to case, as HTTP's names
/// are). Of any other name it can only say that the head may hold it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NameSet(u8);

impl NameSet {
    /// Notes `name` (any case).
    pub fn insert(&mut self, name: &[u8]) {
        if let Some(i) = watched(name) {
            self.0 |= 1 << i;
        }
    }

    /// Whether the head may hold `name` (any case): exact for a [`WATCHED`] name, always true
    /// for another.
    pub fn may_hold(&self, name: &[u8]) -> bool {
        watched(name).is_none_or(|i| self.0 & (1 << i) != 0)
    }

    /// Whether the head holds any of the names `watch` picks.
    pub fn holds_any(&self, watch: Watch) -> bool {
        self.0 & watch.0 != 0
    }
}

/// A choice among the [`WATCHED`] names, made once (a constant), so that asking a [`NameSet`]
/// about it costs one `and`: spelling each name out and comparing it per request cost as
/// much as the map the set saves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Watch(u8);

impl Watch {
    /// The choice of `names`, each one of [`WATCHED`] (in a constant, another name fails the
    /// build).
    pub const fn of(names: &[&str]) -> Watch {
        let mut bits = 0;
        let mut n = 0;
        while n < names.len() {
            let mut i = 0;
            while i < WATCHED.len() && !same(WATCHED[i], names[n]) {
                i += 1;
            }
            assert!(i < WATCHED.len(), "not a watched header name");
            bits |= 1 << i;
            n += 1;
        }
        Watch(bits)
    }

    /// Whether `name` is one of the chosen names.
    pub fn contains(self, name: &HeaderName) -> bool {
        // By the names' equality: an enum's tag for a standard name.
        WATCHED_NAMES
            .iter()
            .enumerate()
            .any(|(i, w)| self.0 & (1 << i) != 0 && w == name)
    }
}

/// `a == b`, in a constant.
const fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// The index of `name` in [`WATCHED`], if it is one.
fn watched(name: &[u8]) -> Option<usize> {
    // By length first: most names differ from every watched one in length, and no two
    // watched names have the same.
    let i = *BY_LENGTH.get(name.len())?;
    let w = WATCHED.get(usize::from(i))?;
    w.as_bytes()
        .eq_ignore_ascii_case(name)
        .then_some(usize::from(i))
}

/// The longest watched name's length.
const LONGEST: usize = {
    let mut max = 0;
    let mut i = 0;
    while i < WATCHED.len() {
        if WATCHED[i].len() > max {
            max = WATCHED[i].len();
        }
        i += 1;
    }
    max
};

/// For each length, the index of the watched name that long (`u8::MAX`: none).
const BY_LENGTH: [u8; LONGEST + 1] = {
    let mut table = [u8::MAX; LONGEST + 1];
    let mut i = 0;
    while i < WATCHED.len() {
        assert!(
            table[WATCHED[i].len()] == u8::MAX,
            "two watched names of one length"
        );
        table[WATCHED[i].len()] = i as u8;
        i += 1;
    }
    table
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_watch_contains_the_names_it_was_made_of() {
        let watch = Watch::of(&["range", "x-seda-deadline-ms"]);
        assert!(watch.contains(&RANGE));
        assert!(watch.contains(&HeaderName::from_static("x-seda-deadline-ms")));
        assert!(!watch.contains(&IF_NONE_MATCH));
        assert!(!watch.contains(&http::header::HOST));
        let mut set = NameSet::default();
        set.insert(b"X-Seda-Deadline-Ms");
        assert!(set.holds_any(watch));
    }

    #[test]
    fn the_watched_names_are_spelt_alike() {
        let watched = WATCHED_NAMES;
        let names: Vec<&str> = watched.iter().map(HeaderName::as_str).collect();
        assert_eq!(names, WATCHED);
    }

    #[test]
    fn watched_names_are_exact_and_others_may_be_held() {
        let mut set = NameSet::default();
        assert!(!set.may_hold(b"Range"));
        set.insert(b"RANGE");
        set.insert(b"Host");
        assert!(set.may_hold(b"range"));
        assert!(!set.may_hold(b"If-None-Match"));
        assert!(set.may_hold(b"x-anything"));
        assert!(set.holds_any(Watch::of(&["if-none-match", "range"])));
        assert!(!set.holds_any(Watch::of(&["if-none-match", "if-modified-since"])));
        // A name as long as a watched one, but another, is not taken for it.
        let mut other = NameSet::default();
        for w in WATCHED {
            let mut near = w.as_bytes().to_vec();
            near[0] = b'z';
            other.insert(&near);
            assert!(!other.may_hold(w.as_bytes()), "{w}");
        }
    }

    /// The names a static hit and the front end check are watched: a head without them
    /// never builds its map.
    #[test]
    fn the_names_a_hit_checks_are_watched() {
        let set = NameSet::default();
        for name in [
            IF_NONE_MATCH,
            IF_MODIFIED_SINCE,
            RANGE,
            HeaderName::from_static(seda_tower::GRPC_TIMEOUT),
            HeaderName::from_static(seda_tower::DEADLINE_HEADER),
        ] {
            assert!(!set.may_hold(name.as_str().as_bytes()), "{name}");
        }
    }
}
