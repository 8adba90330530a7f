//! Self-tuning stages under global control (FAIR07 Chapter 4): the resource lever.
//!
//! Where admission control acts by rejecting at the door, these controllers act on resources:
//! - [`GlobalTargets`] turns the operator's percentile response-time target into a throughput
//!   target (Little's law), shared by stages in series and [`split`] among parallel branches;
//! - [`SelfTuningPool`] sizes one stage's pool toward that throughput by P (pre-compensated),
//!   PI or PD control ([`Law`]), with gains re-derived ([`gains`]) from an [`ArxModel`] of the
//!   stage fitted online by least squares;
//! - [`HillClimbing`] is the peer: the .NET thread pool's model-free search for the pool size
//!   with the most completions per second.
//!
//! ```
//! use seda_control::selftune::{Law, PeriodSample, SelfTuningConfig, SelfTuningPool};
//!
//! let mut pool = SelfTuningPool::new(SelfTuningConfig { law: Law::P, ..Default::default() });
//! // A stage that completes 50 events/s per thread, asked for 400/s.
//! let mut threads = 2;
//! for _ in 0..20 {
//!     let measured = 50.0 * threads as f64;
//!     threads = pool.update(PeriodSample { throughput_per_s: measured, threads, target_per_s: 400.0, busy_threads: None });
//! }
//! assert_eq!(threads, 8);
//! ```

mod arx;
mod design;
mod global;
mod hill_climbing;
mod levels;
mod pool;

pub use arx::{A_MAX, A_MIN, ArxEstimate, ArxModel, DEFAULT_FORGETTING};
pub use design::{Gains, Law, PoleSpec, gains};
pub use global::{GlobalConfig, GlobalTargets, ServiceSample, TargetSource, split};
pub use hill_climbing::HillClimbing;
pub use pool::{DEFAULT_MAX_STEP, PeriodSample, SelfTuningConfig, SelfTuningPool};
