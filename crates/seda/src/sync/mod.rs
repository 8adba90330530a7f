//! The synchronisation primitives of the pool's hand-off ([`crate::handoff`]), behind one
//! small API: parking_lot's and std's normally, loom's under `cfg(loom)`.
//!
//! Why a shim: the loom model (`tests/loom_handoff.rs`) must check the hand-off the runtime
//! runs, not a copy. The model compiles `handoff.rs` itself against [`loom_impl`]'s types (the
//! same file this module uses under `RUSTFLAGS="--cfg loom"`), so the protocol is written once.

#[cfg(loom)]
mod loom_impl;
#[cfg(not(loom))]
mod std_impl;

#[cfg(loom)]
pub(crate) use loom_impl::*;
#[cfg(not(loom))]
pub(crate) use std_impl::*;
