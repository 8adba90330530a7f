//! Controllers on the client side of an overloaded service: SSM's window of outstanding
//! requests, used by the load generator and the simulator's sources, and Google SRE's adaptive
//! throttling, used by the load generator.

mod aimd_window;
mod throttle;

pub use aimd_window::{AimdWindow, AimdWindowConfig};
pub use throttle::{AdaptiveThrottle, ThrottleConfig};
