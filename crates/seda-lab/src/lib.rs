//! The lab: the seeds' experiments, run on the real system beside real peers, with plots and
//! reports.
//!
//! A [`Scenario`] is one named experiment. [`scenario::run`] gives it a [`Lab`] (its output
//! directory, the cores to pin servers and the load generator to, the `seda` binary to start
//! servers with) and writes what it returns ([`Outcome`]) as `result.json` and `report.md`
//! beside its plots (PNG and SVG, drawn with a bundled font).
//!
//! [`results`] gathers the `result.json` files of a run into one page, `results.md`: every
//! claim checked, the paper's figure beside ours, and each verdict.
//!
//! Servers run as child processes ([`Child`]) pinned to one core, the load generator
//! (`seda-load`) on the other; loads are multiples of a capacity measured first, so a result
//! keeps its meaning on any machine.
//!
//! ```no_run
//! use seda_lab::{scenario, scenarios};
//!
//! let mail_spike = scenarios::find("mail-spike")?;
//! let ran = scenario::run(mail_spike, "lab-out".as_ref(), "target/release/seda".as_ref(), true);
//! println!("{} took {:.0} s", ran.name, ran.elapsed_s);
//! # Ok::<(), anyhow::Error>(())
//! ```

#![warn(missing_docs)]

pub mod admin;
mod averages;
pub mod bottleneck;
mod child;
pub mod criticality_stats;
mod figure;
pub mod haproxy;
pub mod health;
pub mod hold;
pub mod index;
mod lab;
mod loads;
pub mod long_search;
mod machine;
pub mod mail;
mod outcome;
pub mod page_load;
pub mod peers;
pub mod plot;
pub mod poll;
pub mod postgres;
pub mod procfs;
pub mod provenance;
pub mod repeat;
pub mod results;
pub mod rogues;
pub mod scenario;
pub mod scenarios;
pub mod spike;
pub mod steady;
pub mod tier_stats;
pub mod vocabulary;

pub use child::{Child, free_port};
pub use lab::Lab;
pub use machine::Machine;
pub use outcome::{Check, Outcome};
pub use scenario::Scenario;
