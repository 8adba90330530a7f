//! The self-tuning pool (FAIR07 Sections 4.2.2 and 4.3.4): a stage sizes its own thread pool by
//! feedback control toward a throughput target, on a model it fits online.
//!
//! Every control period the caller reports the period's throughput and the threads the pool
//! ran with; the controller feeds the [`ArxModel`], re-derives the gains of its [`Law`] from
//! the new fit, and returns the thread count for the next period, within `[min, max]` and
//! moving at most `max_step` threads at a time.
//!
//! Until the model has a fit (it needs periods with different thread counts), the controller
//! probes: one thread toward the target each period. When the fit is lost (a plant that stops
//! answering thread changes, `b` near zero) it probes again rather than divide by nothing.
//!
//! The ARX model is linear in the thread change, so it cannot see an interior optimum: asked
//! for more than the plant can give (a target above its peak, or a plant where threads contend
//! past a knee), the law keeps adding threads and the throughput falls. So while the throughput
//! is below the target ([`SEEK_BAND`]) the pool checks each move against what the last one
//! earned ([`MIN_MARGINAL_GAIN`]): additions grow at most geometrically while they pay; when
//! adding threads did not pay (or removing them gained throughput) it undoes half the last move,
//! which bisects toward the knee. On a noisy plant one period's change says little: it counts
//! against a move on its own only past [`NOISE_Z`] times the noise of a period-to-period change
//! (measured by the model's one-step errors), and within it only where a fitted gain per
//! thread agrees: a least-squares line through the last periods near the pool's size
//! ([`Levels`]), or the ARX model until there is one. Where that line does not say threads pay,
//! an addition must show its gain; where it falls with more threads, the pool gives threads
//! back. The mean readings of the sizes the window holds judge moves as well: a size whose
//! mean passes those of the sizes one thread either side, past their noise, is a peak the
//! pool holds (at a sharp knee the line and the noise margin undo the addition that reaches
//! it, see [`Levels::peak_at`]), until
//! those readings leave the window and it probes one thread up again; an addition to a size
//! that reads below the one it left is undone, and a removal to one that reads above it is
//! repeated. Pinned at `max_threads` it probes one thread down so the check has a move to read;
//! after a period without a move it takes the law's step only if the model says a thread pays,
//! and otherwise probes one thread.
//!
//! Where the runtime reports the pool's busy threads, the pool reads its capacity (threads over
//! the mean service time, [`PeriodSample::capacity_per_s`]), which follows the service time and
//! not the arrivals. Between periods in which every thread was busy, it judges each move by the
//! capacity too: an addition that did not raise it is undone, a removal is repeated only if it
//! raised it, and an addition it confirms may grow geometrically. An addition that left it
//! flat, where the noise lets a flat reading be told from one in proportion to the threads
//! ([`SCALING_SHARE`]), marks a plateau: the pool returns to the most threads that may have
//! paid and adds none past them while its window remembers, unless the size it left reads
//! above that midpoint once it is read there ([`BISECT_Z`]): then the gain per thread is
//! shrinking gradually, as a database's does, and the pool returns to it and climbs on. An
//! addition after which it fell returns the pool to the size it left, with the same memory.
//! And it holds each step to what the target needs at the period's service time (Little's
//! law; [`hold_to_need`]).

use super::arx::{ArxEstimate, ArxModel, DEFAULT_FORGETTING};
use super::design::{Gains, Law, PoleSpec, gains};
use super::levels::{Levels, WINDOW};

/// Default most threads added or removed in one period.
pub const DEFAULT_MAX_STEP: usize = 4;

/// An added thread must raise throughput by at least this share of the average per-thread
/// throughput, or the pool is past its knee (see the module docs).
pub const MIN_MARGINAL_GAIN: f64 = 0.1;

/// How many standard deviations of the period-to-period noise a move's change of throughput
/// must pass to count against the move on its own. On `pool-control`'s PostgreSQL plant (the
/// model's one-step error about 8% of the throughput) a thread's marginal gain is smaller than
/// a period's noise, and judging each addition by one period undid additions by chance: P took
/// 21 periods to settle a step and reached 0.86 of the best fixed pool.
pub const NOISE_Z: f64 = 2.0;

/// Weight of the latest squared one-step error in the noise estimate (an exponential
/// average over about ten periods).
const NOISE_WEIGHT: f64 = 0.1;

/// Below its knee a saturated pool's capacity grows in proportion to its threads (its service
/// time does not change); on a plateau it stays flat. An addition whose capacity grew by less
/// than this share of the proportional gain is judged a plateau's (or a knee's within it):
/// the midpoint between the two. Judged only against a fall past the noise, every addition
/// past `pool-control`'s io plant's 24 channels was kept, and pools ended with 33-41 threads.
pub const SCALING_SHARE: f64 = 0.5;

/// The noise of the pool's capacity (see [`PeriodSample::capacity_per_s`]) from one period to
/// the next, as a share of it, until periods without a move have measured it.
pub const CAPACITY_NOISE: f64 = 0.025;

/// Standard errors by which the size an addition reached must read above the midpoint the pool
/// went back to (see [`SelfTuningPool::seek`]), besides a quarter of its proportional gain
/// ([`SCALING_SHARE`] / 2), for the pool to return to it. Half an error alone let a
/// plateau's flat readings return pools past it (on a replay of `pool-control`'s io plant, to
/// 30 threads of 24 on one seed of 20), where the window's few readings at a size happened
/// to spread little.
pub const BISECT_Z: f64 = 1.0;

/// A pool with fewer than `(1 - IDLE_SHARE) x threads` busy has idle threads.
pub const IDLE_SHARE: f64 = 0.1;

/// Several threads removed at once leave the target this much headroom at the period's
/// service time: Poisson arrivals at 80% of a pool's capacity already queue for a few service
/// times.
pub const HEADROOM: f64 = 0.25;

/// Within `HOLD_BAND x target` of the target the pool holds its size: the throughput of a
/// period is that close to the target by chance, and the P law's pre-compensator (`1 / a`,
/// with a fitted `a` under 1) asks for `(1 - a) x target / b` more threads even at the target.
/// On a stage whose throughput follows its arrivals (more threads cannot raise it, so the fit
/// gives a small `b`), that drift added 2 to 4 threads a period with the throughput at its
/// target: in `thesis-open`'s first phase 6 threads grew to 36, which thrashed the backend
/// when the load doubled.
pub const HOLD_BAND: f64 = 0.02;

/// Below `(1 - SEEK_BAND) x target` the pool checks each move against the last (see the
/// module docs); within it the law alone acts.
pub const SEEK_BAND: f64 = 0.05;

/// Settings of a [`SelfTuningPool`].
#[derive(Debug, Clone, PartialEq)]
pub struct SelfTuningConfig {
    /// The control law.
    pub law: Law,
    /// Fewest threads.
    pub min_threads: usize,
    /// Most threads.
    pub max_threads: usize,
    /// Most threads changed in one period.
    pub max_step: usize,
    /// The model's forgetting factor.
    pub forgetting: f64,
    /// Desired settling time and overshoot (PI and PD).
    pub poles: PoleSpec,
}

impl Default for SelfTuningConfig {
    fn default() -> Self {
        SelfTuningConfig {
            law: Law::P,
            min_threads: 1,
            max_threads: 64,
            max_step: DEFAULT_MAX_STEP,
            forgetting: DEFAULT_FORGETTING,
            poles: PoleSpec::default(),
        }
    }
}

