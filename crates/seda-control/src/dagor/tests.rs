use std::time::Duration;

use super::*;

const MS: Duration = Duration::from_millis(1);

fn user(u: u16) -> Priority {
    Priority::new(0, u).expect("in range")
}

/// `n` requests over one window, user priorities spread evenly, each admitted one waiting
/// `wait`; returns how many were admitted. Starts at `*t`, leaves `*t` at the window's end.
fn window(agent: &mut Dagor, t: &mut Duration, n: u32, wait: Duration) -> u32 {
    let step = Duration::from_secs(1) / n;
    let mut admitted = 0;
    for i in 0..n {
        if agent.admit(*t, user((i % 128) as u16)) {
            admitted += 1;
            agent.on_dequeue(wait);
        }
        *t += step;
    }
    admitted
}

#[test]
fn an_overloaded_window_cuts_about_alpha_of_the_admitted() {
    let mut agent = Dagor::new(DagorConfig::default()).expect("valid");
    let mut t = Duration::ZERO;
    assert_eq!(
        window(&mut agent, &mut t, 1280, 30 * MS),
        1280,
        "all admitted at first"
    );
    let admitted = window(&mut agent, &mut t, 1280, 30 * MS);
    assert!(agent.overloaded());
    // 10 requests per user level: 0.95 x 1280 = 1216 is 121 levels and a part.
    assert_eq!(admitted, 1210, "level {}", agent.level());
    assert_eq!(agent.level(), user(120));
}

#[test]
fn a_window_below_the_threshold_admits_about_beta_more() {
    let mut agent = Dagor::new(DagorConfig::default()).expect("valid");
    let mut t = Duration::ZERO;
    for _ in 0..5 {
        window(&mut agent, &mut t, 1280, 30 * MS);
    }
    // Each call closes the window before it: this one the last overloaded one.
    let at_cut = window(&mut agent, &mut t, 1280, 5 * MS);
    let cut = agent.level();
    let raised = window(&mut agent, &mut t, 1280, 5 * MS);
    assert!(!agent.overloaded());
    assert!(agent.level() > cut, "{} after {cut}", agent.level());
    // 10 requests a user level: 1% more is one level more.
    assert_eq!(raised, at_cut + 10, "{at_cut} then {raised}");
}

#[test]
fn a_level_whose_callers_send_nothing_past_it_climbs_one_level_at_a_time() {
    let mut agent = Dagor::new(DagorConfig::default()).expect("valid");
    let mut t = Duration::ZERO;
    for _ in 0..10 {
        window(&mut agent, &mut t, 1280, 30 * MS);
    }
    let cut = agent.level();
    // The callers drop what the level refuses: only requests up to it arrive, unqueued.
    let mut levels = Vec::new();
    for _ in 0..4 {
        let start = t;
        while t < start + Duration::from_secs(1) {
            for u in 0..=agent.level().user() {
                agent.admit(t, user(u));
                agent.on_dequeue(Duration::ZERO);
            }
            // Under 2,000 a window: the windows close by time.
            t += 50 * MS;
        }
        levels.push(agent.level().user());
    }
    assert!(!agent.overloaded());
    // The first window closed here was the last overloaded one, cut once more.
    assert!(levels[0] < cut.user(), "{levels:?} from {cut}");
    let steps: Vec<u16> = levels.windows(2).map(|w| w[1] - w[0]).collect();
    assert_eq!(
        steps,
        [1, 1, 1],
        "{levels:?}: one level a window, never all at once"
    );
}

#[test]
fn the_mean_wait_is_what_counts_not_the_longest() {
    let mut agent = Dagor::new(DagorConfig::default()).expect("valid");
    let mut t = Duration::ZERO;
    for i in 0..1000u32 {
        agent.admit(t, user((i % 128) as u16));
        // One wait in ten is 100 ms: the mean is 10 ms, under 20 ms.
        agent.on_dequeue(if i % 10 == 0 {
            100 * MS
        } else {
            Duration::ZERO
        });
        t += MS;
    }
    agent.admit(t, Priority::HIGHEST);
    assert!(!agent.overloaded());
    assert_eq!(agent.level(), Priority::lowest(1));
}

#[test]
fn a_window_closes_after_its_requests_before_its_time() {
    let mut agent = Dagor::new(DagorConfig::default()).expect("valid");
    let t = Duration::ZERO;
    for i in 0..2000u32 {
        agent.admit(t, user((i % 128) as u16));
        agent.on_dequeue(50 * MS);
    }
    assert!(!agent.overloaded(), "not closed yet");
    agent.admit(t, Priority::HIGHEST);
    assert!(
        agent.overloaded(),
        "2,000 requests close it at the same instant"
    );
    assert!(agent.level() < Priority::lowest(1));
}

