//! Session-aware admission (SBAC02): once a user's session is admitted, its requests are
//! preferred over new sessions, so the work already invested in a login is not wasted; new
//! sessions are the first turned away when the service is full.
//!
//! SBAC02's observation: a server that admits requests one by one, regardless of session,
//! serves under overload many sessions that are later aborted half-way, and all their work is
//! wasted. It decides at the start of a session instead, and serves the requests of sessions it
//! admitted first. Here a request's class is its rank, set by the service from its own session
//! table (never by the client): the higher the class, the later it is turned away. The service
//! puts an established session above a new one; the e-mail service, which also has user
//! classes, gives a login of a user of class `u` the class `2u` and a request of that user's
//! session `2u + 1` (`seda_mail::admission_class`), and a request with neither class 0.
//!
//! The controller wraps our response-time controller ([`TunedResponseTimeController`]: a
//! p90 target, a queue bounded by the departure rate times a waiting budget) and puts two
//! rules in front of it:
//!
//! - **Share.** The highest class that arrived within the last `active` may fill the whole queue
//!   limit; each class below it only `lower_share` of what the class above it may (0.5: half
//!   for the class just below, a quarter for the next), but never less than `floor` requests
//!   (the inner controller's minimum queue). So while established sessions keep the service
//!   busy, a login finds the queue "full" well before they do, and a quiet service turns no
//!   one away.
//! - **Hold** (off by default). After a request of class `c` is refused, every class below `c`
//!   is refused for `hold`: SBAC02's rule that a server which had to refuse admitted sessions
//!   admits no new session for the next interval. Measured on the e-mail service at 1024 users
//!   it starved the service: the queue limit follows the departure rate, so while few sessions
//!   were established their bursts were refused at a small limit, which held every login off,
//!   which kept the sessions few (32 requests/s against 147 without it, on a loaded machine).
//!   The share alone already turns logins away first once sessions keep half the queue filled,
//!   which is what "the service is full" means for a queue.
//!
//! Requests of the top class see only the inner controller, so the p90 of what is admitted is
//! held at the target as without sessions; the rules decide only *who* is turned away.
//!
//! Give the controller to every stage of a service as one shared controller
//! ([`SharedController`](crate::SharedController)): a login stage of its own would see only
//! logins and admit them while the other stages turn the sessions away.

use std::time::Duration;

use crate::InvalidConfig;
use crate::entry::{self, Entry, Params, Role};
use crate::response_time::{TunedConfig, TunedResponseTimeController};
use crate::{AdmissionController, RejectReason, Time};

/// The name configurations give this controller (`admission = { kind = "session_aware" }`).
pub const SESSION_AWARE: &str = "session_aware";

/// The catalogue entry of [`SessionAwareController`].
pub(crate) const ENTRY: Entry = Entry {
    name: SESSION_AWARE,
    about: "established sessions before new ones, higher classes first, over ours",
    source: "SBAC02, on our tuned response-time controller",
    role: Role::Rate,
    compared: false,
    build: |p| {
        Ok(Box::new(SessionAwareController::new(
            SessionAwareConfig::read(p)?,
        )?))
    },
    aim: entry::target_s,
};

/// Parameters of [`SessionAwareController`].
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct SessionAwareConfig {
    /// The response-time controller the top class sees (`target_s` and the rest of its
    /// parameters).
    pub inner: TunedConfig,
    /// The share of the queue limit a class may fill, relative to the class above it
    /// ([`DEFAULT_LOWER_SHARE`](Self::DEFAULT_LOWER_SHARE)).
    pub lower_share: f64,
    /// Every class may queue this many requests whatever its share (default: the inner
    /// controller's `min_queue`, 10). At light load the queue limit is only as large as the few
    /// departures make it; without a floor, ranks refused requests that a quiet service had
    /// room for (12% of the requests of 16 users, in a run of `mail-users`).
    pub floor: f64,
    /// How long a class counts as arriving after its last request (default: the target,
    /// [`DEFAULT_ACTIVE_TARGETS`](Self::DEFAULT_ACTIVE_TARGETS)).
    pub active: Duration,
    /// How long a refusal of a class holds every lower class off (`None`, the default: never).
    pub hold: Option<Duration>,
}

impl SessionAwareConfig {
    /// Each class may fill half the queue the class above it may.
    pub const DEFAULT_LOWER_SHARE: f64 = 0.5;
    /// `active` in units of the target: a class that sent nothing for one target (about one
    /// response time of a request it would have sent) no longer counts as arriving.
    pub const DEFAULT_ACTIVE_TARGETS: f64 = 1.0;

    /// The defaults for a p90 `target`.
    pub fn new(target: Duration) -> Self {
        SessionAwareConfig {
            inner: TunedConfig::new(target),
            lower_share: Self::DEFAULT_LOWER_SHARE,
            floor: TunedConfig::new(target).min_queue,
            active: target.mul_f64(Self::DEFAULT_ACTIVE_TARGETS),
            hold: None,
        }
    }