/// What the pool controller reads each period.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PeriodSample {
    /// Completions per second over the period that just ended.
    pub throughput_per_s: f64,
    /// Threads the pool ran with during that period.
    pub threads: usize,
    /// The throughput the stage should reach (from global control), events/s.
    pub target_per_s: f64,
    /// Threads running a handler, on average over the period (the handlers' summed run time
    /// over the period's length); `None` where it is not measured.
    pub busy_threads: Option<f64>,
}

impl PeriodSample {
    /// Whether nearly every thread was busy ([`IDLE_SHARE`]): only then does the capacity
    /// measure what the pool's threads can do together. With idle threads it extrapolates a
    /// service time measured at fewer callers, and a backend that slows with its callers
    /// serves less than that: in `dynamic-groups` moves judged so took a pool to 20 threads,
    /// eight past the backend's knee.
    fn saturated(&self) -> bool {
        self.busy_threads
            .is_some_and(|b| b >= (1.0 - IDLE_SHARE) * self.threads as f64)
    }

    /// What the pool could serve at this period's service time, events/s: `threads / mean
    /// service time` (by Little's law, `threads x throughput / busy threads`). It does not
    /// follow the arrivals, as the throughput does, and a plant that thrashes past a knee shows
    /// it falling as threads are added. `None` in a period with more threads busy than the
    /// pool's size: threads above it were still finishing their work, at the old size's
    /// service time (in `pool-control`'s quick form, removing 2 of 18 threads past a knee read
    /// as a loss of 19%).
    fn capacity_per_s(&self) -> Option<f64> {
        let busy = self
            .busy_threads
            .filter(|b| b.is_finite() && *b > 1e-3 && *b <= self.threads as f64 + 0.5)?;
        let c = self.threads as f64 * self.throughput_per_s / busy;
        (c.is_finite() && c > 0.0).then_some(c)
    }
}

/// A pool sizer on an online ARX model (see the module docs).
#[derive(Debug, Clone)]
pub struct SelfTuningPool {
    config: SelfTuningConfig,
    model: ArxModel,
    prev_threads: Option<usize>,
    prev_y: Option<f64>,
    prev_capacity: Option<f64>,
    integral: f64,
    prev_error: f64,
    gains: Option<Gains>,
    /// Mean squared one-step error of the model, (events/s)^2: the plant's noise.
    noise_var: Option<f64>,
    /// The same with each error held to three of its standard deviations: the noise without
    /// the model's misses (see [`Self::seek`]'s falls).
    steady_noise_var: Option<f64>,
    /// Mean squared relative change of the capacity over periods without a move.
    capacity_noise_var: Option<f64>,
    /// The last periods' throughput (or capacity) against threads.
    levels: Levels,
    /// Whether the last period's seek held a size its readings showed to be a peak.
    held_at_peak: bool,
    /// The most threads the pool may add up to after a plateau reading, and the periods it is
    /// remembered for (see [`Self::seek`]).
    ceiling: Option<(usize, usize)>,
    /// The last ceiling, kept after the window forgets it until an addition scales: a probe
    /// past it that does not scale returns to it rather than to a higher bisection point.
    last_ceiling: Option<usize>,
    /// Whether the last period's seek undid an addition whose capacity fell (see
    /// [`Self::seek`]).
    undid_fall: bool,
    /// After an addition that gained less than its proportional share, the midpoint the pool
    /// went back to and the size it left, until the midpoint has been read (see
    /// [`Self::seek`]).
    bisecting: Option<(usize, usize)>,
    /// Whether this period's reading went into [`Self::levels`].
    read: bool,
}

impl SelfTuningPool {
    /// A controller with `config` (bounds made consistent: `1 <= min <= max`, `max_step >= 1`).
    pub fn new(mut config: SelfTuningConfig) -> Self {
        config.min_threads = config.min_threads.max(1);
        config.max_threads = config.max_threads.max(config.min_threads);
        config.max_step = config.max_step.max(1);
        SelfTuningPool {
            model: ArxModel::new(config.forgetting),
            config,
            prev_threads: None,
            prev_y: None,
            prev_capacity: None,
            integral: 0.0,
            prev_error: 0.0,
            gains: None,
            noise_var: None,
            steady_noise_var: None,
            capacity_noise_var: None,
            levels: Levels::default(),
            held_at_peak: false,
            ceiling: None,
            last_ceiling: None,
            undid_fall: false,
            bisecting: None,
            read: false,
        }
    }

    /// Feeds one period and returns the thread count for the next one.
    pub fn update(&mut self, s: PeriodSample) -> usize {
        let threads = s
            .threads
            .clamp(self.config.min_threads, self.config.max_threads);
        let du = self.prev_threads.map_or(0.0, |p| threads as f64 - p as f64);
        let last_move = self.prev_threads.zip(self.prev_y);
        let sample = PeriodSample { threads, ..s };
        let (capacity, saturated) = (sample.capacity_per_s(), sample.saturated());
        // What the threads can do together: measured only where every thread was busy.
        let full_capacity = capacity.filter(|_| saturated);
        let capacity_moved = self.learn_capacity(du, full_capacity);
        self.prev_threads = Some(threads);
        let y = if s.throughput_per_s.is_finite() {
            s.throughput_per_s.max(0.0)
        } else {
            0.0
        };
        let target = if s.target_per_s.is_finite() {
            s.target_per_s.max(0.0)
        } else {
            y
        };
        self.learn_noise(du, y);
        // The line is drawn through what the threads can do: the capacity where every thread
        // was busy (a pool with idle threads serves its arrivals), the throughput where busy
        // threads are not measured.
        let reading = match (s.busy_threads, full_capacity) {
            (None, _) => Some(y),
            (Some(_), c) => c,
        };
        self.read = reading.is_some();
        if let Some(r) = reading {
            self.levels.push(threads, r);
        }
        let fit = self.model.observe(du, y);
        self.gains = fit.and_then(|m| gains(self.config.law, m, self.config.poles));
        let step = match self.gains {
            Some(g) => self.control(g, y, target),
            None => probe(y, target),
        };
        self.prev_y = Some(y);
        let max_step = self.config.max_step as f64;
        // A step the law wanted but may not take (past `max_step`, or overruled by the seek)
        // is not integrated (anti-windup): while a large step climbs a few threads at a time,
        // PI would otherwise store the whole climb's error and overshoot by it.
        let wanted = step.round() as i64;
        let mut step = step.clamp(-max_step, max_step).round() as i64;
        // P never adds threads above its target nor removes them below it, and no law does on
        // a fit with `b <= 0`. P's only move against the error's sign is the pre-compensator's
        // drift (see [`HOLD_BAND`]); PI and PD damp with such moves, but a fit with `b < 0`
        // (adding threads lowers throughput, true only past a knee, and fitted by chance when
        // the throughput follows the arrivals) inverts every law: in `thesis-open` such a fit
        // (`a` 1.42, `b` -21) added threads at 161/s for a target of 121/s. Below the target
        // the seek decides whether removing threads pays. A forbidden step becomes a probe of
        // one thread toward the target, not a hold: without a move the model never corrects
        // its `b`, and holding kept a pool of 12 threads at a p90 of 0.04 s for a target of
        // 0.48 s in `follow-target`.
        let inverted = fit.is_none_or(|m| m.b <= 0.0);
        if (self.config.law == Law::P || inverted) && (step as f64) * (target - y) < 0.0 {
            step = probe(y, target) as i64;
        }
        if y < (1.0 - SEEK_BAND) * target {
            let measured = capacity.is_some();
            step = self
                .seek(step, threads, y, last_move, fit, (capacity_moved, measured))
                .clamp(-(max_step as i64), max_step as i64);
        }
        if let Some(c) = capacity {
            step = hold_to_need(step, threads, y, target, c, saturated);
        }
        // Above the target, a throughput that rose past its noise since the last period is
        // arrivals rising, which a target measured over the same period has not yet caught:
        // no threads go. When `thesis-open`'s arrivals doubled, P gave 3 of 9 threads back in
        // the two periods before global control's target followed, and the dropper shed 5% of
        // the run's requests.
        let rising = last_move.is_some_and(|(_, y0)| y - y0 > NOISE_Z * self.noise_of_change());
        if step < 0 && y > target && rising {
            step = 0;
        }
        if (y - target).abs() <= HOLD_BAND * target {
            step = 0;
        }
        let clamped = step != wanted;
        let next = (threads as i64 + step).clamp(
            self.config.min_threads as i64,
            self.config.max_threads as i64,
        );
        let next = next as usize;
        if clamped || (next == threads && step != 0) {
            // Saturated at the step or at a bound, or holding: stop integrating (anti-windup).
            self.integral -= self.gains.map_or(0.0, |g| g.ki) * self.prev_error;
        }
        next
    }

