//! Our tuned response-time controller. It keeps WC03 Section 3.2's goal (a percentile of response
//! time at a target) and measurement (the percentile of a window of `nreq` samples or
//! `timeout`), but it does not act through a rate. It bounds the stage's *queue* at the length
//! that, at the measured departure rate, makes a new arrival wait the allowed time (Little's
//! law, as FAIR07 Section 4.3.1 maps a response-time target to a throughput target; Sandstorm's
//! controller had a compiled-out mode doing AIMD on the queue threshold, SEDA01).
//!
//! Why: WC03's loop acts on the token rate from response times of requests that completed, so it
//! sees a spike only after the spike's requests have waited; its AIMD then moves the rate by
//! +1.8/s or /1.2 per run. On our spike it admits half the capacity; a proportional law on the
//! rate oscillates because of that measurement delay. The queue length is known without delay:
//!
//! - **Inner loop (no lag).** Admit while `queue < max(min_queue, d x wait)`, `d` the departure
//!   rate (dequeues per second, smoothed over `timeout` periods), `wait` the queueing-time
//!   budget. A rejection is decided at once, cheaply, when the request arrives.
//!
//!   A departure rate measures capacity only while the queue stands: when the queue ran dry
//!   in the last period, the stage served all that came, and `d` is the arrival rate. There
//!   `d` is at least one event per mean time in service (`1 / s`, from what the stage reports
//!   of each response outside its queue, [`AdmissionController::on_served`]): a stage with
//!   work serves at least one event at a time. Without it, a burst on a quiet stage met a
//!   limit of `min_queue`: in `mail-search`, 300 users logging in at once met a limit of 10
//!   (93% of the logins refused in the first second), where the processor could serve them
//!   all in a third of a second; with it, a limit of about 70 (7 ms outside the queue).
//! - **Outer loop (the target), slow.** Each closed window multiplies `wait` by
//!   `r ^ (dt / adapt)`, `dt` the time since the last window, `adapt` a time constant (2 x
//!   target) well above the measurement's own delay, and keeps it within `[0.001, 1] x target`.
//!   Over the setpoint (`setpoint x target`), `r = setpoint x target / p90` (at least 0.5): the
//!   budget absorbs the service-time part of the response time and whatever the model misses.
//!   Under it, `r = 0.5` if the queue never emptied since the last window (a standing queue adds
//!   waiting and no throughput, CoDel's observation) and up to 2 if it did (the servers may have
//!   idled); with `trim` off, `r = setpoint x target / p90` (at most 2) steers the percentile to
//!   the setpoint instead. With a trimming floor (`trim_floor`, 0 by default), a standing queue
//!   is trimmed only down to a percentile of `trim_floor x` the setpoint (the ratio is
//!   `trim_floor x setpoint x target / p90`, within [0.5, 1]), and a queue that ran dry under
//!   the floor grows the budget three times as fast. Whatever the percentile, `r` is at most 0.5 when the selective
//!   dropper (below) dropped more than 1% of the events that left the queue since the last
//!   window: a stage's queue then stands at the dropper's threshold. It adapts only while the
//!   limit is turning requests away: at low load the percentile says nothing about the budget
//!   (anti-windup).
//!
//!   A queue of requests in flight in a service (seda-tower's layer) holds the service's own
//!   work too, which stands under any overload: there trimming stops at a budget of
//!   `budget_floor x` the target, or it takes the bound down to `min_queue` whatever the
//!   service serves at once (`TunedConfig::budget_floor`).
//!
//!   Why the drops count: one controller shared by several stages steers the percentile of
//!   all their requests, and the costliest stage's share can sit in the queue at the dropper's
//!   threshold while the percentile stays at the setpoint. In `mail-users` at 1024 users the
//!   list-messages stage's queueing time had p50 0.298 s against a 0.296 s threshold: two of
//!   three requests leaving it were dropped, the rest answered near the target and often late
//!   at the client (goodput 0.898 x capacity, 0.891-0.913 in five quick runs). Shrinking on
//!   drops read 0.940 (0.910-0.951) and 0.918 (0.895-0.936) in two sets of five, with 16 users
//!   refused at most 0.1% of their requests, and `controllers` ranked ours first in 12 of 13
//!   runs; trimming on the shared queue length instead (`trim`) reached 0.975 but refused up to
//!   8.5% of 16 users' requests.
//! - **Safety net: selective dropping (FAIR07 Section 4.2.3).** At dequeue, an event that queued
//!   longer than `drop_queued` (0.8 x the target, FAIR07's dropper threshold) is dropped as
//!   expired: one that waited the whole target cannot meet it, and serving it spends the work
//!   on a late reply. At the target itself, `mail-users` at 1024 users held the p90 at 1.00 x
//!   the target and served 0.52-0.68 of capacity within it (three quick runs); at 0.8 x, 0.85 x
//!   and 0.65-0.77, and `controllers` ranked ours first in each of three runs (0.950 against
//!   Vegas's 0.914).
//!
//!   The threshold also leaves room for the rest of the response: where the stage reports how
//!   much of each response was spent outside its queue ([`AdmissionController::on_served`]:
//!   the tiers before it and the service itself, as the runtime's stages report), an event is
//!   dropped once it waited longer than the target less the longest such rest of the last 200
//!   replies over the setpoint (never below half of `drop_queued`). A wait of 0.8 x the target leaves 0.2 x to serve in; when the
//!   costliest requests need more, each one dequeued near the threshold is answered late and
//!   its work lost. In `overload-curve` (a fifth of the requests hold two emulated cores 60 ms
//!   when four share them; target 250 ms) the late replies were those long ones: ours answered
//!   with a p99 of 256-259 ms past capacity and 0.86-0.93 x capacity within the target.

