//! Unit tests of the tuned response-time controller (`tuned.rs`).

use super::*;

fn s(x: f64) -> Duration {
    Duration::from_secs_f64(x)
}

fn ctl() -> TunedResponseTimeController {
    TunedResponseTimeController::new(TunedConfig::new(s(1.0))).unwrap()
}

#[test]
fn admits_min_queue_before_any_departure_then_rejects() {
    let mut c = ctl();
    let admitted = (0..100).filter(|_| c.admit(s(0.0), 0).is_ok()).count();
    assert_eq!(admitted, 10);
    assert_eq!(c.admit(s(0.0), 0), Err(RejectReason::QueueFull));
    c.undo_admit(s(0.0), 0);
    assert!(c.admit(s(0.0), 0).is_ok());
}

#[test]
fn the_queue_limit_follows_the_departure_rate() {
    let mut c = ctl();
    c.tick(s(0.0));
    // 100 dequeues in 0.1 s: the first period is the estimate, 1000/s.
    for i in 0..100 {
        assert!(c.admit(s(i as f64 * 0.001), 0).is_ok());
        c.on_dequeue(s(i as f64 * 0.001), Duration::ZERO);
    }
    c.tick(s(0.1));
    assert!(
        (c.departures_per_s() - 1000.0).abs() < 1e-9,
        "{}",
        c.departures_per_s()
    );
    // Budget 0.5 s: limit 500 queued events.
    assert!((c.queue_limit() - 500.0).abs() < 1e-9);
    // 50 dequeues in the next 0.1 s (500/s), smoothed by alpha 0.8: 900/s.
    for i in 0..50 {
        assert!(c.admit(s(0.1 + i as f64 * 0.002), 0).is_ok());
        c.on_dequeue(s(0.1 + i as f64 * 0.002), Duration::ZERO);
    }
    c.tick(s(0.2));
    assert!(
        (c.departures_per_s() - 900.0).abs() < 1e-9,
        "{}",
        c.departures_per_s()
    );
    let admitted = (0..1000).filter(|_| c.admit(s(0.2), 0).is_ok()).count();
    assert_eq!(admitted, 450);
}

#[test]
fn a_quiet_stage_admits_a_burst_its_service_time_can_serve() {
    let mut c = ctl();
    c.tick(s(0.0));
    // A quiet stage: 5 events in a period, each served in 2 ms; its queue runs dry.
    for i in 0..5 {
        let t = s(i as f64 * 0.01);
        assert!(c.admit(t, 0).is_ok());
        c.on_dequeue(t, Duration::ZERO);
        c.on_served(t, 0, s(0.002));
    }
    c.tick(s(0.1));
    assert!((c.departures_per_s() - 50.0).abs() < 1e-9);
    // At least 1 / 2 ms = 500 events/s, times the 0.5 s budget: a burst of 250 fits, not
    // the 25 that the quiet period's 50/s would allow.
    let burst = (0..1000).filter(|_| c.admit(s(0.1), 0).is_ok()).count();
    assert_eq!(burst, 250);
    // The burst's period began with an empty queue, so it still counts as quiet; in the next
    // the queue never runs dry: 40 dequeues in each 0.1 s (400/s) smooth with the 50/s
    // before them by alpha 0.8 to 120/s, then 176/s, and the limit is the departure rate's
    // alone, 88, under the 170 still queued.
    for period in 1..3 {
        for i in 0..40 {
            c.on_dequeue(s(period as f64 * 0.1 + i as f64 * 0.0025), Duration::ZERO);
        }
        c.tick(s((period + 1) as f64 * 0.1));
    }
    assert!((c.departures_per_s() - 176.0).abs() < 1e-9);
    assert!((c.queue_limit() - 88.0).abs() < 1e-9, "{}", c.queue_limit());
    assert_eq!(c.admit(s(0.3), 0), Err(RejectReason::QueueFull));
}

