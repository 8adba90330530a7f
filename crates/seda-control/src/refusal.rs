//! What a front end does with the refusals on one connection, so that clients which resend at
//! once on a 503 cannot cost the admitted requests their goodput.
//!
//! Why: a refusal is cheap, not free. A client that ignores `Retry-After` and resends at once
//! turns every refusal into another request: the connection refuses as fast as the front end
//! can parse, decide and write. `bench/retry-storm.sh` (200 such users through `seda proxy` to
//! a 4-worker gunicorn of 100 pages/s, proxy and gunicorn sharing one core) writes its table
//! into `docs/benchmarks.md`. Its runs: answering every refusal at once costs the proxy most
//! of a core (50,000-160,000 refusals a second) and some of the goodput (0.93-0.97 x the
//! capacity, the lower on a busier machine); with `cap:10` the proxy answers about 1,900
//! refusals a second at a twentieth of a core, and keeps as much goodput as users that back
//! off 100 ms. What the refusals took is not simply CPU: gunicorn's own CPU was the same in
//! every row, and `close:8`, which refused as often as `none`, kept as much goodput as the
//! other policies. The runs do not say which part of answering every resend at once costs the
//! admitted requests their time; pacing or closing recovers it, and the cap does so with the
//! fewest refusals and the least CPU.
//!
//! The policies, per connection:
//! - [`RefusalPolicy::Immediate`]: answer every refusal at once (what HTTP servers do).
//! - [`RefusalPolicy::Delay`]: answer every refusal after a pause, spending no CPU while
//!   paused (a timer). A client that resends at once then resends at most once per pause.
//! - [`RefusalPolicy::CloseAfter`]: after `n` refusals in a row, answer with
//!   `Connection: close`; the client must reconnect, which costs the client a connect and the
//!   front end an accept.
//! - [`RefusalPolicy::Cap`]: answer up to `per_s` refusals a second at once (a burst of as
//!   many), and pace the rest to that rate (a generic cell rate algorithm). A client refused
//!   now and then is never delayed; one that resends at once is slowed to `per_s`.
//!
//! [`ServerRefusals`] is one `cap:N` pace a server's connections share, on its own clock (as
//! [`crate::SharedRetryAfter`] is).
//!
//! [`ConnectionRefusals`] keeps one connection's state and returns what to do; it never reads
//! the clock or sleeps (the crate's rule): the front end passes the time and does the waiting.

use std::fmt;
use std::str::FromStr;
use std::time::{Duration, Instant};

use crate::{InvalidConfig, Time};

/// The longest pause a policy may ask for: a refusal is an answer, and a client should have it
/// long before its own timeout.
pub const MAX_PAUSE: Duration = Duration::from_secs(5);

/// The default: [`RefusalPolicy::Cap`] at [`DEFAULT_CAP_PER_S`]. In `bench/retry-storm.sh`'s
/// run it kept the most goodput with the fewest refusals and the least proxy CPU of the
/// policies tried (module docs), and unlike a delay it never slows a client refused only now
/// and then (a browser, or a balancer that tries another replica on a 503). Behind a balancer
/// that sends many clients' requests over a few connections, a connection's refusals are many
/// clients' refusals: give such a front end `none` or a higher cap.
pub const DEFAULT: RefusalPolicy = RefusalPolicy::Cap {
    per_s: DEFAULT_CAP_PER_S,
};

/// Refusals a second one connection is answered at once under the default policy.
pub const DEFAULT_CAP_PER_S: u32 = 10;

/// How a front end answers the refusals on one connection (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefusalPolicy {
    /// Every refusal answered at once.
    Immediate,
    /// Every refusal answered after this pause.
    Delay(Duration),
    /// The connection closed after this many refusals in a row (the last one answered with
    /// `Connection: close`); an admitted request starts the count again.
    CloseAfter(u32),
    /// Up to `per_s` refusals a second answered at once, the rest paced to that rate.
    Cap {
        /// Refusals a second answered without a pause (also the burst).
        per_s: u32,
    },
}