use crate::InvalidConfig;
use std::time::Duration;

use super::{ResponseTimeConfig, SampleWindow, ewma};
use crate::entry::{self, Entry, Params, Role};
use crate::{AdmissionController, RejectReason, Time};

/// The share of dequeued events the dropper may drop in one outer period before the budget
/// shrinks.
const DROP_TOLERANCE: f64 = 0.01;

/// How much faster the budget grows when trimming finds the queue ran dry with the
/// percentile under its floor (`TunedConfig::trim_floor`).
const FAST_GROWTH: f64 = 3.0;

/// The weight of the old mean time in service against each new response's time outside the
/// queue (an EWMA over about 16 responses).
const SERVICE_ALPHA: f64 = 15.0 / 16.0;

/// Samples per window of the rest-of-response tail, and the tail's percentile: the longest,
/// since a wait at the threshold plus a rest at the p99 is already a reply at the target.
const REST_SAMPLES: usize = 200;
const REST_PERCENTILE: f64 = 1.0;

/// The name configurations give this controller (`admission = { kind = "response_time_tuned" }`).
pub const RESPONSE_TIME_TUNED: &str = "response_time_tuned";

/// The catalogue entry of [`TunedResponseTimeController`].
pub(crate) const TUNED_ENTRY: Entry = Entry {
    name: RESPONSE_TIME_TUNED,
    about: "ours: p90 target, queue sized by Little's law",
    source: "ours, on WC03 Section 3.2's goal and FAIR07 Section 4.3.1's mapping",
    role: Role::Rate,
    compared: true,
    build: |p| {
        let cfg = TunedConfig::read(p, false);
        Ok(Box::new(TunedResponseTimeController::new(cfg)?))
    },
    aim: entry::target_s,
};

/// The name configurations give this controller (`admission = { kind = "response_time_tuned_trim" }`).
pub const RESPONSE_TIME_TUNED_TRIM: &str = "response_time_tuned_trim";

/// Our tuned controller with standing-queue trimming on by default (`trim = 1`), listed as its
/// own row by the simulator's scenarios.
pub(crate) const TUNED_TRIM_ENTRY: Entry = Entry {
    name: RESPONSE_TIME_TUNED_TRIM,
    about: "ours, trimming a standing queue (trim = 1)",
    source: "ours, with CoDel's standing-queue observation",
    role: Role::Rate,
    compared: false,
    build: |p| {
        let cfg = TunedConfig::read(p, true);
        Ok(Box::new(TunedResponseTimeController::new(cfg)?))
    },
    aim: entry::target_s,
};

