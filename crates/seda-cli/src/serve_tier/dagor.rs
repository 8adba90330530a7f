//! `--policy dagor`: WeChat's DAGOR (DAGOR18) in a tier, the peer ours is compared with.
//!
//! The edge tier (`--edge`) gives each request its compound priority: the business priority of
//! its route (one route here, business 0) and a user priority hashed from the user's key (the
//! load carries no user, so each request's sequence number stands for one). The priority
//! travels down in `x-dagor-priority`. Every tier runs [`Dagor`]: its queueing time (the wait
//! for one of its workers, and for a slot below when it bounds its calls, as the back's gate
//! does) moves its admission level; it refuses what is after the level, and says its level in
//! `x-dagor-level` on every answer. A tier keeps the level its tier below last said and
//! refuses what that tier would refuse before sending it.
//!
//! DAGOR18 drops at the moment of sending the subrequest; every request here calls the tier
//! below, so the check is made at the door, before the tier's own work: the earliest point,
//! the one most favourable to DAGOR. What DAGOR does not do is pass a level up more than one
//! edge: the front hears the middle's level, never the back's.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

use axum::http::{HeaderMap, HeaderValue};
use seda_control::dagor::{Dagor, DagorConfig, Priority};

/// The request's compound priority, sent down by the tier above.
pub const PRIORITY_HEADER: &str = "x-dagor-priority";
/// The answering tier's admission level.
pub const LEVEL_HEADER: &str = "x-dagor-level";
/// The business priority the edge gives its one route.
const ROUTE_BUSINESS: u16 = 0;
/// How often the user priorities are re-drawn (DAGOR18: hourly).
const ROUND: Duration = Duration::from_secs(3600);

/// A tier's DAGOR state: its own agent and the level of the tier below.
pub struct DagorTier {
    agent: Mutex<Dagor>,
    /// The rank of the level the tier below last said (at first: admit all).
    below: AtomicU32,
    edge: bool,
    users: AtomicU64,
    epoch: Instant,
}

impl DagorTier {
    /// DAGOR18's parameters; `edge`: this tier sets the requests' priorities.
    pub fn new(edge: bool) -> anyhow::Result<DagorTier> {
        let cfg = DagorConfig::default();
        let agent = Dagor::new(cfg).map_err(|e| anyhow::anyhow!("dagor: {e}"))?;
        Ok(DagorTier {
            agent: Mutex::new(agent),
            below: AtomicU32::new(Priority::lowest(cfg.business_levels).rank()),
            edge,
            users: AtomicU64::new(0),
            epoch: Instant::now(),
        })
    }

    fn agent(&self) -> std::sync::MutexGuard<'_, Dagor> {
        super::lock(&self.agent)
    }

    /// The request's priority: given here at the edge, else as the tier above sent it (a
    /// request without one, or with one unreadable, is the least important).
    pub fn priority(&self, headers: &HeaderMap) -> Priority {
        if self.edge {
            let user = self.users.fetch_add(1, Relaxed);
            let round = self.epoch.elapsed().as_secs() / ROUND.as_secs();
            return Priority::new(ROUTE_BUSINESS, Priority::user_of(user, round))
                .unwrap_or(Priority::HIGHEST);
        }
        headers
            .get(PRIORITY_HEADER)
            .and_then(|v| v.to_str().ok())
            .and_then(|s| s.parse().ok())
            .unwrap_or(Priority::lowest(DagorConfig::default().business_levels))
    }

    /// Whether this tier admits `p` now.
    pub fn admit(&self, p: Priority) -> bool {
        self.agent().admit(self.epoch.elapsed(), p)
    }

    /// Whether the tier below, by the level it last said, would admit `p`.
    pub fn below_admits(&self, p: Priority) -> bool {
        p.rank() <= self.below.load(Relaxed)
    }

    /// An admitted request waited `waited` in this tier's queues.
    pub fn on_dequeue(&self, waited: Duration) {
        self.agent().on_dequeue(waited);
    }

    /// The level in an answer from below, if it has a readable one.
    pub fn heard(&self, headers: &HeaderMap) {
        if let Some(level) = headers
            .get(LEVEL_HEADER)
            .and_then(|v| v.to_str().ok())
            .and_then(|s| s.parse::<Priority>().ok())
        {
            self.below.store(level.rank(), Relaxed);
        }
    }

    /// This tier's level now.
    pub fn level(&self) -> Priority {
        self.agent().level()
    }

    /// `headers` with this tier's level, for an answer going up.
    pub fn stamp(&self, headers: &mut HeaderMap) {
        if let Ok(v) = HeaderValue::from_str(&self.level().to_string()) {
            headers.insert(LEVEL_HEADER, v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_edge_gives_priorities_and_inner_tiers_read_them() {
        let edge = DagorTier::new(true).expect("valid");
        let mut hostile = HeaderMap::new();
        hostile.insert(PRIORITY_HEADER, HeaderValue::from_static("0/0"));
        let users: std::collections::HashSet<u16> =
            (0..512).map(|_| edge.priority(&hostile).user()).collect();
        assert!(
            users.len() > 100,
            "the edge ignores a client's priority: {}",
            users.len()
        );

        let inner = DagorTier::new(false).expect("valid");
        let mut h = HeaderMap::new();
        h.insert(PRIORITY_HEADER, HeaderValue::from_static("0/7"));
        assert_eq!(inner.priority(&h).user(), 7);
        h.insert(PRIORITY_HEADER, HeaderValue::from_static("junk"));
        assert_eq!(inner.priority(&h), Priority::lowest(1));
    }

    #[test]
    fn the_level_heard_from_below_refuses_before_sending() {
        let t = DagorTier::new(false).expect("valid");
        let p = Priority::new(0, 90).expect("in range");
        assert!(t.below_admits(p));
        let mut h = HeaderMap::new();
        h.insert(LEVEL_HEADER, HeaderValue::from_static("0/60"));
        t.heard(&h);
        assert!(!t.below_admits(p));
        assert!(t.below_admits(Priority::new(0, 60).expect("in range")));
        h.insert(LEVEL_HEADER, HeaderValue::from_static("not a level"));
        t.heard(&h);
        assert!(!t.below_admits(p), "an unreadable level changes nothing");
        let mut up = HeaderMap::new();
        t.stamp(&mut up);
        assert_eq!(
            up.get(LEVEL_HEADER).and_then(|v| v.to_str().ok()),
            Some("0/127")
        );
    }
}
