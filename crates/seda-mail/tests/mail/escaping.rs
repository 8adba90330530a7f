//! Hostile subjects, senders and bodies are escaped on every page.

use seda::Meta;
use seda_mail::ServiceOptions;
use seda_mail::store::{Page, Sort};

use crate::common::*;

const HOSTILE: &str = "<script>alert('x')</script>\"><img src=x onerror=alert(1)>&amp;";

#[test]
fn hostile_text_is_escaped_everywhere() {
    let corpus = small_corpus();
    let path = temp_db("escaping");
    let store = seda_mail::store::open(&path, "").unwrap();
    store.reset().unwrap();
    store.load(&corpus).unwrap();
    let user = &corpus.users()[0];
    let folder = user.folders[0].id;
    let (_, rows) = store
        .messages(user.id, folder, Sort::Date, Page::FIRST, 1, &Meta::new())
        .unwrap()
        .unwrap();
    let id = rows[0].id;
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute(
            "UPDATE messages SET subject = ?1, sender = ?1, body = ?1 WHERE id = ?2",
            rusqlite::params![format!("{HOSTILE} search-me"), id],
        )
        .unwrap();
        conn.execute(
            "UPDATE folders SET name = ?1 WHERE id = ?2",
            rusqlite::params![HOSTILE, folder],
        )
        .unwrap();
    }
    let (rt, svc) = service(store, ServiceOptions::default());
    let cookie = login(&svc, 1);
    let c = Some(cookie.as_str());
    let pages = [
        call(&svc, req("GET", "/folders", c, "")),
        call(&svc, req("GET", &format!("/folder?f={folder}"), c, "")),
        call(&svc, req("GET", &format!("/msg?id={id}"), c, "")),
        call(&svc, req("GET", "/search?q=search-me", c, "")),
        call(&svc, req("GET", "/search?q=search-me&in=body", c, "")),
        call(&svc, req("GET", "/search?q=%3Cscript%3E", c, "")),
    ];
    for p in &pages {
        assert_eq!(p.status, 200, "{}", p.body);
        assert!(!p.body.contains("<script>"), "{}", p.body);
        assert!(!p.body.contains("<img"), "{}", p.body);
        assert!(!p.body.contains("'x'"), "{}", p.body);
    }
    assert!(
        pages[2]
            .body
            .contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;")
    );
    assert!(pages[2].body.contains("&amp;amp;"));
    assert!(pages[3].body.contains(&format!("/msg?id={id}\"")));
    rt.shutdown();
}
