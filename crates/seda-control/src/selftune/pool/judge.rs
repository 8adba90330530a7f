//! The search's first half: what the period that just ended says of the last move, read
//! without changing anything ([`SelfTuningPool::judge`]). [`SelfTuningPool::decide`] (in
//! `search.rs`) turns the [`Judgement`] into a step and the search's next phase.

use super::super::arx::ArxEstimate;
use super::SelfTuningPool;
use super::config::{BISECT_Z, MIN_MARGINAL_GAIN, NOISE_Z, PROPORTIONAL_SHARE, SCALING_SHARE};
use super::search::Phase;

/// What the search reads of the period that just ended.
#[derive(Debug, Clone, Copy)]
pub(super) struct Period {
    /// Threads the pool ran with.
    pub threads: usize,
    /// Its throughput, events/s.
    pub y: f64,
    /// The period before's threads and throughput (`None` in the first period).
    pub last: Option<(usize, f64)>,
    /// The model's fit, if it has one.
    pub fit: Option<ArxEstimate>,
    /// The capacity's relative change since the period before, where both were saturated.
    pub capacity_moved: Option<f64>,
    /// Whether the runtime measured this period's capacity (its busy threads).
    pub busy_measured: bool,
    /// Whether this period's reading went into the pool's levels.
    pub read: bool,
}

/// What the period says (see [`SelfTuningPool::judge`]).
#[derive(Debug, Clone, Copy)]
pub(super) enum Judgement {
    /// The first period: no move to judge, the law's step stands.
    FirstPeriod,
    /// Every later period.
    Judged {
        /// Whether a bisection still waits for its midpoint to be read (the pool is at the
        /// midpoint and this period gave no reading).
        bisection_waits: bool,
        /// What the pool should do about it.
        verdict: Verdict,
    },
}

/// What a judged period says the pool should do.
#[derive(Debug, Clone, Copy)]
pub(super) enum Verdict {
    /// The midpoint of a partial gain has been read, and the size the addition reached reads
    /// above it: the gain per thread shrinks gradually, and the pool returns to `left`.
    ClimbOn {
        /// The size the addition reached.
        left: usize,
    },
    /// The readings at this size show a peak: hold it.
    AtPeak,
    /// A peak's readings left the window with the pool still there: probe one thread up.
    ReprobePeak,
    /// Held at a ceiling with a size one thread either side that the window has not read:
    /// probe it (-1 or +1), so that the readings can show whether this size is a peak.
    ProbeNeighbour(i64),
    /// A neighbour probed has not been read yet, or only in the period after the removal that
    /// reached it (whose removed thread still finishes its calls): stay there.
    AwaitProbe,
    /// A probe one thread below the ceiling read better than the ceiling: the ceiling moves
    /// down to it.
    BelowCeilingWon,
    /// The last move judged by what it earned.
    Move(MoveJudgement),
}

/// What the last move earned (see [`SelfTuningPool::judge`]).
#[derive(Debug, Clone, Copy)]
pub(super) struct MoveJudgement {
    /// The threads the last move added (negative: removed).
    pub dn: i64,
    /// Half the move, at least one thread: what undoing half of it takes back.
    pub half: i64,
    /// An addition did not pay.
    pub unpaid: bool,
    /// A removal gained throughput (or the line says threads cost it).
    pub gained: bool,
    /// The capacity rose past its noise with the move.
    pub confirmed: bool,
    /// Where the capacity showed that an addition neither scaled nor fell (a plateau, or a
    /// peak between the two sizes), the most threads that may have paid.
    pub plateau_ceiling: Option<usize>,
    /// Where the capacity fell with an addition, the size it left, which read better.
    pub fell_from: Option<usize>,
    /// An addition past the last ceiling scaled: that ceiling is forgotten.
    pub scaled_past_last_ceiling: bool,
    /// The line through the last periods falls with more threads at this size.
    pub falls: bool,
    /// The capacity's change was measured (both periods saturated).
    pub capacity_read: bool,
    /// The model says an added thread pays ([`MIN_MARGINAL_GAIN`] of the throughput per
    /// thread).
    pub model_pays: bool,
}