    /// Below the target, the law's step checked against what the last move earned (see the
    /// module docs): additions grow geometrically while they pay (at most, or at least where
    /// the capacity confirms them); a move that did not pay is half undone; the law's gain is
    /// not trusted to remove many threads while more throughput is wanted.
    fn seek(
        &mut self,
        step: i64,
        threads: usize,
        y: f64,
        last: Option<(usize, f64)>,
        fit: Option<ArxEstimate>,
        (capacity_moved, busy_measured): (Option<f64>, bool),
    ) -> i64 {
        let Some((n0, y0)) = last else {
            return step;
        };
        let dn = threads as i64 - n0 as i64;
        let undid_fall = std::mem::take(&mut self.undid_fall);
        // The ceiling a plateau showed lasts as long as the window's readings.
        self.ceiling = self
            .ceiling
            .filter(|c| c.1 > 1)
            .map(|(c, left)| (c, left - 1));
        let reading_sd = if busy_measured {
            (self.capacity_noise_var.unwrap_or(CAPACITY_NOISE.powi(2)) / 2.0).sqrt() * y
        } else {
            self.steady_noise_var.map_or(0.0, f64::sqrt)
        };
        // The midpoint of an addition that gained less than its share, once read: where the
        // size left reads above it, the addition paid (a plant whose gain per thread shrinks
        // gradually, as a database's does), and the pool returns there free to climb on;
        // otherwise a peak may lie between the sizes, and it holds the midpoint.
        if let Some((mid, left)) = self.bisecting {
            if threads != mid {
                self.bisecting = None;
            } else if self.read {
                self.bisecting = None;
                let share = (left - mid) as f64 / mid as f64 * SCALING_SHARE / 2.0;
                let scaled = self
                    .levels
                    .mean_at(left)
                    .zip(self.levels.mean_at(mid))
                    .is_some_and(|(l, m)| l > m * (1.0 + share));
                if scaled && self.levels.gain(left, mid, reading_sd) > BISECT_Z {
                    self.ceiling = None;
                    self.last_ceiling = None;
                    return left as i64 - mid as i64;
                }
            }
        }
        // A size whose readings show a peak is held; when they have left the window, one
        // thread up probes it again (the law's step would leave it by `max_step`).
        let was_held = self.held_at_peak;
        self.held_at_peak = self.levels.peak_at(threads, reading_sd);
        if self.held_at_peak {
            return 0;
        }
        if was_held && dn == 0 {
            return 1;
        }
        let dy = y - y0;
        let per_thread = y0 / n0.max(1) as f64;
        let half = (dn.abs() / 2).max(1);
        let paid = |n: i64| MIN_MARGINAL_GAIN * n as f64 * per_thread;
        // A change within the noise counts only where a fit agrees: a gain per thread fitted
        // over many periods averages the noise out, but only as far as its standard error says
        // (past a gentle knee, a fit over noisy periods reads a thread as paying about half
        // the time). The line through the last periods near this pool size ([`Levels`])
        // decides where the pool has moved enough to draw one; the ARX model, which remembers
        // the climb that fitted it, until then. Where the line does not say that threads pay,
        // an addition must show half the noise's margin of gain to be kept: on a plateau a
        // change within the noise is a coin toss, and keeping additions on heads and undoing
        // them by halves on tails walked pools up to their bound.
        let margin = NOISE_Z * self.noise_of_change();
        let paying = MIN_MARGINAL_GAIN * per_thread;
        let line = self.levels.slope(threads);
        let model_pays = match line {
            Some(l) => l.pays(paying),
            None => fit.is_some_and(|m| {
                let error = self
                    .noise_var
                    .and_then(|v| self.model.gain_std_error(v))
                    .unwrap_or(0.0);
                m.b - error >= paying
            }),
        };
        let plateau = line.is_some() && !model_pays;
        // An addition after which the throughput fell past the steady noise never paid. The
        // margin above is learned from all the model's errors, and the first move past a knee,
        // which a model fitted on the climb cannot foresee, inflates it: judged by it, the
        // simulator's contention plant fell from 1,308/s to 1,214/s going from 13 to 21
        // threads, and PD went on to 32 and 45 threads (0.81 of the best fixed pool).
        let steady_margin = NOISE_Z * change_sd(self.steady_noise_var);
        let fell = dn > 0 && dy < -steady_margin;
        let mut unpaid = fell
            || if plateau {
                dy < paid(dn) + margin / 2.0
            } else {
                dy < paid(dn) - margin || (dy < paid(dn) && !model_pays)
            };
        let mut gained = dy > paid(-dn) + margin || (dy > paid(-dn) && !model_pays);
        // Where the runtime measures its busy threads, the pool's capacity judges a move too:
        // it follows the service time, a mean over the period's requests, not the arrivals,
        // which the throughput's change confounds with the move. Past a knee under Poisson
        // arrivals that change is within its noise, and a fit made while the arrivals rose
        // with the threads says that threads pay: in `thesis-open` pools ran to 18 threads,
        // six past the backend's knee. So an addition is undone when either measure says it
        // did not pay, and a removal repeated only when the capacity says it paid (threads
        // removed as the arrivals doubled looked paid for by the throughput; so where busy
        // threads are measured but the capacity of either period was not, no removal is).
        // The window's mean readings at the two sizes, where they differ past their noise,
        // judge the move too.
        unpaid |= dn > 0 && self.levels.better(n0, threads, reading_sd);
        let mut confirmed = false;
        // Where the capacity showed that an addition neither scaled nor fell (a plateau, or a
        // peak between the two sizes), the most threads that may have paid.
        let mut plateau_ceiling = None;
        // Where the capacity fell with an addition, the size it left, which read better.
        let mut fell_from = None;
        if let Some(m) = capacity_moved {
            let share = MIN_MARGINAL_GAIN * dn.abs() as f64 / n0.max(1) as f64;
            let margin = NOISE_Z * self.capacity_noise_var.map_or(CAPACITY_NOISE, f64::sqrt);
            let proportional = dn as f64 / n0.max(1) as f64;
            unpaid |= m < share - margin;
            if dn > 0 && m < -margin {
                fell_from = Some(n0);
            }
            // Judged only where the noise is measured and the two outcomes (the capacity flat,
            // or up in proportion) lie two margins apart: on the PostgreSQL plant
            // (8% noise) one thread added to 8 read flat by chance, and the pool held 8 threads
            // through a phase that asked for twice what they served (0.71 of the best fixed).
            // A gain under half the proportional one is the knee's even where it passes the
            // noise: read as scaling, such a gain (14% of 40%, under 3% noise) grew the pool
            // geometrically past the contended plant's knee. Nor is one thread judged: the
            // period after it is added carries its start, and in one CI run one thread added
            // to 19 on the io plant read half its gain, and PD held 19 threads through the
            // last phase (0.79 of the best fixed pool).
            let decidable =
                dn >= 2 && self.capacity_noise_var.is_some() && proportional >= 2.0 * margin;
            if decidable && m > -margin && m < SCALING_SHARE * proportional {
                let paid = (dn as f64 * (m / proportional).max(0.0)).floor() as usize;
                let c = (n0 + paid).max(threads - half as usize);
                plateau_ceiling = Some(self.last_ceiling.map_or(c, |last| c.min(last)));
            } else if dn > 0
                && m > SCALING_SHARE * proportional + margin
                && self.last_ceiling.is_some_and(|last| threads > last)
            {
                self.last_ceiling = None;
            }
            gained = m > share + margin;
            confirmed = gained;
        } else if busy_measured {
            gained = false;
        }
        // Where the line falls with more threads, beyond its standard error, the pool is past
        // its knee whatever the last period said: it gives threads back. One period's change
        // past a gentle knee is within the noise, and judged by it alone PI held 28 threads
        // on the PostgreSQL plant where 20 served a fifth more.
        let falls = line.is_some_and(|l| l.falls_at(threads));
        unpaid |= falls;
        gained |= falls || (dn < 0 && self.levels.better(threads, n0, reading_sd));
        // An addition that paid is followed by the law's step, held to grow at most
        // geometrically; a move that did not pay is half undone. Where the capacity rose past
        // its noise with an addition, the pool grows geometrically (the law's gain may come
        // from a fit the arrivals inflated, and its step, `max_step` far below an unreachable
        // target, took the contended plant from its knee of 12 threads to 16 every dozen
        // periods, 0.92 of the best fixed pool), and where it fell with a removal, the
        // pool re-adds all it removed, each up to what the target needs (held in
        // [`Self::update`]): growing one thread a period, after a removal as the arrivals
        // doubled, took four periods to follow `thesis-open`'s second phase.
        //
        // Where the capacity showed that an addition neither scaled nor fell, the pool goes
        // back to the most threads that may have paid (at least half the addition is undone:
        // a peak may lie between the two sizes), holds there, and adds no threads past it
        // while the window remembers. Half undos, each followed by re-adding the removed
        // threads, walked the io plant's pools up its plateau two threads at a time.
        //
        // Where the capacity fell with an addition, the pool returns to the size it left and
        // adds no threads past it while the window remembers; the period after, whose capacity
        // still carries the removed threads' calls (or reads the gain of leaving the worse
        // size), does not judge the return. Half undos took `pool-control`'s contended plant
        // from 16 threads to 14, whose removal was read in a period without a capacity and
        // undone by a thread: P ended between 14 and 15 threads, 0.83 of the best fixed pool.
        let step = if let Some(c) = plateau_ceiling {
            self.ceiling = Some((c, WINDOW));
            self.last_ceiling = Some(c);
            if c < threads {
                self.bisecting = Some((c, threads));
            }
            c as i64 - threads as i64
        } else if let Some(c) = fell_from {
            self.ceiling = Some((c, WINDOW));
            self.undid_fall = true;
            c as i64 - threads as i64
        } else if dn < 0 && undid_fall && self.ceiling.is_some_and(|c| c.0 == threads) {
            0
        } else if dn > 0 {
            if unpaid {
                -half
            } else if confirmed {
                2 * dn
            } else {
                step.clamp(1, 2 * dn)
            }
        } else if dn < 0 {
            if gained {
                -half
            } else if self.ceiling.is_some_and(|c| c.0 == threads) {
                0
            } else if capacity_moved.is_some() {
                step.clamp(1, -dn)
            } else {
                step.clamp(1, half)
            }
        } else if threads >= self.config.max_threads || falls {
            -1 // pinned at the top, or past the knee: probe so the next period has a move to read
        } else if capacity_moved.is_some()
            || fit.is_some_and(|m| m.b >= MIN_MARGINAL_GAIN * y / threads.max(1) as f64)
        {
            // The law's step, which [`Self::update`] holds to what the measured capacity says
            // the target needs, where it is measured.
            step.max(-1)
        } else {
            // No move to judge and a model that says threads barely pay (`b` near zero, a fit
            // made while the throughput followed the arrivals): probe one thread. Trusting the
            // law's step there took a pool past the knee (14 to 18 threads, `b` 0.26/s per
            // thread at 18/s per thread, in `thesis-open`), where the throughput fell by a fifth.
            step.clamp(-1, 1)
        };
        match self.ceiling {
            Some((c, _)) if step > 0 => step.min(c as i64 - threads as i64).max(0),
            _ => step,
        }
    }

