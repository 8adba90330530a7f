//! The experiments. Each file is one scenario; [`ALL`] lists them in the order `run all` takes.

use crate::scenario::Scenario;

mod classes;
mod controllers;
mod degrade;
mod goodput;
pub(crate) mod mail_spike;
mod mail_users;
mod per_stage;
mod static_sweep;

/// Every scenario.
pub(crate) static ALL: &[&dyn Scenario] = &[
    &mail_spike::MailSpike,
    &mail_users::MailUsers,
    &per_stage::PerStage,
    &classes::Classes,
    &degrade::Degrade,
    &goodput::Goodput,
    &controllers::Controllers,
    &static_sweep::StaticSweep,
];
