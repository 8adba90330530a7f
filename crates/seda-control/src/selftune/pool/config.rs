//! The self-tuning pool's settings, its tuning constants, and what it reads each period.
//!
//! The runs that chose each constant are in `docs/lab-notebook.md` (`pool-control`, "the runs
//! behind the self-tuning pool's rules").

use super::super::arx::DEFAULT_FORGETTING;
use super::super::design::{Law, PoleSpec};

/// Default most threads added or removed in one period.
pub const DEFAULT_MAX_STEP: usize = 4;

/// An added thread must raise throughput by at least this share of the average per-thread
/// throughput, or the pool is past its knee (see the module docs).
pub const MIN_MARGINAL_GAIN: f64 = 0.1;

/// How many standard deviations of the period-to-period noise a move's change of throughput
/// must pass to count against the move on its own. On a noisy plant a thread's marginal gain
/// is smaller than a period's noise, and judging each addition by one period undoes additions
/// by chance.
pub const NOISE_Z: f64 = 2.0;

/// Below its knee a saturated pool's capacity grows in proportion to its threads (its service
/// time does not change); on a plateau it stays flat. An addition whose capacity grew by less
/// than this share of the proportional gain is judged a plateau's (or a knee's within it):
/// the midpoint between the two. Judged only against a fall past the noise, additions past a
/// plateau are kept, and the pool runs far past it.
pub const SCALING_SHARE: f64 = 0.5;

/// The share of a proportional gain from the nearest smaller size read above which a ceiling's
/// size is taken to be still on the plant's rising slope: the pool does not probe one thread
/// below it. On the contended plant (a peak at 12) an addition from 9 to 13 reads 0.5 of its
/// proportional gain, one from 10 to 12 reads 1.0 (0.8-1.2 with readings off by 3%).
pub const PROPORTIONAL_SHARE: f64 = 0.75;

/// The noise of the pool's capacity (see [`PeriodSample::capacity_per_s`]) from one period to
/// the next, as a share of it, until periods without a move have measured it.
pub const CAPACITY_NOISE: f64 = 0.025;

/// Standard errors by which the size an addition reached must read above the midpoint the pool
/// went back to, besides a quarter of its proportional gain ([`SCALING_SHARE`] / 2), for the
/// pool to return to it. Half an error alone let a plateau's flat readings return pools past
/// it, where the window's few readings at a size happened to spread little.
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
/// gives a small `b`), that drift adds threads every period with the throughput at its target,
/// and the extra threads thrash the backend when the load rises.
pub const HOLD_BAND: f64 = 0.02;

/// Below `(1 - SEEK_BAND) x target` the pool checks each move against the last (see the
/// module docs); within it the law alone acts.
pub const SEEK_BAND: f64 = 0.05;

/// Settings of a [`SelfTuningPool`](super::SelfTuningPool).
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
    /// serves less than that: moves judged so take a pool past the backend's knee.
    pub(super) fn saturated(&self) -> bool {
        self.busy_threads
            .is_some_and(|b| b >= (1.0 - IDLE_SHARE) * self.threads as f64)
    }

    /// What the pool could serve at this period's service time, events/s: `threads / mean
    /// service time` (by Little's law, `threads x throughput / busy threads`). It does not
    /// follow the arrivals, as the throughput does, and a plant that thrashes past a knee shows
    /// it falling as threads are added. `None` in a period with more threads busy than the
    /// pool's size: threads above it were still finishing their work, at the old size's
    /// service time, and a removal would read as a loss.
    pub(super) fn capacity_per_s(&self) -> Option<f64> {
        let busy = self
            .busy_threads
            .filter(|b| b.is_finite() && *b > 1e-3 && *b <= self.threads as f64 + 0.5)?;
        let c = self.threads as f64 * self.throughput_per_s / busy;
        (c.is_finite() && c > 0.0).then_some(c)
    }
}