    /// Remembers this period's capacity (`None` where it says nothing of the threads) and
    /// returns its relative change since the last period (`None` unless both were measured); a
    /// change without a move is noise, and is learned.
    fn learn_capacity(&mut self, du: f64, capacity: Option<f64>) -> Option<f64> {
        let moved = capacity.zip(self.prev_capacity).map(|(c, c0)| c / c0 - 1.0);
        if du == 0.0
            && let Some(m) = moved
        {
            self.capacity_noise_var = Some(average(self.capacity_noise_var, m * m));
        }
        self.prev_capacity = capacity;
        moved
    }

    /// Updates the noise estimate with the error of the model's prediction of `y` (made
    /// before `y` is fed to it).
    fn learn_noise(&mut self, du: f64, y: f64) {
        let (Some(m), Some(y_prev)) = (self.model.estimate(), self.prev_y) else {
            return;
        };
        let e = y - m.predict(y_prev, du);
        if e.is_finite() {
            let e2 = e * e;
            self.noise_var = Some(average(self.noise_var, e2));
            let held = self.steady_noise_var.map_or(e2, |v| e2.min(9.0 * v));
            self.steady_noise_var = Some(average(self.steady_noise_var, held));
        }
    }

    /// Standard deviation of the difference of two periods' throughput from noise alone
    /// (`sqrt(2)` times a period's), events/s; 0 until the model has predicted.
    fn noise_of_change(&self) -> f64 {
        change_sd(self.noise_var)
    }

    fn control(&mut self, g: Gains, y: f64, target: f64) -> f64 {
        let e = g.precomp * target - y;
        self.integral += g.ki * e;
        let u = g.kp * e + self.integral + g.kd * (e - self.prev_error);
        self.prev_error = e;
        if u.is_finite() { u } else { 0.0 }
    }

    /// The model's current fit.
    pub fn model(&self) -> Option<ArxEstimate> {
        self.model.estimate()
    }

    /// The gains in use, once the model has a fit.
    pub fn gains(&self) -> Option<Gains> {
        self.gains
    }

    /// The settings.
    pub fn config(&self) -> &SelfTuningConfig {
        &self.config
    }
}

/// `var` (the first sample where there is none yet) moved toward `x` by [`NOISE_WEIGHT`]: an
/// exponential average over about ten periods.
fn average(var: Option<f64>, x: f64) -> f64 {
    var.map_or(x, |v| v + NOISE_WEIGHT * (x - v))
}