impl Default for RefusalPolicy {
    fn default() -> Self {
        DEFAULT
    }
}

/// What to do with one refusal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefusalAction {
    /// Answer it now.
    Answer,
    /// Answer it after this pause (spend nothing meanwhile).
    AnswerAfter(Duration),
    /// Answer it now with `Connection: close`, and close the connection.
    AnswerAndClose,
}

impl RefusalPolicy {
    /// Checks the parameters.
    ///
    /// # Errors
    /// A zero or longer-than-[`MAX_PAUSE`] delay, `CloseAfter(0)`, or a cap of 0 per second.
    pub fn validate(&self) -> Result<(), InvalidConfig> {
        match *self {
            RefusalPolicy::Immediate => Ok(()),
            RefusalPolicy::Delay(d) if d.is_zero() || d > MAX_PAUSE => Err(InvalidConfig::new(
                "refusal delay",
                format!("must be above 0 and at most {MAX_PAUSE:?} (use `none` for no pause)"),
            )),
            RefusalPolicy::CloseAfter(0) => Err(InvalidConfig::new(
                "refusal close",
                "must close after at least 1 refusal",
            )),
            RefusalPolicy::Cap { per_s: 0 } => Err(InvalidConfig::new(
                "refusal cap",
                "must allow at least 1 refusal a second",
            )),
            _ => Ok(()),
        }
    }
}

impl fmt::Display for RefusalPolicy {
    /// The form [`FromStr`] reads: `none`, `delay:50ms`, `close:8`, `cap:10`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            RefusalPolicy::Immediate => f.write_str("none"),
            RefusalPolicy::Delay(d) => write!(f, "delay:{}ms", d.as_millis()),
            RefusalPolicy::CloseAfter(n) => write!(f, "close:{n}"),
            RefusalPolicy::Cap { per_s } => write!(f, "cap:{per_s}"),
        }
    }
}

impl FromStr for RefusalPolicy {
    type Err = InvalidConfig;

    /// `none`, `delay:DURATION` (`50ms`, `1s`), `close:N` (refusals in a row), `cap:N`
    /// (refusals a second).
    fn from_str(text: &str) -> Result<Self, InvalidConfig> {
        let bad = |why: String| InvalidConfig::new("refusal policy", why);
        let (kind, arg) = text.split_once(':').unwrap_or((text, ""));
        let count = |arg: &str| {
            arg.parse::<u32>()
                .map_err(|_| bad(format!("{text:?}: {arg:?} is not a whole number")))
        };
        let policy = match (kind, arg) {
            ("none", "") => RefusalPolicy::Immediate,
            ("delay", a) => RefusalPolicy::Delay(parse_pause(a).ok_or_else(|| {
                bad(format!(
                    "{text:?}: {a:?} is not a duration such as 50ms or 1s"
                ))
            })?),
            ("close", a) => RefusalPolicy::CloseAfter(count(a)?),
            ("cap", a) => RefusalPolicy::Cap { per_s: count(a)? },
            _ => {
                return Err(bad(format!(
                    "{text:?}: expected none, delay:50ms, close:N or cap:N"
                )));
            }
        };
        policy.validate()?;
        Ok(policy)
    }
}

/// `50ms` or `2s`.
fn parse_pause(text: &str) -> Option<Duration> {
    if let Some(ms) = text.strip_suffix("ms") {
        return ms.parse().ok().map(Duration::from_millis);
    }
    text.strip_suffix('s')?
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s >= 0.0 && *s <= 3600.0)
        .map(Duration::from_secs_f64)
}

/// One connection's refusals: the count in a row and, for [`RefusalPolicy::Cap`], when the
/// next refusal may be answered at once.
#[derive(Debug, Clone, Default)]
pub struct ConnectionRefusals {
    in_a_row: u32,
    /// The cap's theoretical arrival time (GCRA): the pace the refusals so far set.
    next_at: Time,
}