impl SelfTuningPool {
    /// Reads the period `p` against the search's phase and the pool's memory, changing
    /// nothing. In order: a bisection's midpoint, once read, against the size it left; a peak
    /// at this size; then the last move by its change of throughput, its change of capacity
    /// and the line through the last periods.
    pub(super) fn judge(&self, p: &Period) -> Judgement {
        let Some((n0, y0)) = p.last else {
            return Judgement::FirstPeriod;
        };
        let threads = p.threads;
        let dn = threads as i64 - n0 as i64;
        let reading_sd = if p.busy_measured {
            self.noise.capacity_reading_sd(p.y)
        } else {
            self.noise.steady_sd()
        };
        let (bisection_waits, climb_on) = self.read_bisection(p, reading_sd);
        let probed = match self.search.phase {
            Phase::Probing { from } if from != threads => Some(from),
            _ => None,
        };
        let verdict = if let Some(left) = climb_on {
            Verdict::ClimbOn { left }
        } else if let Some(from) = probed {
            // The period after a removal still carries the removed thread's calls, and its
            // reading (where the busy threads let it be read) is the larger pool's.
            if !p.read || dn < 0 {
                Verdict::AwaitProbe
            } else if !self.levels.better(threads, from, reading_sd) {
                Verdict::ProbeNeighbour(from as i64 - threads as i64)
            } else if threads < from {
                Verdict::BelowCeilingWon
            } else {
                Verdict::Move(self.judge_move(p, (n0, y0), reading_sd))
            }
        } else if self.levels.peak_at(threads, reading_sd) {
            // A size whose readings show a peak is held; when they have left the window, one
            // thread up probes it again (the law's step would leave it by `max_step`).
            Verdict::AtPeak
        } else if self.search.phase.held_at_peak() && dn == 0 {
            Verdict::ReprobePeak
        } else if let Some(d) = self.unread_neighbour(p) {
            Verdict::ProbeNeighbour(d)
        } else {
            Verdict::Move(self.judge_move(p, (n0, y0), reading_sd))
        };
        Judgement::Judged {
            bisection_waits,
            verdict,
        }
    }

    /// Where the pool is at its ceiling, this period read, and the window holds no reading
    /// one thread below it (first) or above it, the step to that size. A ceiling comes from a
    /// jump of several threads that fell or plateaued, so the sizes between the jump's ends
    /// were never read, and the peak may be one of them: on `pool-control`'s contended plant
    /// (a peak at 12) pools went from 9 to 13 threads, read a fall at 17 and held 13 (0.92 of
    /// the peak), or went 9, 13, back to 11 and held it (0.92), until the ceiling left the
    /// window. Each neighbour is read once per window; the readings then hold a peak
    /// ([`Verdict::AtPeak`]) or judge the probe as any move.
    fn unread_neighbour(&self, p: &Period) -> Option<i64> {
        let threads = p.threads;
        if !p.read || !self.search.ceiling_at(threads) {
            return None;
        }
        let unread = |n: usize| self.levels.mean_at(n).is_none();
        // Below, only where the readings rose less than in proportion from the nearest size
        // read to this one: where they rose in proportion, no size between is a peak.
        let scaled_to_here = self
            .levels
            .mean_at(threads)
            .zip(self.levels.nearest_below(threads))
            .is_some_and(|(here, (n, y))| {
                let proportional = threads as f64 / n as f64 - 1.0;
                here / y - 1.0 >= PROPORTIONAL_SHARE * proportional
            });
        if threads > self.config.min_threads && unread(threads - 1) && !scaled_to_here {
            Some(-1)
        } else if threads < self.config.max_threads && unread(threads + 1) {
            Some(1)
        } else {
            None
        }
    }