/// Parameters of [`TunedResponseTimeController`].
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct TunedConfig {
    /// Target, percentile, `nreq`, `timeout` (0.1 s here) and `alpha` (the weight of the old
    /// departure rate per period); WC03's AIMD constants and the rate bounds are not used.
    pub base: ResponseTimeConfig,
    /// The percentile is steered to `setpoint x target` (0.8), a margin under the target.
    pub setpoint: f64,
    /// The queue limit never falls below this many events (10), so a stage whose departure
    /// rate is not yet known still admits.
    pub min_queue: f64,
    /// Time constant of the outer loop (2 x target).
    pub adapt: Duration,
    /// Trim a standing queue: under the setpoint, shrink the budget while the queue never
    /// empties and grow it only when it does. Off by default: it keeps latency far below the
    /// target, like the latency-minimising peers, but it rejects requests that would have met
    /// the target (see `seda sim users`); off, the percentile is steered to the setpoint.
    pub trim: bool,
    /// Where trimming calls a queue standing: it never fell to `standing_share x` its limit
    /// since the last window (0: it never emptied, the stages' rule). A queue that counts the
    /// requests in flight in a service (seda-tower's `QueueModel::InFlight`) includes those
    /// being served, so it seldom empties while the service keeps up: at 0.8 x capacity on 8
    /// emulated cores, it never did, each burst's refusals halved the budget, and the layer
    /// refused 6.4% of the requests (`tower-peers`, issue 54). Falling to half the limit says
    /// the limit did not bind the whole window: the refusals were a burst's, not a standing
    /// queue's.
    pub standing_share: f64,
    /// Trimming never takes the budget under this share of the target (0: down to its 0.001
    /// x, the stages' rule, whose budget is a wait in their queue). For a queue that counts
    /// the requests in flight in a service (seda-tower's layer) the budget is a whole response
    /// time, the service's own work stands in that queue under any overload, and trimming
    /// took the bound down to `min_queue` whatever the service serves at once: 0.60 x
    /// capacity on a service of 16 slots at 3 x load (`tower-peers`, issue 54).
    pub budget_floor: f64,
    /// How far trimming takes the percentile down, in units of the setpoint (0: as far as the
    /// queue stands, the stages' rule). While the queue stands and the percentile is under the
    /// setpoint, the budget shrinks by `trim_floor x setpoint x target / percentile` (at least
    /// 0.5), so it stops shrinking once the percentile is at `trim_floor x` the setpoint: the
    /// budget is used, not trimmed away. In seda-tower's layer (0.75) the requests in flight
    /// stand under any overload, and trimming to the bottom held the p90 at 0.10-0.15 s of a
    /// 0.25 s target, under-filled 8 slots and trailed a fixed limit of 25 by 3.8% at 3 x
    /// capacity (`tower-peers`, issue 54).
    pub trim_floor: f64,
    /// Drop at dequeue events that queued longer than this; `None` disables dropping.
    pub drop_queued: Option<Duration>,
}

impl TunedConfig {
    /// `drop_queued` in units of the target: FAIR07's dropper threshold (Section 5.3, 0.8; see
    /// the module docs).
    pub const DROP_FRACTION: f64 = 0.8;

    /// Our defaults for a `target` on the 90th percentile.
    pub fn new(target: Duration) -> Self {
        let base = ResponseTimeConfig {
            timeout: Duration::from_millis(100),
            alpha: 0.8,
            ..ResponseTimeConfig::new(target)
        };
        TunedConfig {
            base,
            setpoint: 0.8,
            min_queue: 10.0,
            adapt: target * 2,
            trim: false,
            standing_share: 0.0,
            budget_floor: 0.0,
            trim_floor: 0.0,
            drop_queued: Some(target.mul_f64(TunedConfig::DROP_FRACTION)),
        }
    }

    /// Reads the parameters a configuration gives; `trim` is the default of `trim`.
    /// `drop_queued_s` = 0 disables dropping.
    pub fn read(p: &mut Params<'_>, trim: bool) -> Self {
        let target = p.secs("target_s", ResponseTimeConfig::DEFAULT_TARGET);
        let d = TunedConfig::new(target);
        let drop_queued = match p.secs("drop_queued_s", d.drop_queued.unwrap_or_default()) {
            z if z.is_zero() => None,
            z => Some(z),
        };
        let mut base = d.base.clone();
        base.percentile = p.f64("percentile", base.percentile);
        base.nreq = p.count("nreq", base.nreq);
        base.timeout = p.secs("timeout_s", base.timeout);
        base.alpha = p.f64("alpha", base.alpha);
        TunedConfig {
            base,
            setpoint: p.f64("setpoint", d.setpoint),
            min_queue: p.f64("min_queue", d.min_queue),
            adapt: p.secs("adapt_s", d.adapt),
            trim: p.flag("trim", trim),
            standing_share: p.f64("standing_share", d.standing_share),
            budget_floor: p.f64("budget_floor", d.budget_floor),
            trim_floor: p.f64("trim_floor", d.trim_floor),
            drop_queued,
        }
    }