impl ConnectionRefusals {
    /// A new connection's.
    pub fn new() -> Self {
        Self::default()
    }

    /// A request on this connection was refused at `now` (time since any epoch the caller
    /// keeps for the connection): what to do with the refusal.
    pub fn refused(&mut self, policy: &RefusalPolicy, now: Time) -> RefusalAction {
        self.in_a_row = self.in_a_row.saturating_add(1);
        match *policy {
            RefusalPolicy::Immediate => RefusalAction::Answer,
            RefusalPolicy::Delay(d) => RefusalAction::AnswerAfter(d),
            RefusalPolicy::CloseAfter(n) if self.in_a_row >= n => RefusalAction::AnswerAndClose,
            RefusalPolicy::CloseAfter(_) => RefusalAction::Answer,
            RefusalPolicy::Cap { per_s } => {
                // GCRA: each refusal moves the pace by one interval; up to `per_s` of them may
                // run ahead of it (the burst) before a refusal waits for the pace.
                let interval = Duration::from_secs(1) / per_s.max(1);
                let burst = interval * (per_s.max(1) - 1);
                let at = self.next_at.max(now);
                self.next_at = at + interval;
                match (at - now).checked_sub(burst) {
                    Some(wait) if !wait.is_zero() => RefusalAction::AnswerAfter(wait),
                    _ => RefusalAction::Answer,
                }
            }
        }
    }

    /// A request on this connection was admitted: the refusals in a row start again.
    pub fn admitted(&mut self) {
        self.in_a_row = 0;
    }
}

/// The refusals a whole server answers at once, across its connections: one `cap:N` pace
/// ([`ConnectionRefusals`]' generic cell rate algorithm) shared by all of them, on top of each
/// connection's own policy.
///
/// Why: a connection's policy bounds what one connection costs, not what many do. 1,024
/// e-mail users that resend at once on a 503 drove `seda serve mail` to 53,000 refusals a
/// second and a whole core (`bench/mail-retry-storm.sh`; a refusal costs about what a small
/// answer does, ~25 us on loopback, half of it the kernel's TCP path), however cheap its own
/// decision. Past the server's cap a refusal waits for its turn (the front end's timer, no
/// CPU), so the CPU refusals take stays bounded whatever the number of connections.
#[derive(Debug)]
pub struct ServerRefusals {
    /// `cap:N` at the server's rate; `None` without a server-wide cap.
    cap: Option<RefusalPolicy>,
    /// The epoch of the pace's times.
    start: Instant,
    pace: std::sync::Mutex<ConnectionRefusals>,
}

/// Refusals a second a server answers at once by default ([`ServerRefusals`]): about an
/// eighth of a core at ~25 us each; WC03's e-mail users at 128 users refuse fewer.
pub const DEFAULT_SERVER_CAP_PER_S: u32 = 5_000;

impl ServerRefusals {
    /// Up to `per_s` refusals a second answered at once (a burst of as many); 0: no cap.
    pub fn new(per_s: u32) -> Self {
        ServerRefusals {
            cap: (per_s > 0).then_some(RefusalPolicy::Cap { per_s }),
            start: Instant::now(),
            pace: std::sync::Mutex::new(ConnectionRefusals::new()),
        }
    }

    /// How long a refusal made now waits for its turn: zero while the server is under its
    /// cap, never more than [`MAX_PAUSE`].
    pub fn wait(&self) -> Duration {
        self.wait_at(self.start.elapsed())
    }

