use std::collections::BTreeMap;

use super::*;
use crate::{CatalogueError, catalogue};

fn s(x: f64) -> Duration {
    Duration::from_secs_f64(x)
}

/// Target 1 s, so a class counts as arriving for 1 s; before any departure the inner limit is
/// its minimum queue (10 events). No floor, so the shares show on that small limit.
fn ctl() -> SessionAwareController {
    SessionAwareController::new(SessionAwareConfig {
        floor: 0.0,
        ..SessionAwareConfig::new(s(1.0))
    })
    .unwrap()
}

fn holding(hold_s: f64) -> SessionAwareController {
    let cfg = SessionAwareConfig {
        hold: Some(s(hold_s)),
        floor: 0.0,
        ..SessionAwareConfig::new(s(1.0))
    };
    SessionAwareController::new(cfg).unwrap()
}

#[test]
fn below_the_floor_every_class_is_admitted() {
    // The defaults: every class may queue the inner controller's minimum queue (10).
    let mut c = SessionAwareController::new(SessionAwareConfig::new(s(1.0))).unwrap();
    assert_eq!(admitted(&mut c, 0.0, 3, 5), 5);
    assert_eq!(
        admitted(&mut c, 0.0, NEW, 5),
        5,
        "a quiet service turns no one away"
    );
    assert_eq!(c.admit(s(0.0), NEW), Err(RejectReason::Class));
}

const NEW: u8 = 0;
const ESTABLISHED: u8 = 1;

fn admitted(c: &mut SessionAwareController, at: f64, class: u8, n: usize) -> usize {
    (0..n).filter(|_| c.admit(s(at), class).is_ok()).count()
}

#[test]
fn new_sessions_alone_get_the_whole_queue() {
    let mut c = ctl();
    assert_eq!(admitted(&mut c, 0.0, NEW, 100), 10);
    assert_eq!(c.admit(s(0.0), NEW), Err(RejectReason::QueueFull));
}

#[test]
fn new_sessions_are_turned_away_first_when_sessions_fill_the_queue() {
    let mut c = ctl();
    assert_eq!(admitted(&mut c, 0.0, ESTABLISHED, 5), 5);
    // Half the limit (5 of 10) is taken: a new session may fill only half.
    assert_eq!(c.admit(s(0.0), NEW), Err(RejectReason::Class));
    // An established session still gets the rest of the queue.
    assert_eq!(admitted(&mut c, 0.0, ESTABLISHED, 100), 5);
    assert_eq!(c.state().last().copied(), Some(("refused_by_rank", 1.0)));
}

#[test]
fn without_hold_a_refused_session_does_not_hold_new_sessions_off() {
    let mut c = ctl();
    assert_eq!(admitted(&mut c, 0.0, ESTABLISHED, 11), 10);
    for _ in 0..10 {
        c.on_dequeue(s(0.1), Duration::ZERO);
    }
    assert!(
        c.admit(s(0.5), NEW).is_ok(),
        "the queue has room below the share"
    );
}

#[test]
fn a_refused_session_holds_new_sessions_off_for_hold() {
    let mut c = holding(1.0);
    assert_eq!(admitted(&mut c, 0.0, ESTABLISHED, 11), 10);
    // Drain the queue: the limit has room again, but a session was refused at 0 s.
    for _ in 0..10 {
        c.on_dequeue(s(0.1), Duration::ZERO);
    }
    assert_eq!(c.inner().queued(), 0);
    assert_eq!(c.admit(s(0.5), NEW), Err(RejectReason::Class));
    assert!(
        c.admit(s(0.5), ESTABLISHED).is_ok(),
        "sessions are not held"
    );
    // One `hold` (1 s) after the refusal, new sessions are admitted again.
    assert!(c.admit(s(1.0), NEW).is_ok());
}

#[test]
fn each_class_below_the_top_gets_a_smaller_share() {
    let mut c = ctl();
    for class in [1, 2, 3] {
        c.admit(s(0.0), class).unwrap();
    }
    assert_eq!(c.share(s(0.0), 3), 1.0);
    assert_eq!(c.share(s(0.0), 2), 0.5);
    assert_eq!(c.share(s(0.0), 1), 0.25);
    assert_eq!(c.share(s(0.0), NEW), 0.125);
    // A class that stopped arriving no longer counts as the top after `active`.
    assert!(c.admit(s(2.0), 1).is_ok());
    assert_eq!(c.share(s(2.0), 1), 1.0);
}

