use std::time::Duration;

use super::*;
use crate::AdmissionController;
use crate::RejectReason;
use crate::peers::{AimdLimit, AimdLimitConfig, ConcurrencyLimiter};

fn fixed(limit: f64) -> ConcurrencyLimiter<AimdLimit> {
    let cfg = AimdLimitConfig {
        initial: limit,
        min: limit,
        max: limit,
        ..Default::default()
    };
    ConcurrencyLimiter::new(AimdLimit::new(cfg).unwrap())
}

fn gate(limit: f64) -> CriticalityGate<ConcurrencyLimiter<AimdLimit>> {
    let cfg = CriticalityConfig {
        floor: 0.0,
        ..Default::default()
    };
    CriticalityGate::new(fixed(limit), cfg).unwrap()
}

fn class(level: Level, cohort: Option<u8>) -> u8 {
    Criticality { level, cohort }.class()
}

const T: Duration = Duration::ZERO;

#[test]
fn cohorts_of_a_level_are_cut_in_turn_across_its_band() {
    let cfg = CriticalityConfig::default();
    let s = |c| cfg.cut_at(Criticality::new(Level::Sheddable).with_cohort(c));
    assert_eq!(s(0), 0.3);
    assert!((s(15) - 0.5).abs() < 1e-12);
    assert!((1..16).all(|c| s(c) > s(c - 1)));
    // The whole of sheddable-plus outlasts the whole of sheddable; critical-plus has no cut.
    let sp0 = cfg.cut_at(Criticality::new(Level::SheddablePlus).with_cohort(0));
    assert!(sp0 >= s(15));
    assert!(
        cfg.cut_at(Criticality::new(Level::CriticalPlus))
            .is_infinite()
    );
}

/// Marks every level as arriving, as mixed traffic does.
fn arriving(g: &mut CriticalityGate<ConcurrencyLimiter<AimdLimit>>) {
    let top = class(Level::CriticalPlus, None);
    g.admit(T, top).unwrap();
    g.undo_admit(T, top);
}

#[test]
fn a_full_limit_leaves_room_for_the_higher_levels() {
    let mut g = gate(100.0);
    arriving(&mut g);
    let shed = (0..100)
        .filter(|_| g.admit(T, class(Level::Sheddable, None)).is_ok())
        .count();
    assert_eq!(
        shed, 40,
        "sheddable without cohort is cut at 0.4 of the limit"
    );
    assert_eq!(
        g.admit(T, class(Level::Sheddable, Some(15))),
        Ok(()),
        "its last cohort still fits (0.5)"
    );
    assert_eq!(
        g.admit(T, class(Level::Sheddable, Some(0))),
        Err(RejectReason::Class)
    );
    let more = (0..100)
        .filter(|_| g.admit(T, class(Level::SheddablePlus, None)).is_ok())
        .count();
    assert_eq!(more, 60 - 41);
    let crit = (0..100)
        .filter(|_| g.admit(T, class(Level::Critical, None)).is_ok())
        .count();
    assert_eq!(crit, 90 - 60);
    let plus = (0..100)
        .filter(|_| g.admit(T, class(Level::CriticalPlus, None)).is_ok())
        .count();
    assert_eq!(plus, 10, "critical-plus fills the limit and no more");
    assert_eq!(
        g.admit(T, class(Level::CriticalPlus, None)),
        Err(RejectReason::Limit),
        "the inner limit refuses critical-plus too"
    );
    assert_eq!(g.counts(Level::Sheddable).in_flight, 41);
    assert_eq!(g.counts(Level::CriticalPlus).refused, 91);
}

#[test]
fn a_level_alone_fills_the_whole_limit_and_is_cut_once_a_higher_one_arrives() {
    let mut g = gate(10.0);
    let s = class(Level::Sheddable, None);
    assert_eq!((0..20).filter(|_| g.admit(T, s).is_ok()).count(), 10);
    for _ in 0..10 {
        g.on_complete(T, s, Duration::ZERO, Duration::ZERO);
    }
    assert!(g.admit(T, class(Level::Critical, None)).is_ok());
    assert_eq!((0..20).filter(|_| g.admit(T, s).is_ok()).count(), 3);
    // A second later with no critical request, the room is no longer kept.
    let later = Duration::from_secs(1);
    assert_eq!((0..20).filter(|_| g.admit(later, s).is_ok()).count(), 6);
}

#[test]
fn finishing_frees_room_per_level() {
    let mut g = gate(10.0);
    arriving(&mut g);
    let c = class(Level::Critical, None);
    for _ in 0..9 {
        g.admit(T, c).unwrap();
    }
    assert!(g.admit(T, c).is_err());
    g.on_complete(T, c, Duration::from_millis(1), Duration::from_millis(1));
    g.on_drop(T, c);
    g.undo_admit(T, c);
    assert_eq!(g.counts(Level::Critical).in_flight, 6);
    assert_eq!(g.inner().inflight(), 6);
    assert!(g.admit(T, c).is_ok());
}

#[test]
fn the_floor_keeps_a_quiet_service_open() {
    let cfg = CriticalityConfig {
        floor: 5.0,
        ..Default::default()
    };
    let mut g = CriticalityGate::new(fixed(6.0), cfg).unwrap();
    arriving(&mut g);
    // 0.4 x 6 = 2.4, but the floor lets 5 sheddable requests in.
    let n = (0..10)
        .filter(|_| g.admit(T, class(Level::Sheddable, None)).is_ok())
        .count();
    assert_eq!(n, 5);
}

#[test]
fn bad_bands_are_errors_naming_the_level() {
    let mut cfg = CriticalityConfig::default();
    cfg.bands[1] = (0.2, 0.6);
    let e = cfg.validate().unwrap_err().to_string();
    assert!(e.contains("sheddable_plus"), "{e}");
    cfg.bands[1] = (0.7, 0.6);
    assert!(cfg.validate().is_err());
    cfg = CriticalityConfig {
        cohorts: 0,
        ..Default::default()
    };
    assert!(cfg.validate().is_err());
}

#[test]
fn the_catalogue_builds_it_by_name() {
    let mut p = std::collections::BTreeMap::new();
    p.insert("target_s".to_string(), 0.2);
    p.insert("critical_from".to_string(), 0.8);
    let c = crate::build_admission("criticality", &p).unwrap();
    assert_eq!(c.name(), "criticality");
    p.insert("critical_to".to_string(), 2.0);
    assert!(crate::build_admission("criticality", &p).is_err());
}