    /// Checks the parameters.
    pub fn validate(&self) -> Result<(), InvalidConfig> {
        self.base.validate()?;
        if !(self.setpoint > 0.0 && self.setpoint <= 1.0) {
            return Err(InvalidConfig::new(
                "setpoint",
                format!("setpoint must be in (0, 1], got {}", self.setpoint),
            ));
        }
        if self.adapt.is_zero() {
            return Err(InvalidConfig::new(
                "adapt_s",
                "adapt_s must be greater than 0",
            ));
        }
        if !(0.0..1.0).contains(&self.standing_share) {
            return Err(InvalidConfig::new(
                "standing_share",
                format!(
                    "standing_share must be in [0, 1), got {}",
                    self.standing_share
                ),
            ));
        }
        if !(0.0..=1.0).contains(&self.budget_floor) {
            return Err(InvalidConfig::new(
                "budget_floor",
                format!("budget_floor must be in [0, 1], got {}", self.budget_floor),
            ));
        }
        if !(0.0..=1.0).contains(&self.trim_floor) {
            return Err(InvalidConfig::new(
                "trim_floor",
                format!("trim_floor must be in [0, 1], got {}", self.trim_floor),
            ));
        }
        if !(self.min_queue.is_finite() && self.min_queue >= 1.0) {
            return Err(InvalidConfig::new(
                "min_queue",
                format!("min_queue must be >= 1, got {}", self.min_queue),
            ));
        }
        Ok(())
    }
}

/// The tuned response-time controller (module docs describe it).
#[derive(Debug, Clone)]
pub struct TunedResponseTimeController {
    cfg: TunedConfig,
    window: SampleWindow,
    target_s: f64,
    /// Queueing-time budget, seconds.
    wait_s: f64,
    /// Admitted events not yet dequeued.
    queued: u64,
    /// Smoothed dequeues per second; `None` until the first period closes.
    departures_per_s: Option<f64>,
    period_start: Option<Time>,
    period_dequeues: u64,
    /// Lowest queue length in the departure-rate period under way.
    period_min_queued: u64,
    /// The queue ran dry in the last closed period (or none has closed): the departure rate
    /// is the arrival rate, not the capacity.
    dry_last_period: bool,
    /// Mean time of a response outside the queue (seconds; smoothed), once one was served.
    service_s: Option<f64>,
    last_p_s: f64,
    last_outer: Option<Time>,
    rejections: u64,
    /// Lowest queue length since the last outer run.
    min_queued: u64,
    dropped: u64,
    /// Drops and dequeues since the last outer run.
    drops_since_outer: u64,
    dequeues_since_outer: u64,
    /// Each response's time outside the queue, windowed; the dropper's threshold is set from
    /// the longest of each closed window (`drop_queued` before the first).
    rest: SampleWindow,
    drop_at: Option<Duration>,
}

impl TunedResponseTimeController {
    /// A controller with `cfg`.
    pub fn new(cfg: TunedConfig) -> Result<Self, InvalidConfig> {
        cfg.validate()?;
        let b = &cfg.base;
        let target_s = b.target.as_secs_f64();
        Ok(TunedResponseTimeController {
            window: SampleWindow::new(b.nreq, b.timeout, b.percentile),
            target_s,
            wait_s: 0.5 * target_s,
            queued: 0,
            departures_per_s: None,
            period_start: None,
            period_dequeues: 0,
            period_min_queued: 0,
            dry_last_period: true,
            service_s: None,
            last_p_s: 0.0,
            last_outer: None,
            rejections: 0,
            min_queued: 0,
            dropped: 0,
            drops_since_outer: 0,
            dequeues_since_outer: 0,
            rest: SampleWindow::new(REST_SAMPLES, cfg.adapt, REST_PERCENTILE),
            drop_at: cfg.drop_queued,
            cfg,
        })
    }

    /// The current queue limit.
    pub fn queue_limit(&self) -> f64 {
        (self.capacity_per_s() * self.wait_s).max(self.cfg.min_queue)
    }

