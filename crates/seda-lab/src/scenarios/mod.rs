//! The experiments. Each file is one scenario; [`ALL`] lists them in the order `run all` takes,
//! and [`all`] and [`find`] are how the command line reaches them. The registry lives here,
//! beside the list, and not in `scenario` (the trait and the runner), so that each scenario can
//! import the trait without the trait's module importing the scenarios back.

use anyhow::{Result, bail};

use crate::scenario::Scenario;

/// Every scenario, in the order `run all` takes them.
pub fn all() -> &'static [&'static dyn Scenario] {
    ALL
}

/// The scenario called `name`.
pub fn find(name: &str) -> Result<&'static dyn Scenario> {
    match all().iter().find(|s| s.name() == name) {
        Some(s) => Ok(*s),
        None => bail!(
            "no scenario `{name}`: `seda lab list` shows {}",
            all()
                .iter()
                .map(|s| s.name())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

mod classes;
mod cluster;
mod controllers;
mod criticality;
mod degrade;
mod dynamic_groups;
mod follow_target;
mod goodput;
mod mail_search;
pub(crate) mod mail_spike;
mod mail_users;
mod overload_curve;
mod per_stage;
mod pool_control;
mod proxy_spike;
mod rogue;
mod sert_motivation;
mod sert_shift;
mod sert_threshold;
mod static_sweep;
mod thesis_open;
mod tiers;
mod tower_peers;
mod tower_spike;

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
    &tower_spike::TowerSpike,
    &tower_peers::TowerPeers,
    &cluster::Cluster,
    &proxy_spike::ProxySpike,
    &sert_shift::SertShift,
    &sert_motivation::SertMotivation,
    &mail_search::MailSearch,
    &sert_threshold::SertThreshold,
    &pool_control::PoolControl,
    &thesis_open::ThesisOpen,
    &dynamic_groups::DynamicGroups,
    &follow_target::FollowTarget,
    &overload_curve::OverloadCurve,
    &tiers::Tiers,
    &criticality::CriticalityScenario,
    &rogue::Rogue,
];