    /// The midpoint of an addition that gained less than its share, once read: where the size
    /// left reads above it, the addition paid (a plant whose gain per thread shrinks
    /// gradually, as a database's does), and the pool returns there free to climb on
    /// (`Some(left)`); otherwise a peak may lie between the sizes, and it holds the midpoint.
    /// Also whether the bisection still waits for a reading.
    fn read_bisection(&self, p: &Period, reading_sd: f64) -> (bool, Option<usize>) {
        let Phase::Bisecting { mid, left, .. } = self.search.phase else {
            return (false, None);
        };
        if p.threads != mid {
            return (false, None);
        }
        if !p.read {
            return (true, None);
        }
        let share = (left - mid) as f64 / mid as f64 * SCALING_SHARE / 2.0;
        let scaled = self
            .levels
            .mean_at(left)
            .zip(self.levels.mean_at(mid))
            .is_some_and(|(l, m)| l > m * (1.0 + share));
        let climb_on = scaled && self.levels.gain(left, mid, reading_sd) > BISECT_Z;
        (false, climb_on.then_some(left))
    }

    /// The last move judged by what it earned (see the module docs).
    /// `(n0, y0)` is the period before's threads and throughput.
    fn judge_move(&self, p: &Period, (n0, y0): (usize, f64), reading_sd: f64) -> MoveJudgement {
        let (threads, y) = (p.threads, p.y);
        let dn = threads as i64 - n0 as i64;
        let dy = y - y0;
        let per_thread = y0 / n0.max(1) as f64;
        let half = (dn.abs() / 2).max(1);
        let paid = |n: i64| MIN_MARGINAL_GAIN * n as f64 * per_thread;
        // A change within the noise counts only where a fit agrees: a gain per thread fitted
        // over many periods averages the noise out, but only as far as its standard error says
        // (past a gentle knee, a fit over noisy periods reads a thread as paying about half
        // the time). The line through the last periods near this pool size
        // ([`Levels`](super::super::levels::Levels)) decides where the pool has moved enough
        // to draw one; the ARX model, which remembers the climb that fitted it, until then.
        // Where the line does not say that threads pay, an addition must show half the noise's
        // margin of gain to be kept: on a plateau a change within the noise is a coin toss, and
        // keeping additions on heads and undoing them by halves on tails walks pools up to
        // their bound.
        let margin = NOISE_Z * self.noise.of_change();
        let paying = MIN_MARGINAL_GAIN * per_thread;
        let line = self.levels.slope(threads);
        let line_pays = match line {
            Some(l) => l.pays(paying),
            None => p.fit.is_some_and(|m| {
                let error = self
                    .noise
                    .model_var()
                    .and_then(|v| self.model.gain_std_error(v))
                    .unwrap_or(0.0);
                m.b - error >= paying
            }),
        };
        let plateau = line.is_some() && !line_pays;
        // An addition after which the throughput fell past the steady noise never paid. The
        // margin above is learned from all the model's errors, and the first move past a knee,
        // which a model fitted on the climb cannot foresee, inflates it.
        let steady_margin = NOISE_Z * self.noise.steady_of_change();
        let fell = dn > 0 && dy < -steady_margin;
        let mut unpaid = fell
            || if plateau {
                dy < paid(dn) + margin / 2.0
            } else {
                dy < paid(dn) - margin || (dy < paid(dn) && !line_pays)
            };
        let mut gained = dy > paid(-dn) + margin || (dy > paid(-dn) && !line_pays);
        // The window's mean readings at the two sizes, where they differ past their noise,
        // judge the move too.
        unpaid |= dn > 0 && self.levels.better(n0, threads, reading_sd);
        let capacity = self.judge_capacity(p, n0, dn, half);
        unpaid |= capacity.unpaid;
        match capacity.gained {
            Some(g) => gained = g,
            // Where busy threads are measured but the capacity of either period was not, no
            // removal counts as paid: threads removed as the arrivals rose look paid for by
            // the throughput.
            None if p.busy_measured => gained = false,
            None => {}
        }
        // Where the line falls with more threads, beyond its standard error, the pool is past
        // its knee whatever the last period said: it gives threads back. One period's change
        // past a gentle knee is within the noise.
        let falls = line.is_some_and(|l| l.falls_at(threads));
        unpaid |= falls;
        gained |= falls || (dn < 0 && self.levels.better(threads, n0, reading_sd));
        MoveJudgement {
            dn,
            half,
            unpaid,
            gained,
            confirmed: capacity.gained == Some(true),
            plateau_ceiling: capacity.plateau_ceiling,
            fell_from: capacity.fell_from,
            scaled_past_last_ceiling: capacity.scaled_past_last_ceiling,
            falls,
            capacity_read: p.capacity_moved.is_some(),
            model_pays: p
                .fit
                .is_some_and(|m| m.b >= MIN_MARGINAL_GAIN * y / threads.max(1) as f64),
        }
    }

