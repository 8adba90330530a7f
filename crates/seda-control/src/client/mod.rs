//! Controllers on the client side of an overloaded service: SSM's window of outstanding
//! requests, used by the load generator and the simulator's sources.

mod aimd_window;

pub use aimd_window::{AimdWindow, AimdWindowConfig};