#[test]
fn a_lower_class_refusal_does_not_hold_a_higher_class() {
    let mut c = holding(1.0);
    c.admit(s(0.0), 2).unwrap();
    for _ in 0..4 {
        c.admit(s(0.0), 1).unwrap();
    }
    // 5 queued: class 1 (share 0.5 of 10) is refused, class 2 is not held by it.
    assert_eq!(c.admit(s(0.0), 1), Err(RejectReason::Class));
    assert!(c.admit(s(0.0), 2).is_ok());
    // But class 1's refusal holds class 0 off.
    for _ in 0..6 {
        c.on_dequeue(s(0.1), Duration::ZERO);
    }
    assert_eq!(c.admit(s(0.2), NEW), Err(RejectReason::Class));
}

#[test]
fn the_top_class_sees_only_the_inner_controller() {
    let mut c = ctl();
    let mut inner = TunedResponseTimeController::new(TunedConfig::new(s(1.0))).unwrap();
    for i in 0..200 {
        let t = s(i as f64 * 0.01);
        assert_eq!(c.admit(t, ESTABLISHED), inner.admit(t, ESTABLISHED), "{i}");
        if i % 3 == 0 {
            assert_eq!(c.on_dequeue(t, s(0.2)), inner.on_dequeue(t, s(0.2)));
            c.on_complete(t, ESTABLISHED, s(0.3), s(0.2));
            inner.on_complete(t, ESTABLISHED, s(0.3), s(0.2));
        }
    }
    assert_eq!(c.inner().queue_limit(), inner.queue_limit());
}

#[test]
fn built_by_name_with_its_parameters_and_checked() {
    let entry = catalogue::entry("session_aware").unwrap();
    assert_eq!(entry.aimed(s(0.5))["target_s"], 0.5);
    let p: BTreeMap<String, f64> = [("target_s", 0.5), ("lower_share", 0.25), ("hold_s", 2.0)]
        .iter()
        .map(|(k, v)| (k.to_string(), *v))
        .collect();
    assert_eq!(entry.build(&p).unwrap().name(), "session_aware");
    for (name, bad) in [
        ("lower_share", 0.0),
        ("lower_share", 1.5),
        ("active_s", 0.0),
        ("floor", -1.0),
    ] {
        let p: BTreeMap<String, f64> = [(name.to_string(), bad)].into_iter().collect();
        match entry.build(&p) {
            Err(CatalogueError::Invalid { source, .. }) => assert_eq!(source.param, name),
            other => panic!("{name} = {bad}: {other:?}", other = other.map(|c| c.name())),
        }
    }
    let cfg = SessionAwareConfig::new(s(2.0));
    assert_eq!((cfg.active, cfg.hold), (s(2.0), None));
    assert_eq!(cfg.lower_share, SessionAwareConfig::DEFAULT_LOWER_SHARE);
}

#[test]
fn refusals_by_rank_let_the_inner_controller_adapt() {
    // The inner controller moves its waiting budget only while requests are turned away; with
    // sessions filling half the queue, only the share rule turns logins away.
    let mut c = ctl();
    let before = c.inner().wait_budget();
    assert_eq!(admitted(&mut c, 0.0, ESTABLISHED, 5), 5);
    // Two windows far over the target close, each after a refused login (the first only
    // starts the outer loop's clock): the budget shrinks.
    for start in [1.0, 2.0] {
        assert!(
            c.admit(s(start), ESTABLISHED).is_ok(),
            "sessions still arriving"
        );
        assert_eq!(c.admit(s(start), NEW), Err(RejectReason::Class));
        for i in 0..100 {
            c.on_complete(s(start + i as f64 * 0.001), ESTABLISHED, s(5.0), s(5.0));
        }
    }
    assert!(
        c.inner().wait_budget() < before,
        "{:?}",
        c.inner().wait_budget()
    );
}
