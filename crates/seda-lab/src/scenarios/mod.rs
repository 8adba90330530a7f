//! The experiments. Each file is one scenario; [`ALL`] lists them in the order `run all` takes.

use crate::scenario::Scenario;

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