    /// What the stage is known to serve per second: the departure rate, and where the queue
    /// ran dry, at least one event per mean time in service (module docs).
    fn capacity_per_s(&self) -> f64 {
        let d = self.departures_per_s();
        match self.service_s {
            Some(s) if self.dry_last_period && s > 0.0 => d.max(1.0 / s),
            _ => d,
        }
    }

    /// Admitted events not yet dequeued.
    pub fn queued(&self) -> u64 {
        self.queued
    }

    /// Counts a request that a rule in front of this controller turned away (a wrapper's, such
    /// as session-aware admission's): the outer loop adapts only while requests are being
    /// turned away, and those count as much as the limit's own.
    pub fn note_rejection(&mut self) {
        self.rejections += 1;
    }

    /// Counts an event that a rule in front of this controller admitted without asking it
    /// (a wrapper's that switches the limit off, as degradation's does), so that the queue the
    /// limit sees includes it once the limit is back on.
    pub fn admit_anyway(&mut self, now: Time) {
        self.roll(now);
        self.queued += 1;
    }

    /// An admitted event left the queue: the departure rate and the queue length learn it, but
    /// no drop is decided (for a wrapper whose limit is off; `on_dequeue` is this plus the
    /// selective dropper).
    pub fn dequeued(&mut self, now: Time) {
        self.roll(now);
        self.queued = self.queued.saturating_sub(1);
        self.min_queued = self.min_queued.min(self.queued);
        self.period_min_queued = self.period_min_queued.min(self.queued);
        self.period_dequeues += 1;
        self.dequeues_since_outer += 1;
    }

    /// The queueing-time budget.
    pub fn wait_budget(&self) -> Duration {
        Duration::from_secs_f64(self.wait_s)
    }

    /// How long an event may wait before the dropper takes it: `drop_queued`, or less where
    /// the rest of a response would not fit in what is left of the target (module docs).
    pub fn drop_threshold(&self) -> Option<Duration> {
        self.drop_at
    }

    /// A closed window's longest rest of a response, `tail_s`, moves the dropper's threshold.
    fn leave_room(&mut self, tail_s: f64) {
        let Some(limit) = self.cfg.drop_queued else {
            return;
        };
        // The longest rest seen is a sample: the next may be longer. It keeps the setpoint's
        // margin (a rest of 60 ms against a setpoint of 0.8 leaves 75 ms).
        let rest_s = tail_s / self.cfg.setpoint;
        let room_s = (self.target_s - rest_s).max(0.5 * limit.as_secs_f64());
        self.drop_at = Some(limit.min(Duration::from_secs_f64(room_s)));
    }

    /// The smoothed departure rate.
    pub fn departures_per_s(&self) -> f64 {
        self.departures_per_s.unwrap_or(0.0)
    }

    /// Outer loop: one window's percentile, closed at `now`.
    #[cold]
    pub fn observe(&mut self, now: Time, sample_s: f64) {
        self.last_p_s = sample_s;
        let last = self.last_outer.replace(now).unwrap_or(now);
        let lowest = std::mem::replace(&mut self.min_queued, self.queued);
        let ran_dry = lowest as f64 <= self.cfg.standing_share * self.queue_limit();
        let drops = std::mem::take(&mut self.drops_since_outer);
        let dequeues = std::mem::take(&mut self.dequeues_since_outer);
        let wasting = drops as f64 > DROP_TOLERANCE * dequeues as f64;
        if std::mem::take(&mut self.rejections) == 0 {
            return;
        }
        let dt = now.saturating_sub(last).as_secs_f64();
        let mut step = (dt / self.cfg.adapt.as_secs_f64()).min(1.0);
        let want = self.cfg.setpoint * self.target_s;
        let toward_target = (want / sample_s.max(1e-9)).clamp(0.5, 2.0);
        let mut floor_s = 0.001 * self.target_s;
        let ratio = if wasting {
            // The dropper threw away admitted events that had waited past its threshold:
            // some stage's queue stands that long, whatever the percentile of all says.
            toward_target.min(0.5)
        } else if toward_target < 1.0 || !self.cfg.trim {
            toward_target
        } else if ran_dry {
            // The queue emptied: servers may have idled. Allow more queue (up to the target).
            // Under the trimming floor, FAST_GROWTH x faster: the service keeps up with room
            // to spare, so each refusal is a request lost for nothing (at 0.8 x capacity,
            // bursts refused 1.8% of `tower-peers`' requests while it grew at the usual pace).
            // Not at once: after an incident the p90 lags the bound, and doubling it each
            // window overshot to a p90 of 0.33 s.
            if sample_s < self.cfg.trim_floor * want {
                step = (FAST_GROWTH * step).min(1.0);
            }
            toward_target.min(2.0)
        } else {
            // A queue that never emptied is standing: it adds waiting and no throughput. It is
            // trimmed down to the floor, not past it (`trim_floor`), and the budget not under
            // its own floor (`budget_floor`).
            floor_s = floor_s.max(self.cfg.budget_floor * self.target_s);
            (self.cfg.trim_floor * want / sample_s.max(1e-9)).clamp(0.5, 1.0)
        };
        self.wait_s = (self.wait_s * ratio.powf(step)).clamp(floor_s, self.target_s);
    }