#[test]
fn the_budget_moves_slowly_toward_the_setpoint_while_rejecting() {
    let mut c = ctl();
    c.observe(s(0.0), 2.0);
    c.observe(s(1.0), 2.0); // no rejection in between: unchanged
    assert_eq!(c.wait_budget(), s(0.5));
    c.rejections = 1;
    c.observe(s(2.0), 3.2); // ratio clamps at 0.5, over half the time constant (2 s)
    assert!((c.wait_budget().as_secs_f64() - 0.5 * 0.5f64.sqrt()).abs() < 1e-9);
    let before = c.wait_budget();
    c.rejections = 1;
    c.observe(s(3.0), 0.8); // at the setpoint: unchanged
    assert_eq!(c.wait_budget(), before);
    for i in 0..100 {
        c.rejections = 1;
        c.observe(s(4.0 + i as f64), 0.01);
    }
    assert_eq!(c.wait_budget(), s(1.0), "never above the target");
}

/// A queue of 10 that fell to 4 between two windows (and filled again): standing by the
/// stages' rule (it never emptied), not at a standing share of 0.5 (4 <= 0.5 x 10).
fn budget_after_a_dip(standing_share: f64) -> f64 {
    let mut cfg = TunedConfig::new(s(1.0));
    cfg.trim = true;
    cfg.standing_share = standing_share;
    let mut c = TunedResponseTimeController::new(cfg).unwrap();
    for _ in 0..10 {
        assert!(c.admit(s(0.0), 0).is_ok());
    }
    c.observe(s(0.0), 0.1);
    for _ in 0..6 {
        c.on_dequeue(s(0.5), Duration::ZERO);
    }
    for _ in 0..6 {
        assert!(c.admit(s(0.6), 0).is_ok());
    }
    c.rejections = 1;
    c.observe(s(1.0), 0.1);
    c.wait_budget().as_secs_f64()
}

#[test]
fn a_queue_that_fell_to_the_standing_share_of_its_limit_is_not_standing() {
    assert!((budget_after_a_dip(0.0) - 0.5 * 0.5f64.sqrt()).abs() < 1e-9);
    assert!((budget_after_a_dip(0.5) - 0.5 * 2f64.sqrt()).abs() < 1e-9);
    let bad = TunedConfig {
        standing_share: 1.0,
        ..TunedConfig::new(s(1.0))
    };
    let e = TunedResponseTimeController::new(bad).unwrap_err();
    assert!(e.to_string().contains("standing_share"), "{e}");
}

#[test]
fn trimming_shrinks_a_standing_queue_and_grows_one_that_runs_dry() {
    let mut cfg = TunedConfig::new(s(1.0));
    cfg.trim = true;
    let mut c = TunedResponseTimeController::new(cfg).unwrap();
    for _ in 0..5 {
        assert!(c.admit(s(0.0), 0).is_ok());
    }
    c.observe(s(0.0), 0.1);
    // The queue never emptied (5 queued throughout) and the limit rejected: shrink by
    // 0.5 ^ (1 s / 2 s).
    c.rejections = 1;
    c.observe(s(1.0), 0.1);
    assert!((c.wait_budget().as_secs_f64() - 0.5 * 0.5f64.sqrt()).abs() < 1e-9);
    // Now it runs dry: grow by 2 ^ (1 s / 2 s).
    for _ in 0..5 {
        c.on_dequeue(s(1.5), Duration::ZERO);
    }
    c.rejections = 1;
    c.observe(s(2.0), 0.1);
    assert!((c.wait_budget().as_secs_f64() - 0.5).abs() < 1e-9);
}

/// The budget after one window of a standing queue (5 queued throughout, a rejection) whose
/// p90 was `p90_s`, trimming down to `trim_floor` of the setpoint (0.8 s of a 1 s target).
fn trimmed_to(trim_floor: f64, p90_s: f64) -> f64 {
    let cfg = TunedConfig {
        trim: true,
        trim_floor,
        ..TunedConfig::new(s(1.0))
    };
    let mut c = TunedResponseTimeController::new(cfg).unwrap();
    for _ in 0..5 {
        assert!(c.admit(s(0.0), 0).is_ok());
    }
    c.observe(s(0.0), p90_s);
    c.rejections = 1;
    c.observe(s(2.0), p90_s);
    c.wait_budget().as_secs_f64()
}

