//! Authentication through the service: random session ids, a cap per user that never evicts
//! another user, and a limit on failed logins per name.

use seda_mail::ServiceOptions;
use seda_mail::session::SessionLimits;

use crate::common::*;

#[test]
fn logins_are_capped_per_user_and_failures_are_limited() {
    let corpus = small_corpus();
    let path = temp_db("auth");
    let store = seda_mail::store::open(&path, "").unwrap();
    store.reset().unwrap();
    store.load(&corpus).unwrap();
    let limits = SessionLimits {
        per_user: 4,
        failures: 3,
        ..SessionLimits::default()
    };
    let (rt, svc) = service(
        store,
        ServiceOptions {
            sessions: limits,
            ..ServiceOptions::default()
        },
    );
    // User 2's session survives user 1 logging in over and over.
    let other = login(&svc, 2);
    let mut mine = Vec::new();
    for _ in 0..40 {
        mine.push(login(&svc, 1));
    }
    let folders = |cookie: &str| call(&svc, req("GET", "/folders", Some(cookie), "")).status;
    assert_eq!(folders(&other), 200);
    assert_eq!(folders(&mine[39]), 200);
    assert_eq!(folders(&mine[0]), 303, "user 1's oldest session ended");
    // Ids: 128 bits in hex, all different.
    let ids: std::collections::HashSet<&str> =
        mine.iter().map(|c| c.trim_start_matches("sid=")).collect();
    assert_eq!(ids.len(), 40);
    assert!(ids.iter().all(|i| i.len() == 32));

    // Three wrong passwords, then even the right one is refused for a while; others are not.
    for _ in 0..3 {
        let r = call(
            &svc,
            req("POST", "/login", None, "user=user3&password=guess"),
        );
        assert_eq!(r.status, 403, "{}", r.body);
    }
    let r = call(
        &svc,
        req("POST", "/login", None, "user=user3&password=pass3"),
    );
    assert_eq!(r.status, 429, "{}", r.body);
    assert_eq!(r.header("retry-after"), Some("60"));
    login(&svc, 2);
    rt.shutdown();
}
