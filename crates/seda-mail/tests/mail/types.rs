//! Each request type against each backend.

use seda::Meta;
use seda_mail::ServiceOptions;
use seda_mail::store::{Moved, Page, SearchField, SearchQuery, Sort, TRASH};

use crate::common::*;

#[test]
fn every_request_type_on_every_backend() {
    let corpus = small_corpus();
    let user = &corpus.users()[0];
    for store in backends("types", &corpus) {
        let backend = store.backend();
        let (rt, svc) = service(store.clone(), ServiceOptions::default());

        // Login: form page, wrong password, right password.
        assert_eq!(call(&svc, req("GET", "/", None, "")).status, 200);
        let bad = call(
            &svc,
            req("POST", "/login", None, "user=user1&password=nope"),
        );
        assert_eq!(bad.status, 403, "{backend}");
        let cookie = login(&svc, 1);
        let c = Some(cookie.as_str());

        // List folders.
        let r = call(&svc, req("GET", "/folders", c, ""));
        assert_eq!(r.status, 200, "{backend}");
        for f in &user.folders {
            assert!(
                r.body.contains(&format!("/folder?f={}\"", f.id)),
                "{backend}"
            );
        }

        // List messages, each sort, matches the store's order.
        let inbox = user
            .folders
            .iter()
            .filter(|f| f.name != TRASH)
            .max_by_key(|f| f.count)
            .unwrap();
        assert!(
            inbox.count >= 2,
            "the test corpus needs a folder of 2 messages"
        );
        let meta = Meta::new();
        for sort in [Sort::Date, Sort::Sender, Sort::Subject] {
            let r = call(
                &svc,
                req(
                    "GET",
                    &format!("/folder?f={}&sort={}", inbox.id, sort.name()),
                    c,
                    "",
                ),
            );
            assert_eq!(r.status, 200, "{backend} {sort:?}");
            let (_, rows) = store
                .messages(user.id, inbox.id, sort, Page::FIRST, 25, &meta)
                .expect("store list")
                .expect("own folder");
            assert_eq!(rows.len() as i64, inbox.count.min(25), "{backend}");
            let positions: Vec<usize> = rows
                .iter()
                .map(|m| r.body.find(&format!("/msg?id={}\"", m.id)).expect("listed"))
                .collect();
            assert!(
                positions.windows(2).all(|w| w[0] < w[1]),
                "{backend} {sort:?} order"
            );
            let keys: Vec<String> = rows
                .iter()
                .map(|m| match sort {
                    Sort::Date => format!("{:020}", i64::MAX - m.date),
                    Sort::Sender => m.sender.clone(),
                    Sort::Subject => m.subject.clone(),
                })
                .collect();
            // Text order is the database's collation: compare byte order only on SQLite.
            if backend == "sqlite" || sort == Sort::Date {
                assert!(
                    keys.windows(2).all(|w| w[0] <= w[1]),
                    "{backend} {sort:?} sorted"
                );
            }
        }

        // Show message.
        let (_, rows) = store
            .messages(user.id, inbox.id, Sort::Date, Page::FIRST, 5, &meta)
            .unwrap()
            .unwrap();
        let first = &rows[0];
        let r = call(&svc, req("GET", &format!("/msg?id={}", first.id), c, ""));
        assert_eq!(r.status, 200, "{backend}");
        assert!(
            r.body.contains(&seda_mail::html::escape(&first.subject)),
            "{backend}"
        );

        // Delete moves to Trash; deleting again purges only when the request says it was in
        // Trash: a retried request (same form) changes nothing.
        let trash = user.folders.iter().find(|f| f.name == TRASH).unwrap();
        let before = store.audit().unwrap();
        let r = call(&svc, req("POST", "/delete", c, &format!("id={}", first.id)));
        assert_eq!(r.status, 303, "{backend} {}", r.body);
        let m = store.message(user.id, first.id, &meta).unwrap().unwrap();
        assert_eq!(m.summary.folder_id, trash.id, "{backend}");
        for form in [
            format!("id={}", first.id),
            format!("id={}&from={}", first.id, inbox.id),
        ] {
            let r = call(&svc, req("POST", "/delete", c, &form));
            assert_eq!(r.status, 303, "{backend} {}", r.body);
            assert!(
                store.message(user.id, first.id, &meta).unwrap().is_some(),
                "{backend}: a retried delete ({form}) purged the message"
            );
        }
        let r = call(
            &svc,
            req("POST", "/delete", c, &format!("id={}&from=x", first.id)),
        );
        assert_eq!(r.status, 400, "{backend}");
        assert_eq!(
            store.delete(user.id, first.id, None, &meta).unwrap(),
            Moved::Unchanged { folder: trash.id }
        );
        assert_eq!(
            store
                .delete(user.id, first.id, Some(trash.id), &meta)
                .unwrap(),
            Moved::Purged { from: trash.id }
        );
        let after = store.audit().unwrap();
        assert_eq!(after.messages, before.messages - 1, "{backend}");
        assert_eq!(
            (after.bad_folders, after.folder_counts),
            (0, after.messages),
            "{backend}"
        );

        // Refile.
        let second = &rows[1];
        let to = user.folders.iter().find(|f| f.id != inbox.id).unwrap().id;
        let r = call(
            &svc,
            req("POST", "/refile", c, &format!("id={}&to={to}", second.id)),
        );
        assert_eq!(r.status, 303, "{backend}");
        assert_eq!(
            store
                .message(user.id, second.id, &meta)
                .unwrap()
                .unwrap()
                .summary
                .folder_id,
            to
        );
        assert_eq!(store.audit().unwrap().bad_folders, 0, "{backend}");

        // Search: headers and body; the store agrees with the page.
        let word = second.subject.split(' ').next_back().unwrap().to_string();
        let hits = store
            .search(user.id, query(&word, SearchField::Headers), &meta)
            .unwrap();
        assert!(
            hits.iter().any(|h| h.id == second.id),
            "{backend} search {word}"
        );
        let r = call(&svc, req("GET", &format!("/search?q={word}"), c, ""));
        assert_eq!(r.status, 200, "{backend}");
        assert!(
            r.body.contains(&format!("/msg?id={}\"", second.id)),
            "{backend}"
        );
        let body_hits = store
            .search(user.id, query("the", SearchField::Body), &meta)
            .unwrap();
        assert!(!body_hits.is_empty(), "{backend}");
        let r = call(&svc, req("GET", "/search?q=the&in=body", c, ""));
        assert_eq!(r.status, 200, "{backend}");

        // A cancelled request does nothing and says so.
        let cancelled = Meta::new();
        cancelled.cancel_token().cancel();
        assert!(
            store.delete(user.id, second.id, None, &cancelled).is_err(),
            "{backend}"
        );
        assert_eq!(
            store
                .message(user.id, second.id, &meta)
                .unwrap()
                .unwrap()
                .summary
                .folder_id,
            to
        );
        rt.shutdown();
    }
}

/// A search for `text` in `field`, up to 100 hits.
fn query(text: &str, field: SearchField) -> SearchQuery<'_> {
    SearchQuery {
        text,
        field,
        limit: 100,
    }
}