    /// The move judged by the pool's capacity, where the runtime measures its busy threads:
    /// it follows the service time, a mean over the period's requests, not the arrivals,
    /// which the throughput's change confounds with the move (past a knee under Poisson
    /// arrivals that change is within its noise, and a fit made while the arrivals rose with
    /// the threads says that threads pay). So an addition is undone when either measure says
    /// it did not pay, and a removal repeated only when the capacity says it paid.
    fn judge_capacity(&self, p: &Period, n0: usize, dn: i64, half: i64) -> CapacityJudgement {
        let mut judged = CapacityJudgement::default();
        let Some(m) = p.capacity_moved else {
            return judged;
        };
        let threads = p.threads;
        let share = MIN_MARGINAL_GAIN * dn.abs() as f64 / n0.max(1) as f64;
        let margin = NOISE_Z * self.noise.capacity_sd();
        let proportional = dn as f64 / n0.max(1) as f64;
        judged.unpaid = m < share - margin;
        if dn > 0 && m < -margin {
            judged.fell_from = Some(n0);
        }
        // Judged only where the noise is measured and the two outcomes (the capacity flat, or
        // up in proportion) lie two margins apart: on a noisy plant one thread added reads
        // flat by chance. A gain under half the proportional one is the knee's even where it
        // passes the noise: read as scaling, it grows the pool geometrically past the knee.
        // Nor is one thread judged: the period after it is added carries its start.
        let decidable = dn >= 2 && self.noise.capacity_measured() && proportional >= 2.0 * margin;
        let last_ceiling = self.search.last_ceiling;
        if decidable && m > -margin && m < SCALING_SHARE * proportional {
            let paid = (dn as f64 * (m / proportional).max(0.0)).floor() as usize;
            let c = (n0 + paid).max(threads - half as usize);
            judged.plateau_ceiling = Some(last_ceiling.map_or(c, |last| c.min(last)));
        } else if dn > 0
            && m > SCALING_SHARE * proportional + margin
            && last_ceiling.is_some_and(|last| threads > last)
        {
            judged.scaled_past_last_ceiling = true;
        }
        judged.gained = Some(m > share + margin);
        judged
    }
}

/// What the capacity's change says of the last move (see
/// [`SelfTuningPool::judge_capacity`]).
#[derive(Debug, Clone, Copy, Default)]
struct CapacityJudgement {
    /// The capacity gained less than the share an added thread must earn.
    unpaid: bool,
    /// Whether it gained past its noise (`None` where it was not read).
    gained: Option<bool>,
    /// See [`MoveJudgement::plateau_ceiling`].
    plateau_ceiling: Option<usize>,
    /// See [`MoveJudgement::fell_from`].
    fell_from: Option<usize>,
    /// See [`MoveJudgement::scaled_past_last_ceiling`].
    scaled_past_last_ceiling: bool,
}
