//! Criticality: which requests a service cuts first when it must cut some.
//!
//! A request carries a [`Level`] (GSRE's four: critical-plus, critical, sheddable-plus,
//! sheddable; critical by default) and, optionally, a cohort: CINNAMON splits the users
//! of a level into cohorts by a hash of their key that is re-drawn every period
//! ([`Cohorts`]), so a service cutting part of a level cuts whole users, not a random half of
//! every user's requests, and not the same users all day.
//!
//! [`CriticalityGate`] is the admission controller: around one that bounds the requests in
//! flight ([`InFlightBound`]: ours, or a peer's concurrency limit), it cuts sheddable first,
//! cohort by cohort, then sheddable-plus, then critical, as the share of the bound in use
//! rises, each band only while a higher level is arriving; critical-plus is refused only by
//! the inner bound. Every admission passes the inner
//! bound, so the levels together never have more in flight than it allows.
//!
//! The level travels as an admission class ([`Criticality::class`]): the level in the top two
//! bits, the cohort in the low six. Set it at a trusted edge (`seda-tower`'s layer does, from
//! the route or the session) and never from a header a client sets freely.
//!
//! ```
//! use std::time::Duration;
//! use seda_control::AdmissionController;
//! use seda_control::criticality::{Criticality, CriticalityConfig, CriticalityGate, Level};
//! use seda_control::peers::{AimdLimit, AimdLimitConfig, ConcurrencyLimiter};
//!
//! // A fixed limit of 20 in flight, sheddable requests cut from 30% of it.
//! let fixed = AimdLimitConfig { initial: 20.0, min: 20.0, max: 20.0, ..Default::default() };
//! let inner = ConcurrencyLimiter::new(AimdLimit::new(fixed)?);
//! let cfg = CriticalityConfig { floor: 0.0, ..Default::default() };
//! let mut gate = CriticalityGate::new(inner, cfg)?;
//! let t = Duration::ZERO;
//! let plus = Criticality::new(Level::CriticalPlus).class();
//! assert!(gate.admit(t, plus).is_ok()); // a critical-plus request arrives...
//! gate.on_complete(t, plus, Duration::ZERO, Duration::ZERO); // ...and leaves
//! let sheddable = Criticality::new(Level::Sheddable).class();
//! let critical = Criticality::new(Level::Critical).class();
//! let shed = (0..20).filter(|_| gate.admit(t, sheddable).is_ok()).count();
//! let crit = (0..20).filter(|_| gate.admit(t, critical).is_ok()).count();
//! assert_eq!((shed, crit), (8, 10)); // 0.4 x 20 of sheddable, then critical up to 0.9 x 20
//! # Ok::<(), seda_control::InvalidConfig>(())
//! ```

mod cohort;
pub(crate) mod gate;
mod inner;
mod level;

pub use cohort::Cohorts;
pub use gate::{CriticalityConfig, CriticalityGate, LevelCounts};
pub use inner::InFlightBound;
pub use level::{Criticality, Level, MAX_COHORTS, ParseCriticalityError};

#[cfg(test)]
mod tests;
