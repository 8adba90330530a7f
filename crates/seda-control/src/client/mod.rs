//! Controllers on the client side of an overloaded service: SSM's window of outstanding
//! requests, used by the load generator and the simulator's sources; Google SRE's adaptive
//! throttling and a retry budget, used by the load generator.

mod aimd_window;
mod retry_budget;
mod throttle;
mod window;

pub use aimd_window::{AimdWindow, AimdWindowConfig};
pub use retry_budget::{RetryBudget, RetryBudgetConfig};
pub use throttle::{AdaptiveThrottle, SeededThrottle, ThrottleConfig};
