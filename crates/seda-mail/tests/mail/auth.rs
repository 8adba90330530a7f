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

#[test]
fn the_class_comes_from_the_session_unless_a_trusted_proxy_sets_it() {
    let corpus = small_corpus();
    let path = temp_db("auth_class");
    let store = seda_mail::store::open(&path, "").unwrap();
    store.reset().unwrap();
    store.load(&corpus).unwrap();
    // The operator gives user 2 class 3.
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute("UPDATE users SET class = 3 WHERE name = 'user2'", [])
        .unwrap();
    let claims = |cookie: Option<&str>| {
        seda_mail::MailRequest::parse(
            "GET",
            "/folders",
            cookie,
            Some("7"),
            b"",
            std::time::Instant::now(),
        )
        .unwrap()
    };
    let (rt, svc) = service(store.clone(), ServiceOptions::default());
    assert_eq!(
        svc.class_of(&claims(None)),
        0,
        "a client cannot claim a class"
    );
    let c1 = login(&svc, 1);
    let c2 = login(&svc, 2);
    // A session ranks above a login of the same user class: 2 x class + 1.
    assert_eq!(svc.class_of(&claims(Some(&c1))), 1);
    assert_eq!(svc.class_of(&claims(Some(&c2))), 7, "the session's class");
    let login_as = |name: &str, cookie: Option<&str>| {
        seda_mail::MailRequest::parse(
            "POST",
            "/login",
            cookie,
            Some("7"),
            format!("user={name}&password=x").as_bytes(),
            std::time::Instant::now(),
        )
        .unwrap()
    };
    // A login is a new session of the account it names, cookie or not: 2 x class.
    assert_eq!(svc.class_of(&login_as("user2", Some(&c2))), 6);
    assert_eq!(svc.class_of(&login_as("user1", None)), 0);
    assert_eq!(
        svc.class_of(&login_as("nobody", None)),
        seda_mail::NEW_SESSION_CLASS
    );
    let cookie_claim = format!("{c1}; class=7");
    let r = seda_mail::MailRequest::parse(
        "GET",
        "/folders",
        Some(&cookie_claim),
        None,
        b"",
        std::time::Instant::now(),
    )
    .unwrap();
    assert_eq!(svc.class_of(&r), 1, "nor through the cookie");
    rt.shutdown();

    let (rt, svc) = service(
        store,
        ServiceOptions {
            trust_class_header: true,
            ..ServiceOptions::default()
        },
    );
    assert_eq!(svc.class_of(&claims(None)), 7, "a trusted proxy's header");
    rt.shutdown();
}