#[test]
fn trimming_stops_at_the_floor() {
    // No floor: halved over one time constant whatever the p90 under the setpoint.
    assert!((trimmed_to(0.0, 0.7) - 0.25).abs() < 1e-9);
    assert!((trimmed_to(0.0, 0.1) - 0.25).abs() < 1e-9);
    // A floor of 0.75 (0.6 s): a p90 of 0.7 s shrinks by 0.6 / 0.7, one of 0.5 s is left alone.
    assert!((trimmed_to(0.75, 0.7) - 0.5 * 0.6 / 0.7).abs() < 1e-9);
    assert!((trimmed_to(0.75, 0.5) - 0.5).abs() < 1e-9);
    // Far above the floor (0.2 s), still at most halved.
    assert!((trimmed_to(0.25, 0.79) - 0.25).abs() < 1e-9);
    let bad = TunedConfig {
        trim_floor: 1.5,
        ..TunedConfig::new(s(1.0))
    };
    let e = TunedResponseTimeController::new(bad).unwrap_err();
    assert!(e.to_string().contains("trim_floor"), "{e}");
}

#[test]
fn drops_past_the_tolerance_shrink_the_budget_whatever_the_percentile() {
    let mut c = ctl();
    c.observe(s(0.0), 0.1);
    // 100 dequeues, one dropped: within the 1% tolerance, so the low percentile grows the
    // budget by 2 ^ (1 s / 2 s).
    for _ in 0..100 {
        c.admit_anyway(s(0.5));
    }
    assert!(c.on_dequeue(s(0.5), s(0.9)));
    for _ in 0..99 {
        assert!(!c.on_dequeue(s(0.5), s(0.1)));
    }
    c.rejections = 1;
    c.observe(s(1.0), 0.1);
    let grown = 0.5 * 2f64.sqrt();
    assert!((c.wait_budget().as_secs_f64() - grown).abs() < 1e-9);
    // Two of 100 dropped: shrink by 0.5 ^ (1 s / 2 s), though the percentile is low.
    for _ in 0..100 {
        c.admit_anyway(s(1.5));
    }
    for i in 0..100 {
        c.on_dequeue(s(1.5), s(if i < 2 { 0.9 } else { 0.1 }));
    }
    c.rejections = 1;
    c.observe(s(2.0), 0.1);
    assert!((c.wait_budget().as_secs_f64() - grown * 0.5f64.sqrt()).abs() < 1e-9);
}

#[test]
fn the_dropper_leaves_room_for_the_rest_of_the_response() {
    // Target 1 s: 0.8 s until the rest of a response is known.
    let mut c = ctl();
    assert_eq!(c.drop_threshold(), Some(s(0.8)));
    // 200 responses, one of them 0.24 s beyond its wait: over the setpoint (0.8) 0.3 s, so
    // a wait over 0.7 s is dropped.
    for i in 0..REST_SAMPLES {
        c.on_served(s(0.0), 0, s(if i == 7 { 0.24 } else { 0.01 }));
    }
    assert_eq!(c.drop_threshold(), Some(s(0.7)));
    assert!(c.on_dequeue(s(0.1), s(0.71)));
    assert!(!c.on_dequeue(s(0.1), s(0.69)));
    // A tail longer than the target leaves the threshold at half of `drop_queued`.
    for _ in 0..REST_SAMPLES {
        c.on_served(s(1.0), 0, s(2.0));
    }
    assert_eq!(c.drop_threshold(), Some(s(0.4)));
    // A short tail never raises it past `drop_queued`.
    for _ in 0..REST_SAMPLES {
        c.on_served(s(2.0), 0, s(0.001));
    }
    assert_eq!(c.drop_threshold(), Some(s(0.8)));
}