    /// Reads the parameters a configuration gives: the tuned controller's (`target_s`,
    /// `setpoint`, ...), `lower_share`, `floor`, `active_s` and `hold_s` (0, the default: no
    /// hold).
    pub fn read(p: &mut Params<'_>) -> Result<Self, InvalidConfig> {
        let inner = TunedConfig::read(p, false);
        let d = SessionAwareConfig::new(inner.base.target);
        Ok(SessionAwareConfig {
            lower_share: p.f64("lower_share", d.lower_share),
            floor: p.f64("floor", inner.min_queue),
            active: p.secs("active_s", d.active),
            hold: Some(p.secs("hold_s", Duration::ZERO)).filter(|h| !h.is_zero()),
            inner,
        })
    }

    /// Checks the parameters.
    pub fn validate(&self) -> Result<(), InvalidConfig> {
        self.inner.validate()?;
        if !(self.lower_share > 0.0 && self.lower_share <= 1.0) {
            return Err(InvalidConfig::new(
                "lower_share",
                format!("lower_share must be in (0, 1], got {}", self.lower_share),
            ));
        }
        InvalidConfig::non_negative("floor", self.floor)?;
        InvalidConfig::positive("active_s", self.active)
    }
}

/// Session-aware admission (module docs describe it).
#[derive(Debug, Clone)]
pub struct SessionAwareController {
    cfg: SessionAwareConfig,
    inner: TunedResponseTimeController,
    /// When each class last arrived (index: class).
    seen: Vec<Option<Time>>,
    /// When each class was last refused (index: class).
    refused: Vec<Option<Time>>,
    /// Requests refused by the share or hold rules (not by the inner controller).
    refused_by_rank: u64,
}

impl SessionAwareController {
    /// A controller with `cfg`.
    pub fn new(cfg: SessionAwareConfig) -> Result<Self, InvalidConfig> {
        cfg.validate()?;
        Ok(SessionAwareController {
            inner: TunedResponseTimeController::new(cfg.inner.clone())?,
            cfg,
            seen: Vec::new(),
            refused: Vec::new(),
            refused_by_rank: 0,
        })
    }

    /// The wrapped response-time controller.
    pub fn inner(&self) -> &TunedResponseTimeController {
        &self.inner
    }

    fn within(at: Option<Time>, now: Time, window: Duration) -> bool {
        at.is_some_and(|t| now.saturating_sub(t) < window)
    }

    /// The highest class that arrived within `active` of `now`.
    fn top(&self, now: Time) -> usize {
        self.seen
            .iter()
            .rposition(|&t| Self::within(t, now, self.cfg.active))
            .unwrap_or(0)
    }

    /// Whether a class above `c` was refused within `hold` of `now`.
    fn held(&self, c: usize, now: Time) -> bool {
        self.cfg.hold.is_some_and(|hold| {
            self.refused
                .iter()
                .skip(c + 1)
                .any(|&t| Self::within(t, now, hold))
        })
    }

    /// The share of the queue limit class `c` may fill at `now`.
    pub fn share(&self, now: Time, class: u8) -> f64 {
        let levels = self.top(now).saturating_sub(usize::from(class));
        self.cfg.lower_share.powi(levels.min(64) as i32)
    }

    fn mark(list: &mut Vec<Option<Time>>, c: usize, now: Time) {
        if list.len() <= c {
            list.resize(c + 1, None);
        }
        list[c] = Some(now);
    }

    fn refuse(&mut self, c: usize, now: Time) -> RejectReason {
        Self::mark(&mut self.refused, c, now);
        self.refused_by_rank += 1;
        self.inner.note_rejection();
        RejectReason::Class
    }
}

impl AdmissionController for SessionAwareController {
    fn name(&self) -> &'static str {
        "session_aware"
    }

    fn admit(&mut self, now: Time, class: u8) -> Result<(), RejectReason> {
        let c = usize::from(class);
        Self::mark(&mut self.seen, c, now);
        if self.held(c, now) {
            return Err(self.refuse(c, now));
        }
        let share = self.share(now, class);
        if share < 1.0 {
            // Ticks the inner controller's periods, so the limit below is current.
            self.inner.tick(now);
            let room = (share * self.inner.queue_limit()).max(self.cfg.floor);
            if self.inner.queued() as f64 >= room {
                return Err(self.refuse(c, now));
            }
        }
        self.inner.admit(now, class).inspect_err(|_| {
            Self::mark(&mut self.refused, c, now);
        })
    }

    fn undo_admit(&mut self, now: Time, class: u8) {
        self.inner.undo_admit(now, class);
    }

    fn on_dequeue(&mut self, now: Time, queued: Duration) -> bool {
        self.inner.on_dequeue(now, queued)
    }

    fn on_served(&mut self, now: Time, class: u8, beyond_wait: Duration) {
        self.inner.on_served(now, class, beyond_wait);
    }

    fn on_complete(&mut self, now: Time, class: u8, response: Duration, sojourn: Duration) {
        self.inner.on_complete(now, class, response, sojourn);
    }

    fn on_drop(&mut self, now: Time, class: u8) {
        self.inner.on_drop(now, class);
    }

    fn tick(&mut self, now: Time) {
        self.inner.tick(now);
    }

    fn state(&self) -> Vec<(&'static str, f64)> {
        let mut s = self.inner.state();
        s.push(("refused_by_rank", self.refused_by_rank as f64));
        s
    }
}

#[cfg(test)]
mod tests;
