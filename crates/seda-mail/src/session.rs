//! Login sessions: random ids, expiry, a cap per user, and a limit on failed logins.
//!
//! A session id is 128 bits from the operating system's random source (`getrandom`), so it can
//! be neither guessed nor derived from another. A session ends after [`SessionLimits::idle`]
//! without a request and [`SessionLimits::absolute`] after login, whichever comes first. Each
//! user keeps at most [`SessionLimits::per_user`] sessions (a new login ends that user's oldest),
//! so one client logging in over and over only ever evicts its own sessions; when the table is
//! full of live sessions a login is refused rather than evicting someone else's. Failed logins
//! are counted per user name: past [`SessionLimits::failures`] in one
//! [`SessionLimits::failure_window`] that name is refused until the window ends (correct logins
//! are never limited: the experiments log in thousands of times a second).

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// Limits of the session table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionLimits {
    /// A session unused this long ends.
    pub idle: Duration,
    /// A session ends this long after its login, used or not.
    pub absolute: Duration,
    /// Most sessions of one user.
    pub per_user: usize,
    /// Most sessions in all.
    pub total: usize,
    /// Failed logins of one user name allowed per window.
    pub failures: u32,
    /// The window of `failures`.
    pub failure_window: Duration,
}

impl Default for SessionLimits {
    fn default() -> Self {
        SessionLimits {
            idle: Duration::from_secs(30 * 60),
            absolute: Duration::from_secs(12 * 3600),
            per_user: 64,
            total: 100_000,
            failures: 10,
            failure_window: Duration::from_secs(60),
        }
    }
}

/// A logged-in user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    /// User id.
    pub user: i64,
    /// User name.
    pub name: String,
    /// The user's service class (from the database, never from the client).
    pub class: u8,
}

struct Entry {
    session: Session,
    created: Instant,
    last: Instant,
}

/// Most user names whose failed logins are remembered (a table of names is bounded too).
const MAX_FAILING_NAMES: usize = 10_000;

#[derive(Default)]
struct Table {
    by_id: HashMap<String, Entry>,
    /// Each user's session ids, oldest first.
    by_user: HashMap<i64, VecDeque<String>>,
    /// Failed logins per name: (window start, count).
    failures: HashMap<String, (Instant, u32)>,
    /// The class of each user name whose class is not 0 (the operator's classed users).
    classes: HashMap<String, u8>,
}

/// Why a login may not start a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// Too many failed logins for this name lately.
    TooManyFailures,
    /// The table is full of live sessions.
    Full,
    /// The operating system gave no random bytes.
    NoRandom,
}

/// The session table.
pub struct Sessions {
    limits: SessionLimits,
    table: Mutex<Table>,
}

impl std::fmt::Debug for Sessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sessions")
            .field("limits", &self.limits)
            .field("live", &self.table.lock().by_id.len())
            .finish()
    }
}

/// 128 random bits from the operating system, as 32 hex digits.
fn new_id() -> Option<String> {
    let mut b = [0u8; 16];
    getrandom::fill(&mut b).ok()?;
    Some(b.iter().map(|x| format!("{x:02x}")).collect())
}

impl Table {
    fn remove(&mut self, id: &str) {
        if let Some(e) = self.by_id.remove(id)
            && let Some(ids) = self.by_user.get_mut(&e.session.user)
        {
            ids.retain(|x| x != id);
            if ids.is_empty() {
                self.by_user.remove(&e.session.user);
            }
        }
    }
}

impl Sessions {
    /// An empty table.
    pub fn new(limits: SessionLimits) -> Sessions {
        Sessions {
            limits,
            table: Mutex::new(Table::default()),
        }
    }

    fn expired(&self, e: &Entry, now: Instant) -> bool {
        now.duration_since(e.last) > self.limits.idle
            || now.duration_since(e.created) > self.limits.absolute
    }

    /// The live session `id`, marked used now.
    pub fn get(&self, id: &str, now: Instant) -> Option<Session> {
        let mut t = self.table.lock();
        if self.expired(t.by_id.get(id)?, now) {
            t.remove(id);
            return None;
        }
        let e = t.by_id.get_mut(id)?;
        e.last = now;
        Some(e.session.clone())
    }

    /// The class of live session `id`, without marking it used (admission reads it before the
    /// request is admitted).
    pub fn class(&self, id: &str, now: Instant) -> Option<u8> {
        let t = self.table.lock();
        let e = t.by_id.get(id)?;
        (!self.expired(e, now)).then_some(e.session.class)
    }

    /// The class of the user called `name` (0 if not known to be of another), to rank a login
    /// before it has a session.
    pub fn user_class(&self, name: &str) -> u8 {
        self.table.lock().classes.get(name).copied().unwrap_or(0)
    }

    /// Records that the user called `name` is of class `class` (at start from the store, and at
    /// every login). Only classes above 0 are kept: the table holds the operator's classed
    /// users, not every name ever seen.
    pub fn note_class(&self, name: &str, class: u8) {
        let mut t = self.table.lock();
        if class == 0 {
            t.classes.remove(name);
        } else {
            t.classes.insert(name.to_string(), class);
        }
    }

    /// Ends session `id`.
    pub fn end(&self, id: &str) {
        self.table.lock().remove(id);
    }

    /// Whether `name` may try to log in now.
    pub fn may_try(&self, name: &str, now: Instant) -> Result<(), Refused> {
        let t = self.table.lock();
        match t.failures.get(name) {
            Some(&(start, n))
                if n >= self.limits.failures
                    && now.duration_since(start) < self.limits.failure_window =>
            {
                Err(Refused::TooManyFailures)
            }
            _ => Ok(()),
        }
    }