/// The standard deviation of the difference of two periods with variance `var` each (0 while
/// unknown).
fn change_sd(var: Option<f64>) -> f64 {
    var.map_or(0.0, |v| (2.0 * v).sqrt())
}

/// `step` held to what the target needs at a capacity of `c` (at the period's service time,
/// by Little's law). No addition past it by more than a thread (a thread's probe: a pool on a
/// busy machine spends time between its handlers, so its busy threads understate what it
/// uses, and its capacity overstates; holding additions there to the capacity kept P on
/// `pool-control`'s PostgreSQL plant at 7 threads, 0.74 of the best fixed pool). Above the
/// target, no removal to below it with [`HEADROOM`] from a pool with idle threads (whose
/// throughput is its arrivals, above its target by chance), nor of several threads at once
/// from a saturated one, where one thread a period may go (a queue waits, and the target
/// decides how long). The law's gain comes from a fit that may have followed the arrivals
/// (`b` near zero), and then its step is `max_step` threads whatever the error: in
/// `thesis-open` such steps took pools serving 135/s from 8 threads to 4 and 6 (5.4 busy),
/// and the dropper shed the queue that built. Undoing a move past a knee below the target is
/// the seek's.
fn hold_to_need(step: i64, threads: usize, y: f64, target: f64, c: f64, saturated: bool) -> i64 {
    let n = threads as i64;
    let needs = |headroom: f64| (target * headroom * threads as f64 / c).ceil() as i64;
    if step > 0 {
        step.min((needs(1.0) - n).max(1))
    } else if step < 0 && y > target && (step < -1 || !saturated) {
        let keep = needs(1.0 + HEADROOM) - n;
        step.max(keep.min(if saturated { -1 } else { 0 }))
    } else {
        step
    }
}