    /// [`wait`](Self::wait) for a refusal made at `now` since the server's epoch.
    fn wait_at(&self, now: Time) -> Duration {
        let Some(cap) = &self.cap else {
            return Duration::ZERO;
        };
        let mut pace = self
            .pace
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match pace.refused(cap, now) {
            RefusalAction::AnswerAfter(d) => d.min(MAX_PAUSE),
            _ => Duration::ZERO,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn policies_parse_and_print_the_same_form() {
        for text in ["none", "delay:50ms", "close:8", "cap:10"] {
            let p: RefusalPolicy = text.parse().unwrap();
            assert_eq!(p.to_string(), text);
        }
        assert_eq!(
            "delay:1s".parse::<RefusalPolicy>().unwrap(),
            RefusalPolicy::Delay(Duration::from_secs(1))
        );
    }

    #[test]
    fn bad_policies_say_what_is_wrong() {
        for (text, says) in [
            ("delay:0ms", "above 0"),
            ("delay:9s", "at most"),
            ("delay:fast", "not a duration"),
            ("close:0", "at least 1"),
            ("cap:0", "at least 1"),
            ("cap:-1", "whole number"),
            ("wait:1", "expected none"),
            ("none:1", "expected none"),
        ] {
            let err = text.parse::<RefusalPolicy>().unwrap_err().to_string();
            assert!(err.contains(says), "{text}: {err}");
        }
    }

    #[test]
    fn close_after_counts_refusals_in_a_row_and_an_admission_resets_it() {
        let p = RefusalPolicy::CloseAfter(3);
        let mut c = ConnectionRefusals::new();
        assert_eq!(c.refused(&p, MS), RefusalAction::Answer);
        assert_eq!(c.refused(&p, MS), RefusalAction::Answer);
        c.admitted();
        assert_eq!(c.refused(&p, MS), RefusalAction::Answer);
        assert_eq!(c.refused(&p, MS), RefusalAction::Answer);
        assert_eq!(c.refused(&p, MS), RefusalAction::AnswerAndClose);
    }

    #[test]
    fn the_cap_answers_a_burst_at_once_then_paces_to_its_rate() {
        let p = RefusalPolicy::Cap { per_s: 4 };
        let mut c = ConnectionRefusals::new();
        let now = Duration::from_secs(10);
        for _ in 0..4 {
            assert_eq!(c.refused(&p, now), RefusalAction::Answer);
        }
        // The fifth at the same instant waits one interval (250 ms), the sixth two.
        assert_eq!(c.refused(&p, now), RefusalAction::AnswerAfter(250 * MS));
        assert_eq!(c.refused(&p, now), RefusalAction::AnswerAfter(500 * MS));
        // A client that resends when answered is held to the rate: 4 a second.
        let mut t = now + 500 * MS;
        for _ in 0..8 {
            assert_eq!(c.refused(&p, t), RefusalAction::AnswerAfter(250 * MS));
            t += 250 * MS;
        }
        // Quiet for a second: a burst again.
        t += Duration::from_secs(2);
        assert_eq!(c.refused(&p, t), RefusalAction::Answer);
    }

    #[test]
    fn delay_pauses_every_refusal_and_immediate_none() {
        let mut c = ConnectionRefusals::new();
        let d = RefusalPolicy::Delay(20 * MS);
        assert_eq!(c.refused(&d, MS), RefusalAction::AnswerAfter(20 * MS));
        assert_eq!(
            c.refused(&RefusalPolicy::Immediate, MS),
            RefusalAction::Answer
        );
    }

    #[test]
    fn past_the_servers_cap_a_refusal_waits_its_turn() {
        let server = ServerRefusals::new(100);
        let waits: Vec<Duration> = (0..300).map(|_| server.wait_at(Duration::ZERO)).collect();
        assert!(
            waits[..100].iter().all(Duration::is_zero),
            "the burst is answered at once"
        );
        // 300 refusals at once at 100 a second: the last waits two seconds.
        assert_eq!(waits[299], 2000 * MS);
        // A second later the pace has moved on by 100 refusals.
        assert_eq!(server.wait_at(Duration::from_secs(1)), 1010 * MS);
    }

    #[test]
    fn without_a_server_cap_no_refusal_waits() {
        let server = ServerRefusals::new(0);
        assert!((0..10_000).all(|_| server.wait_at(Duration::ZERO).is_zero()));
    }
}
