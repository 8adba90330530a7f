//! The test bed: services whose capacity is stated before a run, and the inputs experiments
//! need, kept out of the crates users serve with.
//!
//! - [`bottleneck`]: the CPU-bound page of WC03 Section 4.5 with its quality knob, the hold
//!   service of the early-termination experiments (a request holds a worker, or a share of
//!   emulated cores, for a stated time) and emulated backends for the pool sizers; `seda serve
//!   bottleneck` runs it and the lab's scenarios start it.
//! - [`mail`]: the e-mail service's emulated users as a load workload, and the safe-release
//!   soak.
//! - [`specweb`]: the SPECweb99 static file set and its request mix (`seda fileset`, the static
//!   benchmarks).
//!
//! Both run on the product's parts (seda's stages and controllers, seda-http's front end and
//! admin server), so what an experiment measures is the code users run.

#![warn(missing_docs)]

pub mod bottleneck;
pub mod mail;
pub mod specweb;
