//! The experiments. Each file is one scenario; [`ALL`] lists them in the order `run all` takes.

use crate::scenario::Scenario;

mod controllers;
mod degrade;
pub(crate) mod mail_spike;

/// Every scenario.
pub(crate) static ALL: &[&dyn Scenario] = &[
    &mail_spike::MailSpike,
    &controllers::Controllers,
    &degrade::Degrade,
];
