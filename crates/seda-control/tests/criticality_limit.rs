//! Netflix concurrency-limits#234: partitions that each count their own requests together
//! exceeded the global limit under concurrent acquires. The criticality gate admits nothing the
//! inner limit has not admitted; this hammers one shared gate from many threads and checks,
//! from outside the controller, that the requests in flight never exceed the limit.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use seda_control::criticality::{Criticality, CriticalityConfig, CriticalityGate, Level};
use seda_control::peers::{AimdLimit, AimdLimitConfig, ConcurrencyLimiter};
use seda_control::{AdmissionController, SharedController};

const LIMIT: usize = 16;
const THREADS: usize = 8;
const ROUNDS: usize = 20_000;

#[test]
fn levels_together_never_exceed_the_global_limit() {
    let fixed = AimdLimitConfig {
        initial: LIMIT as f64,
        min: LIMIT as f64,
        max: LIMIT as f64,
        ..Default::default()
    };
    let cfg = CriticalityConfig {
        floor: 0.0,
        ..Default::default()
    };
    let gate =
        CriticalityGate::new(ConcurrencyLimiter::new(AimdLimit::new(fixed).unwrap()), cfg).unwrap();
    let shared = SharedController::new(Box::new(gate));
    let in_flight = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let admitted_by_level: Arc<[AtomicU64; 4]> = Arc::new(Default::default());
    let epoch = Instant::now();
    let start = Arc::new(std::sync::Barrier::new(THREADS));
    let threads: Vec<_> = (0..THREADS)
        .map(|t| {
            let mut c = shared.clone();
            let (in_flight, peak, by_level) = (
                Arc::clone(&in_flight),
                Arc::clone(&peak),
                Arc::clone(&admitted_by_level),
            );
            let start = Arc::clone(&start);
            std::thread::spawn(move || {
                start.wait();
                let mut held = Vec::new();
                let mut x = 0x9e37_79b9_7f4a_7c15u64 ^ t as u64;
                for i in 0..ROUNDS {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let level = Level::ALL[(x % 4) as usize];
                    let class = Criticality::new(level)
                        .with_cohort((x >> 8) as u8 % 16)
                        .class();
                    if c.admit(epoch.elapsed(), class).is_ok() {
                        let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
                        peak.fetch_max(now, Ordering::SeqCst);
                        assert!(now <= LIMIT, "{now} in flight over a limit of {LIMIT}");
                        by_level[level.index()].fetch_add(1, Ordering::Relaxed);
                        held.push(class);
                    }
                    // Hold up to eleven requests, finishing them in varied ways: two threads
                    // running at once already ask for more than the limit.
                    if held.len() > (x >> 20) as usize % 12 {
                        let class = held.remove(0);
                        in_flight.fetch_sub(1, Ordering::SeqCst);
                        let now = epoch.elapsed();
                        match i % 3 {
                            0 => c.on_complete(now, class, Duration::ZERO, Duration::ZERO),
                            1 => c.on_drop(now, class),
                            _ => c.undo_admit(now, class),
                        }
                    }
                }
                for class in held {
                    in_flight.fetch_sub(1, Ordering::SeqCst);
                    c.on_complete(epoch.elapsed(), class, Duration::ZERO, Duration::ZERO);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let state: std::collections::HashMap<_, _> = shared.state().into_iter().collect();
    let peak = peak.load(Ordering::SeqCst);
    let by_level: Vec<u64> = admitted_by_level
        .iter()
        .map(|n| n.load(Ordering::Relaxed))
        .collect();
    println!("peak in flight {peak} of {LIMIT}; admitted by level (sheddable first) {by_level:?}");
    assert!(peak <= LIMIT);
    // 8 threads holding up to 11 each ask for up to 88: the limit was reached.
    assert_eq!(peak, LIMIT, "the test never pushed the limit");
    // Nothing lost or doubled: every level's count is back at zero, and so is the limiter's.
    assert_eq!(state["inflight"], 0.0);
    for name in [
        "sheddable_in_flight",
        "sheddable_plus_in_flight",
        "critical_in_flight",
        "critical_plus_in_flight",
    ] {
        assert_eq!(state[name], 0.0, "{name}");
    }
    // Under this pressure the lowest level was cut hardest.
    let refused = |n: &str| state[n];
    assert!(refused("sheddable_refused") > refused("critical_refused"));
    assert!(refused("critical_refused") > refused("critical_plus_refused"));
}