    /// Closes departure-rate periods and due windows.
    /// (It runs two or three times per request: the rare work is in cold functions.)
    #[inline]
    fn roll(&mut self, now: Time) {
        let start = *self.period_start.get_or_insert(now);
        let elapsed = now.saturating_sub(start);
        if elapsed >= self.cfg.base.timeout {
            self.close_period(now, elapsed);
        }
        if let Some(p) = self.window.poll(now) {
            self.observe(now, p);
        }
    }

    /// A departure-rate period of `elapsed` closes at `now`.
    #[cold]
    fn close_period(&mut self, now: Time, elapsed: Duration) {
        let d = self.period_dequeues as f64 / elapsed.as_secs_f64();
        // The first period is the estimate: averaged with a zero it would start at a fifth of
        // the rate and take a second to reach nine tenths of it, with the limit at
        // `min_queue` meanwhile (a fresh layer at 0.8 x capacity on 8 emulated cores refused
        // 1-13 requests in each of its first quarter-seconds, `tower-peers`).
        self.departures_per_s = Some(ewma(self.departures_per_s, self.cfg.base.alpha, d));
        self.period_dequeues = 0;
        self.period_start = Some(now);
        self.dry_last_period = self.period_min_queued == 0;
        self.period_min_queued = self.queued;
    }
}

impl AdmissionController for TunedResponseTimeController {
    fn name(&self) -> &'static str {
        "response_time_tuned"
    }

    fn admit(&mut self, now: Time, _class: u8) -> Result<(), RejectReason> {
        self.roll(now);
        if (self.queued as f64) < self.queue_limit() {
            self.queued += 1;
            Ok(())
        } else {
            self.rejections += 1;
            Err(RejectReason::QueueFull)
        }
    }

    fn undo_admit(&mut self, _now: Time, _class: u8) {
        self.queued = self.queued.saturating_sub(1);
    }

    fn on_dequeue(&mut self, now: Time, queued: Duration) -> bool {
        self.dequeued(now);
        let drop = self.drop_threshold().is_some_and(|limit| queued > limit);
        self.dropped += u64::from(drop);
        self.drops_since_outer += u64::from(drop);
        drop
    }

    fn on_complete(&mut self, now: Time, _class: u8, response: Duration, _sojourn: Duration) {
        if let Some(p) = self.window.push(now, response.as_secs_f64()) {
            self.observe(now, p);
        }
    }

    fn on_served(&mut self, now: Time, _class: u8, beyond_wait: Duration) {
        let x = beyond_wait.as_secs_f64();
        self.service_s = Some(ewma(self.service_s, SERVICE_ALPHA, x));
        if let Some(p) = self.rest.push(now, x) {
            self.leave_room(p);
        }
    }

    fn tick(&mut self, now: Time) {
        self.roll(now);
        if let Some(p) = self.rest.poll(now) {
            self.leave_room(p);
        }
    }

    fn state(&self) -> Vec<(&'static str, f64)> {
        vec![
            ("queue_limit", self.queue_limit()),
            ("queued", self.queued as f64),
            ("departures_per_s", self.departures_per_s()),
            ("service_s", self.service_s.unwrap_or(0.0)),
            ("wait_budget_s", self.wait_s),
            ("last_p_s", self.last_p_s),
            ("dropped", self.dropped as f64),
            (
                "drop_threshold_s",
                self.drop_threshold().map_or(0.0, |d| d.as_secs_f64()),
            ),
        ]
    }
}

#[cfg(test)]
#[path = "tuned_tests.rs"]
mod tests;