#[test]
fn drops_events_that_queued_past_the_dropper_threshold() {
    // Target 1 s: the threshold is 0.8 s.
    let mut c = ctl();
    assert!(c.admit(s(0.0), 0).is_ok());
    assert!(c.admit(s(0.0), 0).is_ok());
    assert!(!c.on_dequeue(s(5.0), s(0.7)));
    assert!(c.on_dequeue(s(5.0), s(0.9)));
    assert_eq!(c.state()[1], ("queued", 0.0));
    let mut cfg = TunedConfig::new(s(1.0));
    cfg.drop_queued = None;
    let mut c = TunedResponseTimeController::new(cfg).unwrap();
    assert!(!c.on_dequeue(s(5.0), s(100.0)));
}

/// seda-tower's layer over a service of `slots` slots (exponential service times of mean
/// 40 ms, served in arrival order), the requests in flight as the controller's queue, under
/// Poisson arrivals at 3 x capacity for 20 s: the layer's trimming controller with a 250 ms
/// target and the given `budget_floor`. Returns the replies within the target per second
/// over the last 16 s, as a share of capacity, and the most requests in flight there.
fn layer_over_slots(slots: usize, budget_floor: f64) -> (f64, u64) {
    use rand::{Rng, SeedableRng};
    use std::cmp::Reverse;
    use std::collections::{BinaryHeap, VecDeque};
    let cfg = TunedConfig {
        drop_queued: None,
        trim: true,
        standing_share: 0.5,
        budget_floor,
        ..TunedConfig::new(s(0.25))
    };
    let mut c = TunedResponseTimeController::new(cfg).unwrap();
    let mut rng = rand::rngs::SmallRng::seed_from_u64(3);
    let mut exp = |mean: f64| -mean * (1.0 - rng.random::<f64>()).ln();
    let capacity = slots as f64 / 0.040;
    let (end, from) = (20.0, 4.0);
    // Replies as (done, arrived) in ns, the earliest first; arrivals waiting for a slot.
    let mut busy: BinaryHeap<Reverse<(u64, u64)>> = BinaryHeap::new();
    let mut waiting: VecDeque<u64> = VecDeque::new();
    let ns = |t: f64| (t * 1e9) as u64;
    let (mut t, mut next_tick, mut good, mut most) = (0.0, 0.0, 0u64, 0u64);
    while t < end {
        t += exp(1.0 / (3.0 * capacity));
        while let Some(Reverse((done, arrived))) = busy.peek().copied() {
            if done > ns(t) {
                break;
            }
            busy.pop();
            let (now, took) = (
                Duration::from_nanos(done),
                Duration::from_nanos(done - arrived),
            );
            c.on_dequeue(now, took);
            c.on_complete(now, 0, took, took);
            good += u64::from(now.as_secs_f64() >= from && took <= s(0.25));
            if let Some(a) = waiting.pop_front() {
                busy.push(Reverse((done + ns(exp(0.040)), a)));
            }
        }
        if t >= next_tick {
            c.tick(s(t));
            next_tick += 0.1;
        }
        if c.admit(s(t), 0).is_ok() {
            if busy.len() < slots {
                busy.push(Reverse((ns(t) + ns(exp(0.040)), ns(t))));
            } else {
                waiting.push_back(ns(t));
            }
            if t >= from {
                most = most.max((busy.len() + waiting.len()) as u64);
            }
        }
    }
    (good as f64 / (capacity * (end - from)), most)
}

#[test]
fn trimming_the_requests_in_flight_stops_above_what_the_service_serves_at_once() {
    for slots in [8, 16, 64] {
        let (share, most) = layer_over_slots(slots, 0.4);
        assert!(
            share > 0.95,
            "{slots} slots: {share:.3} x capacity within the target, at most {most} in flight"
        );
    }
    // Without the floor, trimming held the requests in flight at `min_queue` (10): 0.60 x.
    let (share, most) = layer_over_slots(16, 0.0);
    assert!(share < 0.7 && most <= 10, "{share:.3}, {most}");
    let bad = TunedConfig {
        budget_floor: 1.5,
        ..TunedConfig::new(s(1.0))
    };
    let e = TunedResponseTimeController::new(bad).unwrap_err();
    assert!(e.to_string().contains("budget_floor"), "{e}");
}
