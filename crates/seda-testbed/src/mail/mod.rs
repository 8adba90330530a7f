//! The e-mail service's test bed: its emulated users (WC03 Section 4.1) and the proof that
//! terminated requests release what they held.
//!
//! - [`user_model::UserModel`]: the emulated user (Markov model, think time, back-off);
//!   [`workload::MailWorkload`]: that user as a `seda-load` workload (`seda load --workload
//!   mail`).
//! - [`soak`]: the safe-release soak (`seda bench soak`).

pub mod soak;
pub mod user_model;
pub mod workload;