    /// Counts a failed login of `name`.
    pub fn failed(&self, name: &str, now: Instant) {
        let window = self.limits.failure_window;
        let mut t = self.table.lock();
        if t.failures.len() >= MAX_FAILING_NAMES && !t.failures.contains_key(name) {
            t.failures
                .retain(|_, (start, _)| now.duration_since(*start) < window);
            if t.failures.len() >= MAX_FAILING_NAMES {
                // Names flood in faster than windows end: forget them all (bounded memory
                // first; the limit is a brake, not a lock).
                t.failures.clear();
            }
        }
        let e = t.failures.entry(name.to_string()).or_insert((now, 0));
        if now.duration_since(e.0) >= window {
            *e = (now, 0);
        }
        e.1 = e.1.saturating_add(1);
    }

    /// Starts a session for `user` (a correct login): ends the user's oldest past the cap.
    pub fn start(&self, user: i64, name: &str, class: u8, now: Instant) -> Result<String, Refused> {
        let id = new_id().ok_or(Refused::NoRandom)?;
        let mut t = self.table.lock();
        t.failures.remove(name);
        while t
            .by_user
            .get(&user)
            .is_some_and(|ids| ids.len() >= self.limits.per_user.max(1))
        {
            let oldest = t.by_user.get(&user).and_then(|ids| ids.front().cloned());
            match oldest {
                Some(old) => t.remove(&old),
                None => break,
            }
        }
        if t.by_id.len() >= self.limits.total {
            let dead: Vec<String> = t
                .by_id
                .iter()
                .filter(|(_, e)| self.expired(e, now))
                .map(|(k, _)| k.clone())
                .collect();
            for k in dead {
                t.remove(&k);
            }
            if t.by_id.len() >= self.limits.total {
                return Err(Refused::Full);
            }
        }
        t.by_id.insert(
            id.clone(),
            Entry {
                session: Session {
                    user,
                    name: name.to_string(),
                    class,
                },
                created: now,
                last: now,
            },
        );
        t.by_user.entry(user).or_default().push_back(id.clone());
        if class == 0 {
            t.classes.remove(name);
        } else {
            t.classes.insert(name.to_string(), class);
        }
        Ok(id)
    }

    /// Live sessions (tests).
    pub fn len(&self) -> usize {
        self.table.lock().by_id.len()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> SessionLimits {
        SessionLimits {
            idle: Duration::from_secs(10),
            absolute: Duration::from_secs(100),
            per_user: 3,
            total: 5,
            failures: 2,
            failure_window: Duration::from_secs(60),
        }
    }

    #[test]
    fn ids_are_128_random_bits_and_unrelated() {
        let s = Sessions::new(SessionLimits::default());
        let now = Instant::now();
        let a = s.start(1, "user1", 0, now).unwrap();
        let b = s.start(1, "user1", 0, now).unwrap();
        assert_eq!(a.len(), 32);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
        // Two ids taken at once share no long run of digits (a counter or clock would).
        let same = a.bytes().zip(b.bytes()).filter(|(x, y)| x == y).count();
        assert!(same < 16, "{a} {b}");
    }

    #[test]
    fn sessions_expire_idle_and_absolute() {
        let s = Sessions::new(limits());
        let t0 = Instant::now();
        let a = s.start(1, "u1", 0, t0).unwrap();
        assert!(s.get(&a, t0 + Duration::from_secs(9)).is_some());
        // Used at 9 s: still alive at 18 s, gone after 10 idle seconds.
        assert!(s.get(&a, t0 + Duration::from_secs(18)).is_some());
        assert!(s.get(&a, t0 + Duration::from_secs(29)).is_none());
        assert!(s.is_empty());
        // Absolute: used every 5 s, it still ends at 100 s.
        let b = s.start(1, "u1", 0, t0).unwrap();
        let mut t = 0;
        while t < 95 {
            t += 5;
            assert!(s.get(&b, t0 + Duration::from_secs(t)).is_some(), "{t}");
        }
        assert!(s.get(&b, t0 + Duration::from_secs(101)).is_none());
    }

    #[test]
    fn one_user_evicts_only_its_own_sessions_and_a_full_table_refuses() {
        let s = Sessions::new(limits());
        let now = Instant::now();
        let other = s.start(2, "u2", 0, now).unwrap();
        let mut mine = Vec::new();
        for _ in 0..50 {
            mine.push(s.start(1, "u1", 0, now).unwrap());
        }
        assert!(
            s.get(&other, now).is_some(),
            "another user's session survives"
        );
        assert_eq!(s.len(), 4, "3 of user 1 and 1 of user 2");
        assert!(s.get(&mine[49], now).is_some());
        assert!(s.get(&mine[0], now).is_none(), "the oldest went first");
        s.start(3, "u3", 0, now).unwrap();
        assert_eq!(s.start(4, "u4", 0, now), Err(Refused::Full));
        // Once sessions expire, there is room again.
        let later = now + Duration::from_secs(11);
        assert!(s.start(4, "u4", 0, later).is_ok());
    }

    #[test]
    fn failed_logins_are_limited_per_name_for_a_window() {
        let s = Sessions::new(limits());
        let t0 = Instant::now();
        assert_eq!(s.may_try("u1", t0), Ok(()));
        s.failed("u1", t0);
        s.failed("u1", t0);
        assert_eq!(s.may_try("u1", t0), Err(Refused::TooManyFailures));
        assert_eq!(s.may_try("u2", t0), Ok(()), "other names are not limited");
        assert_eq!(s.may_try("u1", t0 + Duration::from_secs(61)), Ok(()));
    }
}
