//! Bad input gives 4xx (or a redirect to the login page), never 500.

use seda::Meta;
use seda_mail::ServiceOptions;
use seda_mail::store::{Page, Sort};

use crate::common::*;

#[test]
fn bad_input_is_4xx_never_500() {
    let corpus = small_corpus();
    for store in backends("input", &corpus) {
        let backend = store.backend();
        let (rt, svc) = service(store.clone(), ServiceOptions::default());
        let cookie = login(&svc, 1);
        let c = Some(cookie.as_str());
        // Another user's folder and message.
        let other = &corpus.users()[1];
        let other_folder = other.folders[0].id;
        let (_, rows) = store
            .messages(
                other.id,
                other_folder,
                Sort::Date,
                Page::FIRST,
                1,
                &Meta::new(),
            )
            .unwrap()
            .unwrap();
        let other_msg = rows[0].id;
        let own_folder = corpus.users()[0].folders[0].id;
        let long = "x".repeat(300);
        let cases: Vec<(&str, String, String, u16)> = vec![
            ("GET", "/msg?id=999999999".into(), "".into(), 404),
            ("GET", format!("/msg?id={other_msg}"), "".into(), 404),
            ("GET", "/msg?id=abc".into(), "".into(), 400),
            ("GET", "/msg?id=-3".into(), "".into(), 400),
            ("GET", "/msg".into(), "".into(), 400),
            (
                "GET",
                "/msg?id=99999999999999999999999".into(),
                "".into(),
                400,
            ),
            ("GET", format!("/folder?f={other_folder}"), "".into(), 404),
            ("GET", "/folder?f=%ZZ".into(), "".into(), 400),
            (
                "GET",
                format!("/folder?f={own_folder}&sort=evil"),
                "".into(),
                400,
            ),
            (
                "GET",
                format!("/folder?f={own_folder}&page=-1"),
                "".into(),
                400,
            ),
            (
                "GET",
                format!("/folder?f={own_folder}&page=99999999"),
                "".into(),
                400,
            ),
            ("POST", "/delete".into(), "id=999999999".into(), 404),
            ("POST", "/delete".into(), format!("id={other_msg}"), 404),
            ("POST", "/delete".into(), "id=%00%ff".into(), 400),
            ("POST", "/delete".into(), "garbage&&&==".into(), 400),
            (
                "POST",
                "/refile".into(),
                format!("id={other_msg}&to={own_folder}"),
                404,
            ),
            (
                "POST",
                "/refile".into(),
                format!("id=1&to={other_folder}"),
                404,
            ),
            ("POST", "/refile".into(), "id=1".into(), 400),
            ("GET", "/search".into(), "".into(), 400),
            ("GET", "/search?q=%20%20".into(), "".into(), 400),
            ("GET", format!("/search?q={long}"), "".into(), 400),
            ("GET", "/search?q=a&in=everything".into(), "".into(), 400),
            ("GET", "/search?q=%25_%5C".into(), "".into(), 200),
            ("GET", "/nope".into(), "".into(), 404),
            ("DELETE", "/msg?id=1".into(), "".into(), 404),
            ("POST", "/login".into(), "user=user1".into(), 400),
            (
                "POST",
                "/login".into(),
                format!("user={long}&password=x"),
                400,
            ),
        ];
        for (method, target, body, want) in cases {
            let r = call(&svc, req(method, &target, c, &body));
            assert_eq!(
                r.status, want,
                "{backend}: {method} {target} {body}: {}",
                r.body
            );
        }
        // Without a session: back to the login page, nothing done.
        let before = store.audit().unwrap();
        for (method, target, body) in [
            ("GET", "/folders", ""),
            ("POST", "/delete", "id=1"),
            ("GET", "/msg?id=1", ""),
        ] {
            let r = call(&svc, req(method, target, Some("sid=forged"), body));
            assert_eq!((r.status, r.header("location")), (303, Some("/login")));
        }
        assert_eq!(store.audit().unwrap(), before);
        rt.shutdown();
    }
}
