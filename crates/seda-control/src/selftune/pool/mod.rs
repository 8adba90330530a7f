//! The self-tuning pool (FAIR07 Sections 4.2.2 and 4.3.4): a stage sizes its own thread pool by
//! feedback control toward a throughput target, on a model it fits online.
//!
//! Every control period the caller reports the period's throughput and the threads the pool
//! ran with; the controller feeds the [`ArxModel`](super::arx::ArxModel), re-derives the gains of its [`Law`](super::design::Law) from
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
//! is below the target ([`SEEK_BAND`](config::SEEK_BAND)) the pool checks each move against what the last one
//! earned ([`MIN_MARGINAL_GAIN`](config::MIN_MARGINAL_GAIN)): additions grow at most geometrically while they pay; when
//! adding threads did not pay (or removing them gained throughput) it undoes half the last move,
//! which bisects toward the knee. On a noisy plant one period's change says little: it counts
//! against a move on its own only past [`NOISE_Z`](config::NOISE_Z) times the noise of a period-to-period change
//! (measured by the model's one-step errors), and within it only where a fitted gain per
//! thread agrees: a least-squares line through the last periods near the pool's size
//! ([`Levels`](super::levels::Levels)), or the ARX model until there is one. Where that line does not say threads pay,
//! an addition must show its gain; where it falls with more threads, the pool gives threads
//! back. The mean readings of the sizes the window holds judge moves as well: a size whose
//! mean passes those of the sizes one thread either side, past their noise, is a peak the
//! pool holds (at a sharp knee the line and the noise margin undo the addition that reaches
//! it, see [`Levels::peak_at`](super::levels::Levels::peak_at)), until
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
//! ([`SCALING_SHARE`](config::SCALING_SHARE)), marks a plateau: the pool returns to the most threads that may have
//! paid and adds none past them while its window remembers, unless the size it left reads
//! above that midpoint once it is read there ([`BISECT_Z`](config::BISECT_Z)): then the gain per thread is
//! shrinking gradually, as a database's does, and the pool returns to it and climbs on. An
//! addition after which it fell returns the pool to the size it left, with the same memory.
//! And it holds each step to what the target needs at the period's service time (Little's
//! law; `hold_to_need` in `update.rs`).
//!
//! The code: [`config`] (settings, tuning constants, the period's sample), `update.rs` (one
//! period: the law, the sign check, the holds), `noise.rs` (the plant-noise estimate),
//! `judge.rs` and `search.rs` (the search below the target: a pure `judge` of what the last
//! move earned, then `decide`, a phase machine of climbing, bisecting, held at a peak, at a
//! ceiling and probing the sizes either side of it). The lab runs that shaped each rule are
//! in `docs/lab-notebook.md` (`pool-control`).

mod config;
mod judge;
mod noise;
mod search;
#[cfg(test)]
mod tests;
mod update;

pub use config::{DEFAULT_MAX_STEP, PeriodSample, SelfTuningConfig};

use super::arx::{ArxEstimate, ArxModel};
use super::design::Gains;
use super::levels::Levels;
use noise::Noise;
use search::Search;

/// A pool sizer on an online ARX model (see the module docs).
#[derive(Debug, Clone)]
pub struct SelfTuningPool {
    config: SelfTuningConfig,
    model: ArxModel,
    prev_threads: Option<usize>,
    prev_y: Option<f64>,
    integral: f64,
    prev_error: f64,
    gains: Option<Gains>,
    /// The plant's noise, learned from the model's errors and the capacity's changes.
    noise: Noise,
    /// The last periods' throughput (or capacity) against threads.
    levels: Levels,
    /// The search below the target: its phase and its ceilings.
    search: Search,
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
            integral: 0.0,
            prev_error: 0.0,
            gains: None,
            noise: Noise::default(),
            levels: Levels::default(),
            search: Search::default(),
        }
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