/// One thread toward the target, to excite the model while it has no fit.
fn probe(y: f64, target: f64) -> f64 {
    if y < target * (1.0 - HOLD_BAND) {
        1.0
    } else if y > target * (1.0 + HOLD_BAND) {
        -1.0
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A plant whose throughput is `per_thread * n` up to `knee` threads, then falls by
    /// `loss` per extra thread (contention): an interior optimum at `knee`.
    fn plant(n: usize, per_thread: f64, knee: usize, loss: f64) -> f64 {
        if n <= knee {
            per_thread * n as f64
        } else {
            per_thread * knee as f64 - loss * (n - knee) as f64
        }
    }

    /// A pool of `law` (at most `max_threads`) run `periods` periods from `start` threads:
    /// period `k` reads `read(threads)` against `target(k)`. Returns each period's threads and
    /// reading.
    fn drive(
        law: Law,
        max_threads: usize,
        start: usize,
        periods: usize,
        mut read: impl FnMut(usize) -> f64,
        target: impl Fn(usize) -> f64,
    ) -> Vec<(usize, f64)> {
        drive_measured(
            law,
            max_threads,
            start,
            periods,
            |n| (read(n), None),
            target,
        )
    }

    /// [`drive`] where `read(threads)` gives the throughput and, where the runtime measures
    /// them, the busy threads.
    fn drive_measured(
        law: Law,
        max_threads: usize,
        start: usize,
        periods: usize,
        mut read: impl FnMut(usize) -> (f64, Option<f64>),
        target: impl Fn(usize) -> f64,
    ) -> Vec<(usize, f64)> {
        let mut c = SelfTuningPool::new(SelfTuningConfig {
            law,
            max_threads,
            ..Default::default()
        });
        let mut n = start;
        (0..periods)
            .map(|k| {
                let (y, busy_threads) = read(n);
                let period = (n, y);
                n = c.update(PeriodSample {
                    throughput_per_s: y,
                    threads: n,
                    target_per_s: target(k),
                    busy_threads,
                });
                period
            })
            .collect()
    }

    fn follow(law: Law, target: f64) -> (Vec<usize>, Vec<f64>) {
        drive(law, 40, 2, 40, |n| plant(n, 25.0, 30, 10.0), |_| target)
            .into_iter()
            .unzip()
    }

    /// A plant like the lab's PostgreSQL one: throughput `3400 x (1 - exp(-n / 12))` events/s
    /// (concave, no knee), each period's reading off by a normal error of 8% (seeded).
    struct NoisyPlant(u64);

    impl NoisyPlant {
        fn read(&mut self, n: usize) -> f64 {
            let y = 3400.0 * (1.0 - (-(n as f64) / 12.0).exp());
            y * (1.0 + 0.08 * self.normal())
        }

        fn uniform(&mut self) -> f64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 >> 11) as f64 / (1u64 << 53) as f64
        }

        fn normal(&mut self) -> f64 {
            let (u, v) = (self.uniform().max(1e-12), self.uniform());
            (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
        }
    }

    /// P on [`NoisyPlant`] from 8 threads: 20 periods at a target of 1,360/s, then 30 at
    /// 2,720/s (19 threads). Returns the periods after the step until a 3-period mean first
    /// comes within 10% of the target, and the mean throughput of the last 15 periods.
    fn noisy_step(seed: u64) -> (usize, f64) {
        let mut plant = NoisyPlant(seed);
        let target = |k| if k < 20 { 1360.0 } else { 2720.0 };
        let ys: Vec<f64> = drive(Law::P, 64, 8, 50, |n| plant.read(n), target)
            .into_iter()
            .map(|(_, y)| y)
            .collect();
        let step = &ys[20..];
        let settle = (2..step.len())
            .find(|&k| (step[k - 2..=k].iter().sum::<f64>() / 3.0 - 2720.0).abs() <= 272.0)
            .unwrap_or(step.len());
        (settle, step[15..].iter().sum::<f64>() / 15.0)
    }

    /// On a plant whose marginal gain per thread is smaller than a period's noise, P still
    /// climbs a step within a few periods and holds its target on average: a single period's
    /// fall does not undo an addition the model says pays.
    #[test]
    fn p_climbs_a_step_on_a_noisy_plant() {
        let runs: Vec<(usize, f64)> = (1..=20).map(noisy_step).collect();
        let mut settles: Vec<usize> = runs.iter().map(|r| r.0).collect();
        settles.sort_unstable();
        let errors: Vec<f64> = runs.iter().map(|r| (r.1 - 2720.0).abs() / 2720.0).collect();
        // Judged by one period each, additions were undone by chance: settling took 9 to 15
        // periods in 5 of these 20 runs, and 3 held their target off by 5-7%.
        assert!(settles[18] <= 7, "settle periods {settles:?}");
        // One seed (5) holds 17 to 18 threads, 9% short: where a thread pays 2% of the
        // throughput under 8% noise, the last ten periods' line cannot tell this plant from
        // a plateau, on which additions must show their gain (see `Levels`).
        let within = errors.iter().filter(|e| **e <= 0.05).count();
        assert!(
            within >= 19 && errors.iter().all(|e| *e <= 0.1),
            "steady errors {errors:.3?}"
        );
    }

    /// A plant like the lab's PostgreSQL one on another day: its best pool 12 threads, each
    /// thread past it losing 1% of the peak, 10% noise, and a target 1.5 x its peak. Trusting
    /// the fitted gain without its standard error, every law ran to its bound of 48 threads
    /// (0.65 of the peak) in some of these runs, as PI and PD did in the lab; with it, up to
    /// 36 threads (0.76 of the peak), where the ARX model's fit on the climb said that threads
    /// pay; with the line through the last periods near the pool (`Levels`), at most 20
    /// (19.9, seed 16; the rest at most 15).
    #[test]
    fn no_law_runs_to_its_bound_past_a_gentle_knee_under_noise() {
        let peak = |n: usize| {
            let n = n as f64;
            let rise = |n: f64| 1.0 - (-n / 5.0).exp();
            if n <= 12.0 {
                1170.0 * rise(n) / rise(12.0)
            } else {
                1170.0 * (1.0 - 0.01 * (n - 12.0))
            }
        };
        for law in Law::ALL {
            for seed in 1..=20 {
                let mut noise = NoisyPlant(seed);
                let read = |n| peak(n) * (1.0 + 0.1 * noise.normal());
                let periods = drive(law, 48, 8, 80, read, |_| 1.5 * 1170.0);
                let tail = &periods[50..];
                let threads = tail.iter().map(|p| p.0).sum::<usize>() as f64 / tail.len() as f64;
                assert!(
                    threads <= 20.0 && peak(threads.round() as usize) >= 0.9 * 1170.0,
                    "{law:?}, seed {seed}: {threads:.1} threads"
                );
            }
        }
    }

    /// A plant flat past 12 threads (`1400 x (1 - exp(-n / 4))`, 8% noise, like the lab's
    /// PostgreSQL plant on the day P ran it to 48 threads), asked first for just more than it
    /// gives, then for nearly twice that: no law keeps adding threads that serve nothing. With
    /// the ARX model judging additions within the noise, the median run ended phase two with 34
    /// to 40 threads.
    #[test]
    fn no_law_fills_its_bound_on_a_plateau() {
        let flat = |n: usize| 1400.0 * (1.0 - (-(n as f64) / 4.0).exp());
        for law in Law::ALL {
            let mut ends: Vec<f64> = (1..=20)
                .map(|seed| {
                    let mut noise = NoisyPlant(seed);
                    let read = |n| flat(n) * (1.0 + 0.08 * noise.normal());
                    let target = |k| if k < 20 { 1408.0 } else { 2640.0 };
                    let tail = drive(law, 48, 5, 60, read, target).split_off(40);
                    tail.iter().map(|p| p.0 as f64).sum::<f64>() / tail.len() as f64
                })
                .collect();
            ends.sort_by(f64::total_cmp);
            assert!(ends[10] <= 20.0 && ends[19] <= 36.0, "{law:?}: {ends:.1?}");
        }
    }

    /// Asked for more than a noisy plant with a knee gives (16 threads; each past it costs 5%
    /// of the peak; 5% noise), P finds the knee's throughput and does not run to its bound.
    /// A seed's last 20 periods may hold one probe of the knee from below and back (seed 11:
    /// from 12 threads to 23 and back to 18, 0.85 of the peak).
    #[test]
    fn p_stops_near_the_knee_of_a_noisy_plant() {
        for seed in 1..=20 {
            let mut noise = NoisyPlant(seed);
            let read = |n| plant(n, 100.0, 16, 80.0).max(0.0) * (1.0 + 0.05 * noise.normal());
            let periods = drive(Law::P, 64, 8, 60, read, |_| 2400.0);
            let tail = &periods[40..];
            let mean = |f: fn(&(usize, f64)) -> f64| tail.iter().map(f).sum::<f64>() / 20.0;
            let (threads, y) = (mean(|t| t.0 as f64), mean(|t| t.1));
            assert!(
                y >= 0.83 * 1600.0 && threads <= 24.0,
                "seed {seed}: {threads} threads, {y}/s"
            );
        }
    }

    #[test]
    fn every_law_reaches_a_reachable_target() {
        for law in Law::ALL {
            let (ns, ys) = follow(law, 400.0);
            let tail = &ys[25..];
            assert!(
                tail.iter().all(|y| (y - 400.0).abs() <= 0.05 * 400.0),
                "{law:?}: threads {ns:?} throughput {ys:?}"
            );
        }
    }

    /// PI climbing a large step `max_step` threads at a time does not store the climb's error
    /// and overshoot by it (before the anti-windup, the lab's full run overshot by 0.63).
    #[test]
    fn pi_does_not_wind_up_while_its_step_is_clamped() {
        let (ns, _) = follow(Law::Pi, 400.0);
        let end = ns[ns.len() - 1];
        let peak = ns.iter().copied().max().unwrap_or(0);
        assert!(peak as f64 <= 1.2 * end as f64, "threads {ns:?}");
    }

    /// Periods of `thesis-open`'s first phase, as the runtime fed them (threads, throughput,
    /// target): the throughput follows the arrivals, and the fits after them have `b < 0` or
    /// `a` well under 1. Neither P nor a law on a fit with `b < 0` may add threads to a stage
    /// above its target (P added 3 at 116.5/s for 113.1/s), and within [`HOLD_BAND`] of it the
    /// pool holds (P added 3 at 105.3/s for 107.2/s).
    #[test]
    fn no_law_adds_threads_above_the_target() {
        let trace = [
            (6, 123.3, 231.2),
            (12, 161.0, 121.3),
            (14, 119.1, 125.0),
            (16, 116.5, 113.1),
            (16, 139.1, 137.1),
            (16, 105.3, 107.2),
        ];
        for law in Law::ALL {
            let mut c = SelfTuningPool::new(SelfTuningConfig {
                law,
                max_threads: 48,
                ..Default::default()
            });
            for (threads, y, target) in trace {
                let next = c.update(PeriodSample {
                    throughput_per_s: y,
                    threads,
                    target_per_s: target,
                    busy_threads: None,
                });
                if (y - target).abs() <= HOLD_BAND * target {
                    assert_eq!(next, threads, "{law:?} at {y}/s for {target}/s");
                }
                assert!(
                    y <= target || next <= threads,
                    "{law:?}: {threads} -> {next} threads at {y}/s for {target}/s ({:?})",
                    c.model()
                );
            }
        }
    }

    /// A pool of `law` (up to 48 threads) fed 20 periods of `base` to `base + 2` threads, each
    /// period on its target, where a thread moves the throughput by `per_thread` from
    /// `at_zero`: the model it fits has `b` near `per_thread`.
    fn fitted(law: Law, base: usize, at_zero: f64, per_thread: f64) -> SelfTuningPool {
        let mut c = SelfTuningPool::new(SelfTuningConfig {
            law,
            max_threads: 48,
            ..Default::default()
        });
        for k in 0..20 {
            let threads = base + k % 3;
            let y = at_zero + per_thread * threads as f64;
            c.update(PeriodSample {
                throughput_per_s: y,
                threads,
                target_per_s: y,
                busy_threads: None,
            });
        }
        c
    }

    /// A pool whose model was fitted while its throughput followed the arrivals (each thread
    /// moved it by 0.3/s), then asked for far more than it serves after a period without a
    /// move: with nothing to judge the move by, it probes one thread. In `thesis-open` the law's
    /// step on such a fit (`b` 0.26/s per thread) took a pool already past the backend's knee
    /// from 14 to 18 threads, and the throughput fell from 252/s to 206/s.
    #[test]
    fn after_a_period_without_a_move_a_flat_model_only_probes() {
        for law in Law::ALL {
            let mut c = fitted(law, 13, 250.0, 0.3);
            let sample = |y, target| PeriodSample {
                throughput_per_s: y,
                threads: 14,
                target_per_s: target,
                busy_threads: None,
            };
            c.update(sample(254.0, 256.0));
            let next = c.update(sample(254.0, 400.0));
            assert!(
                next <= 15,
                "{law:?}: 14 -> {next} threads ({:?})",
                c.model()
            );
        }
    }

    /// A pool whose fit has `b < 0` (fitted by chance while its throughput followed the
    /// arrivals: here each added thread lowered it), then serving half again its target, gives
    /// threads back. Every law's step is positive there, against the error's sign; the sign
    /// check held the pool, the model learns nothing without a move, and in `follow-target` a
    /// pool of 12 threads stayed so for 25 s with its p90 at a tenth of the target.
    #[test]
    fn a_pool_above_its_target_gives_threads_back() {
        for law in Law::ALL {
            let mut c = fitted(law, 11, 200.0, -4.0);
            let mut threads = 12;
            for _ in 0..4 {
                threads = c.update(PeriodSample {
                    throughput_per_s: 150.0,
                    threads,
                    target_per_s: 100.0,
                    busy_threads: None,
                });
            }
            assert!(
                threads < 12,
                "{law:?}: 12 -> {threads} threads ({:?})",
                c.model()
            );
        }
    }

    /// `thesis-open`'s plant, one 0.5 s period at a time: arrivals at `rate`/s (off by a normal
    /// error of the square root of their count, as Poisson counts are) queue for threads of a
    /// 40 ms backend that thrashes past 12 callers at once (`n / 0.04`/s up to 12 threads, then
    /// `12^2 / (0.04 n)`), and the dropper sheds what the threads cannot serve within 160 ms.
    struct OpenPlant {
        rng: NoisyPlant,
        queue: f64,
        dropped: f64,
    }

    impl OpenPlant {
        /// One period at `n` threads: the throughput, global control's target (the period's
        /// arrivals, and the queue drained over a second), per second, and the busy threads.
        fn period(&mut self, n: usize, rate: f64) -> (f64, f64, f64) {
            const SECS: f64 = 0.5;
            let expected = rate * SECS;
            let arrived = (expected + expected.sqrt() * self.rng.normal()).max(0.0);
            let n = n as f64;
            let service_s = 0.04 * (n / 12.0).max(1.0).powi(2);
            let capacity = n / service_s;
            let served = (self.queue + arrived).min(capacity * SECS);
            self.queue += arrived - served;
            let within_dropper = capacity * 0.16;
            if self.queue > within_dropper {
                self.dropped += self.queue - within_dropper;
                self.queue = within_dropper;
            }
            let y = served / SECS;
            (y, arrived / SECS + self.queue, y * service_s)
        }
    }

    /// P on [`OpenPlant`] from 4 threads, as `thesis-open` runs it: 16 periods of 135/s
    /// arrivals (5.4 threads busy), then 8 of 270/s (10.8 threads; 13 give 277/s, 14 only
    /// 257/s), its busy threads measured as the runtime measures them. Global control's target
    /// here includes the backlog, so it passes the plant's peak and the pool probes past the
    /// knee. Over 20 seeds, judging moves by the throughput (before the pool read its busy
    /// threads) shed over 4% of the arrivals in 12 seeds, 12% in the worst, and ran to 20
    /// threads; judged by the capacity too, 2 seeds shed 4.2% and 5.6%, and none passes 16.
    #[test]
    fn p_follows_open_arrivals_that_double_without_thrashing() {
        let mut runs = Vec::new();
        for seed in 1..=20 {
            let mut plant = OpenPlant {
                rng: NoisyPlant(seed * 7919),
                queue: 0.0,
                dropped: 0.0,
            };
            let mut c = SelfTuningPool::new(SelfTuningConfig {
                max_threads: 48,
                ..Default::default()
            });
            let (mut n, mut arrived) = (4, 0.0);
            let mut trace = Vec::new();
            for k in 0..24 {
                let rate = if k < 16 { 135.0 } else { 270.0 };
                arrived += rate * 0.5;
                let (y, target, busy) = plant.period(n, rate);
                trace.push(n);
                n = c.update(PeriodSample {
                    throughput_per_s: y,
                    threads: n,
                    target_per_s: target,
                    busy_threads: Some(busy),
                });
            }
            runs.push((plant.dropped / arrived, trace));
        }
        let shed = runs.iter().filter(|(d, _)| *d > 0.04).count();
        assert!(
            shed <= 2
                && runs
                    .iter()
                    .all(|(d, t)| *d <= 0.06 && t.iter().all(|&n| n <= 16)),
            "{shed} seeds shed over 4%: {runs:?}"
        );
    }

    /// `pool-control`'s contended plant: a saturated pool (every thread busy) on the backend
    /// of [`OpenPlant`], each period's reading off by 3%, asked for 1.5 x its peak of 300/s.
    /// Every law, judging its moves by the measured capacity, stays near the knee: over 20
    /// seeds the last 12 periods average at most 14 threads and at least 90% of the peak.
    #[test]
    fn every_law_finds_the_knee_of_a_saturated_pool_by_its_capacity() {
        for law in Law::ALL {
            for seed in 1..=20 {
                let mut noise = NoisyPlant(seed * 104_729);
                let read = |n: usize| {
                    let n = n as f64;
                    let service_s = 0.04 * (n / 12.0).max(1.0).powi(2);
                    let y = n / service_s * (1.0 + 0.03 * noise.normal());
                    (y, Some(n))
                };
                let trace = drive_measured(law, 48, 8, 30, read, |_| 450.0);
                let last = &trace[18..];
                let threads = last.iter().map(|p| p.0 as f64).sum::<f64>() / last.len() as f64;
                let y = last.iter().map(|p| p.1).sum::<f64>() / last.len() as f64;
                assert!(
                    threads <= 14.0 && y >= 270.0,
                    "{law:?} seed {seed}: {threads:.1} threads, {y:.0}/s: {trace:?}"
                );
            }
        }
    }

    /// The same plant read with 1% noise (the lab's contended plant read 299/s in each of six
    /// 30 s readings), run 60 periods: the pool holds the knee its readings show. Before it
    /// compared the mean readings of the sizes it had visited, the seek judged the addition
    /// from 11 to 12 threads by the line and an inflated noise margin, and every law
    /// alternated between 11 and 12 (0.949 of the peak
    /// over 20 seeds, as in the lab's 0.94-0.95); over 20 seeds it now averages 0.98.
    #[test]
    fn every_law_holds_the_knee_its_readings_show() {
        for law in Law::ALL {
            let shares: Vec<f64> = (1..=20)
                .map(|seed| {
                    let mut noise = NoisyPlant(seed * 104_729);
                    let read = |n: usize| {
                        let n = n as f64;
                        let service_s = 0.04 * (n / 12.0).max(1.0).powi(2);
                        (n / service_s * (1.0 + 0.01 * noise.normal()), Some(n))
                    };
                    let trace = drive_measured(law, 48, 8, 60, read, |_| 450.0);
                    trace[20..].iter().map(|p| p.1).sum::<f64>() / 40.0 / 300.0
                })
                .collect();
            let mean = shares.iter().sum::<f64>() / shares.len() as f64;
            assert!(
                mean >= 0.97 && shares.iter().all(|&s| s >= 0.95),
                "{law:?}: mean {mean:.3} of the peak: {shares:.3?}"
            );
        }
    }

    /// `pool-control`'s quick contended plant as the runtime reads it: its best pool 12
    /// threads (600/s, each thread past it slowing every call), every thread busy, each
    /// reading off by 3%, and the period after threads are removed unread (the removed threads
    /// still finish their calls, so more are busy than the pool holds: no capacity). From 10
    /// threads, 8 periods at 0.8 x the peak, then 8 asking for 1.5 x. Returns the mean
    /// throughput and threads of the last 4 periods, as the lab measures them.
    fn quick_contended(law: Law, seed: u64) -> (f64, f64) {
        let mut noise = NoisyPlant(seed * 15_485_863);
        let mut c = SelfTuningPool::new(SelfTuningConfig {
            law,
            max_threads: 48,
            ..Default::default()
        });
        let (mut n, mut before) = (10, 10);
        let mut trace = Vec::new();
        for k in 0..16 {
            let x = n as f64;
            let service_s = 0.02 * (x / 12.0).max(1.0).powf(1.5);
            let y = x / service_s * (1.0 + 0.03 * noise.normal());
            trace.push((n, y));
            let busy = x.max(before as f64);
            before = n;
            n = c.update(PeriodSample {
                throughput_per_s: y,
                threads: n,
                target_per_s: if k < 8 { 480.0 } else { 900.0 },
                busy_threads: Some(busy),
            });
        }
        let last = &trace[12..];
        (
            last.iter().map(|p| p.1).sum::<f64>() / 4.0,
            last.iter().map(|p| p.0 as f64).sum::<f64>() / 4.0,
        )
    }

    /// In one quick `pool-control` run of five, P added 4 threads to 12 at the contended
    /// plant's knee, read the capacity fall at 16, and ended its last phase between 14 and
    /// 15 threads (0.83 of the best fixed pool): it undid half the addition, and the removal,
    /// read in a period without a capacity, was undone by a thread. On this plant P ended
    /// under 0.95 of the peak in 8 seeds of 20, PI in 11 and PD in 13: besides those half
    /// undos, an addition of 4 threads to 10 that gained 14% of the capacity where scaling
    /// would gain 40% was taken for scaling (its gain was past the noise) and grown by 4
    /// more. Now an addition that gains less than half its proportional share is read as the
    /// knee's, and one after which the capacity fell is undone whole: P ends within 5% of the
    /// peak in every seed, PI and PD in all but at most 4 (PD's worst 0.84).
    #[test]
    fn every_law_returns_to_the_knee_after_overshooting_it() {
        for law in Law::ALL {
            let ends: Vec<(f64, f64)> = (1..=20).map(|seed| quick_contended(law, seed)).collect();
            let low = ends.iter().filter(|(y, _)| *y < 0.95 * 600.0).count();
            let allowed = if law == Law::P { 0 } else { 4 };
            assert!(low <= allowed, "{law:?}: {low} under 0.95: {ends:.1?}");
        }
    }

    /// `pool-control`'s io plant: a backend with 24 channels, 25/s per channel, every thread
    /// busy (waiting for a channel counts), each reading off by 1%, asked for 0.8 x its peak
    /// and then for twice it. Past 24 threads an addition leaves the capacity flat; judged
    /// only against a fall past the noise, every such addition was kept, and P's last 20
    /// periods averaged 40.5 threads on the first seed. Now, over 20 seeds, the median holds
    /// at most 1.1 x 24 threads and none more than 1.25 x (an addition from 23 threads to 27
    /// that reads within the noise of scaling is kept, and half of the next is undone: 29).
    #[test]
    fn no_law_runs_past_a_plateau_its_capacity_shows() {
        for law in Law::ALL {
            let mut ends: Vec<f64> = (1..=20)
                .map(|seed| {
                    let mut noise = NoisyPlant(seed * 7_919);
                    let read = |n: usize| {
                        let y = 25.0 * n.min(24) as f64 * (1.0 + 0.01 * noise.normal());
                        (y, Some(n as f64))
                    };
                    let target = |k| if k < 20 { 480.0 } else { 1200.0 };
                    let last = drive_measured(law, 48, 8, 60, read, target).split_off(40);
                    let y = last.iter().map(|p| p.1).sum::<f64>() / last.len() as f64;
                    assert!(y >= 0.95 * 600.0, "{law:?} seed {seed}: {y:.0}/s");
                    last.iter().map(|p| p.0 as f64).sum::<f64>() / last.len() as f64
                })
                .collect();
            ends.sort_by(f64::total_cmp);
            assert!(
                ends[10] <= 1.1 * 24.0 && ends[19] <= 1.25 * 24.0,
                "{law:?}: {ends:.1?}"
            );
        }
    }

    #[test]
    fn stays_within_bounds_and_step() {
        let (ns, _) = follow(Law::P, 10_000.0);
        assert!(ns.iter().all(|&n| (1..=40).contains(&n)));
        assert!(
            ns.windows(2)
                .all(|w| w[0].abs_diff(w[1]) <= DEFAULT_MAX_STEP)
        );
    }

    #[test]
    fn nonsense_input_does_not_move_out_of_bounds() {
        let mut c = SelfTuningPool::new(SelfTuningConfig::default());
        let n = c.update(PeriodSample {
            throughput_per_s: f64::NAN,
            threads: 1000,
            target_per_s: f64::INFINITY,
            busy_threads: None,
        });
        assert!((1..=64).contains(&n));
    }

    /// `pool-control`'s full-form PostgreSQL plant as its sweep read it on 2026-12-04 (4
    /// threads 705/s, 8 1,442, 12 2,120, 16 2,366, 20 2,651, 24 2,820, 32 2,420, 48 2,376;
    /// linear between), every thread busy, each reading off by 3%, run through the lab's
    /// phases (20, 30 and 30 periods at 0.4, 0.8 and 1.5 x the best) from 8 threads. Returns
    /// the last 15 periods' mean throughput as a share of the best, as the lab measures it.
    fn full_postgres(law: Law, seed: u64) -> f64 {
        const SWEEP: [(f64, f64); 8] = [
            (4.0, 705.0),
            (8.0, 1442.0),
            (12.0, 2120.0),
            (16.0, 2366.0),
            (20.0, 2651.0),
            (24.0, 2820.0),
            (32.0, 2420.0),
            (48.0, 2376.0),
        ];
        let curve = |n: f64| {
            let n = n.clamp(4.0, 48.0);
            let i = SWEEP.iter().rposition(|p| p.0 <= n).unwrap_or(0).min(6);
            let ((n0, y0), (n1, y1)) = (SWEEP[i], SWEEP[i + 1]);
            y0 + (y1 - y0) * (n - n0) / (n1 - n0)
        };
        let mut noise = NoisyPlant(seed * 15_485_863);
        let read = |n: usize| {
            let y = curve(n as f64) * (1.0 + 0.03 * noise.normal());
            (y, Some(n as f64))
        };
        let target = |k| 2820.0 * [0.4, 0.8, 1.5][(k >= 20) as usize + (k >= 50) as usize];
        let last = drive_measured(law, 64, 8, 80, read, target).split_off(65);
        last.iter().map(|p| p.1).sum::<f64>() / last.len() as f64 / 2820.0
    }

    /// On that plant an addition past 12 threads gains a third to a half of its proportional
    /// share, and each was read as a plateau: every law stopped at 16 of the best 24 threads
    /// (P 0.881 of the best fixed pool in the lab, 0.915 over these 20 seeds). Read again at
    /// the midpoint, the size the addition reached reads above it and the pool climbs on,
    /// while the contended plant's knee (whose midpoint reads above both ends) still holds.
    #[test]
    fn every_law_climbs_a_plant_whose_gain_per_thread_shrinks() {
        for law in Law::ALL {
            let shares: Vec<f64> = (1..=20).map(|seed| full_postgres(law, seed)).collect();
            let mean = shares.iter().sum::<f64>() / shares.len() as f64;
            assert!(mean >= 0.95, "{law:?}: mean {mean:.3}: {shares:.2?}");
        }
    }
}
