//! The experiments. Each file is one scenario; [`ALL`] lists them in the order `run all` takes.

use crate::scenario::Scenario;

mod goodput;
mod mail_spike;

/// Every scenario.
pub(crate) static ALL: &[&dyn Scenario] = &[&mail_spike::MailSpike, &goodput::Goodput];
