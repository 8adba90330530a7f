//! DAGOR (DAGOR18, WeChat's overload control): the peer our tiers are compared with.
//!
//! Every service runs the same agent ([`Dagor`]): it detects overload by the mean queueing time
//! of a window (1 s or 2,000 requests; overloaded above 20 ms), and moves an admission level
//! over compound priorities ([`Priority`]: a business priority, then one of 128 user
//! priorities hashed from the user's ID) so that the next window admits about 5% fewer
//! requests than the last (overloaded) or 1% more (not), read off the histogram of the
//! window's priorities. Each service piggybacks its level on its responses; a caller keeps the
//! level of each service it calls and drops, before sending, the requests that service would
//! refuse.
//!
//! What DAGOR coordinates is one call edge: a service learns the level of the services it
//! calls, not of the services they call. The `tiers` scenario of `seda-lab` runs it beside
//! each tier alone and ours, where the back's refusals reach the front's door.
//!
//! ```
//! use std::time::Duration;
//! use seda_control::dagor::{Dagor, DagorConfig, Priority};
//!
//! let mut agent = Dagor::new(DagorConfig::default())?;
//! let mut t = Duration::ZERO;
//! // A second of requests of every user priority, each waiting 50 ms: overloaded.
//! for i in 0..1000u16 {
//!     let p = Priority::new(0, i % 128).unwrap();
//!     assert!(agent.admit(t, p));
//!     agent.on_dequeue(Duration::from_millis(50));
//!     t += Duration::from_millis(1);
//! }
//! agent.admit(t, Priority::HIGHEST); // the window closes
//! assert!(agent.overloaded());
//! assert!(agent.level() < Priority::lowest(1)); // about 5% of the users now refused
//! # Ok::<(), seda_control::InvalidConfig>(())
//! ```

mod control;
mod priority;

pub use control::{Dagor, DagorConfig};
pub use priority::{MAX_BUSINESS_LEVELS, ParsePriorityError, Priority, USER_LEVELS};

#[cfg(test)]
mod tests;
