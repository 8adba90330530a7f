//! The live dashboard's assets, built into the binary (no CDN: it works with no internet).
//!
//! Plain HTML, CSS and one small script: it fetches `/_seda/live` once a second (the whole
//! hour on the first call, then only the new points), keeps at most an hour per stage, and
//! draws the stage graph (edges sized by their event rate), a card per stage (queue against
//! threshold, arrival and completion rates, p50/p90/p99, threads against the pool's cap,
//! admitted and rejected rates with reasons, sparklines) and the controllers' timeline. The
//! stage where backpressure starts (computed by the server, see `history.rs`) is marked.

pub(crate) const INDEX_HTML: &str = include_str!("dashboard/index.html");
pub(crate) const SCRIPT: &str = include_str!("dashboard/dashboard.js");
pub(crate) const STYLE: &str = include_str!("dashboard/dashboard.css");