#[test]
fn the_business_priority_is_cut_before_any_user_of_a_higher_one() {
    let cfg = DagorConfig {
        business_levels: 2,
        ..DagorConfig::default()
    };
    let mut agent = Dagor::new(cfg).expect("valid");
    let mut t = Duration::ZERO;
    let feed = |agent: &mut Dagor, t: &mut Duration| {
        let mut admitted = [0u32; 2];
        // Business 1 is 20% of the traffic.
        for i in 0..1000u32 {
            let b = u16::from(i % 5 == 0);
            if agent.admit(*t, Priority::new(b, (i % 128) as u16).expect("in range")) {
                admitted[usize::from(b)] += 1;
                agent.on_dequeue(40 * MS);
            }
            *t += MS;
        }
        admitted
    };
    let mut last = [0; 2];
    for _ in 0..7 {
        last = feed(&mut agent, &mut t);
        assert!(
            last[0] == 800 || last[1] == 0,
            "business 0 cut while business 1 admitted: {last:?}"
        );
    }
    assert_eq!(last[1], 0, "six cuts of 5% take out business 1's 20%");
    assert!(last[0] < 800, "{last:?}");
    assert_eq!(agent.level().business(), 0);
}

#[test]
fn the_most_important_requests_stay_admitted() {
    let mut agent = Dagor::new(DagorConfig::default()).expect("valid");
    let mut t = Duration::ZERO;
    for _ in 0..200 {
        window(&mut agent, &mut t, 1280, 500 * MS);
    }
    assert_eq!(agent.level(), Priority::HIGHEST);
    assert!(agent.admit(t, Priority::HIGHEST));
    assert!(!agent.admit(t, user(1)));
}

/// A plant: a service of capacity 200 requests a window, whose queue waits 50 ms when more
/// are admitted and none otherwise, offered 600 a window (3 x its capacity, as in `tiers`).
#[test]
fn converges_on_the_capacity_of_a_known_plant() {
    let mut agent = Dagor::new(DagorConfig::default()).expect("valid");
    let mut t = Duration::ZERO;
    let mut wait = 50 * MS;
    let mut admitted = Vec::new();
    for _ in 0..60 {
        let a = window(&mut agent, &mut t, 600, wait);
        wait = if a > 200 { 50 * MS } else { Duration::ZERO };
        admitted.push(a);
    }
    // 0.95^k x 600 reaches 200 after about 22 windows: DAGOR's published steps are slow.
    assert!(admitted[10] > 300, "{admitted:?}");
    for &a in &admitted[30..] {
        assert!((180..=215).contains(&a), "{admitted:?}");
    }
}

#[test]
fn priorities_read_and_print_as_business_slash_user() {
    let p: Priority = "2/17".parse().expect("valid");
    assert_eq!((p.business(), p.user()), (2, 17));
    assert_eq!(p.to_string(), "2/17");
    assert_eq!(Priority::from_rank(p.rank()), Some(p));
    for bad in ["", "3", "1/128", "64/0", "a/b", "-1/2", "1/2/3"] {
        let err = bad.parse::<Priority>().expect_err(bad);
        assert!(err.to_string().contains("business/user"), "{err}");
    }
    assert!(Priority::new(0, 5) < Priority::new(1, 0));
}

#[test]
fn user_priorities_spread_over_every_level() {
    let mut seen = [0u32; USER_LEVELS as usize];
    for key in 0..12_800u64 {
        seen[usize::from(Priority::user_of(key, 0))] += 1;
    }
    assert!(seen.iter().all(|&n| (50..=150).contains(&n)), "{seen:?}");
    let moved = (0..128u64)
        .filter(|&k| Priority::user_of(k, 0) != Priority::user_of(k, 1))
        .count();
    assert!(
        moved > 100,
        "a new round re-draws the levels: {moved} of 128 moved"
    );
}

#[test]
fn bad_parameters_are_refused() {
    for (cfg, param) in [
        (
            DagorConfig {
                alpha: 0.0,
                ..DagorConfig::default()
            },
            "alpha",
        ),
        (
            DagorConfig {
                beta: f64::NAN,
                ..DagorConfig::default()
            },
            "beta",
        ),
        (
            DagorConfig {
                window_requests: 0,
                ..DagorConfig::default()
            },
            "window",
        ),
        (
            DagorConfig {
                business_levels: 65,
                ..DagorConfig::default()
            },
            "business_levels",
        ),
    ] {
        assert_eq!(Dagor::new(cfg).expect_err(param).param, param);
    }
}
