//! Folder listings: each sort order reads an index whose order is its own (no sort step,
//! however large the folder), and keyset pages (the UI's "next" and "previous" links) list
//! exactly what page numbers list.

use seda::Meta;
use seda_mail::Corpus;
use seda_mail::corpus::FolderPlan;
use seda_mail::store::{self, Page, Sort, Store};

use crate::common::*;

const SORTS: [Sort; 3] = [Sort::Date, Sort::Sender, Sort::Subject];

fn corpus() -> Corpus {
    Corpus::with_max_folder(3, 5, 300)
}

fn largest(corpus: &Corpus) -> (i64, &FolderPlan) {
    corpus
        .users()
        .iter()
        .flat_map(|u| u.folders.iter().map(move |f| (u.id, f)))
        .max_by_key(|(_, f)| f.count)
        .expect("a folder")
}

fn ids(s: &dyn Store, user: i64, folder: i64, sort: Sort, page: Page, n: u32) -> Vec<i64> {
    let (_, rows) = s
        .messages(user, folder, sort, page, n, &Meta::new())
        .unwrap()
        .expect("the user's folder");
    rows.iter().map(|m| m.id).collect()
}

/// SQLite's plan of a listing, on one line.
fn plan(s: &dyn Store, folder: i64, sort: Sort, page: Page) -> String {
    s.listing_plan(folder, sort, page).unwrap().join(" | ")
}

#[test]
fn every_sort_and_page_reads_an_index_and_sorts_nothing() {
    let corpus = corpus();
    let (user, f) = largest(&corpus);
    let s = store::open(&temp_db("listing_plan"), "").unwrap();
    s.reset().unwrap();
    s.load(&corpus).unwrap();
    let middle = ids(s.as_ref(), user, f.id, Sort::Date, Page::Offset(20), 1)[0];
    for sort in SORTS {
        for page in [
            Page::FIRST,
            Page::Offset(20),
            Page::After(middle),
            Page::Before(middle),
        ] {
            let p = plan(s.as_ref(), f.id, sort, page);
            assert!(!p.contains("TEMP B-TREE"), "{sort:?} {page:?}: {p}");
            assert!(p.contains("INDEX"), "{sort:?} {page:?}: {p}");
        }
    }
}

#[test]
fn a_store_made_before_the_listing_indexes_gets_them_at_upgrade() {
    let corpus = corpus();
    let (_, f) = largest(&corpus);
    let path = temp_db("listing_upgrade");
    let s = store::open(&path, "").unwrap();
    s.reset().unwrap();
    s.load(&corpus).unwrap();
    let before = s.audit().unwrap();
    // The indexes an older version made: sender and subject ascending, then the date.
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch(
            "DROP INDEX m_sender_order; DROP INDEX m_subject_order; \
             CREATE INDEX m_sender ON messages (folder_id, sender, sent); \
             CREATE INDEX m_subject ON messages (folder_id, subject, sent);",
        )
        .unwrap();
    let s = store::open(&path, "").unwrap();
    let old = plan(s.as_ref(), f.id, Sort::Sender, Page::FIRST);
    assert!(old.contains("TEMP B-TREE"), "{old}");
    s.upgrade().unwrap();
    s.upgrade().unwrap(); // twice is fine
    for sort in SORTS {
        let p = plan(s.as_ref(), f.id, sort, Page::FIRST);
        assert!(!p.contains("TEMP B-TREE"), "{sort:?}: {p}");
    }
    assert_eq!(s.audit().unwrap(), before, "nothing else changed");
}

#[test]
fn keyset_pages_list_what_page_numbers_list_on_every_backend() {
    let corpus = corpus();
    let (user, f) = largest(&corpus);
    assert!(f.count > 40, "a folder of several pages: {}", f.count);
    const N: u32 = 7;
    for s in backends("listing", &corpus) {
        let b = s.backend();
        for sort in SORTS {
            let mut by_offset: Vec<i64> = Vec::new();
            let mut by_key: Vec<Vec<i64>> = Vec::new();
            let mut page = Page::FIRST;
            for k in 0.. {
                let a = ids(s.as_ref(), user, f.id, sort, Page::Offset(k * N), N);
                let b2 = ids(s.as_ref(), user, f.id, sort, page, N);
                if a.is_empty() && b2.is_empty() {
                    break;
                }
                assert_eq!(a, b2, "{b} {sort:?} page {k}");
                by_offset.extend(&a);
                by_key.push(b2.clone());
                page = Page::After(*b2.last().expect("a full walk"));
            }
            assert_eq!(by_offset.len() as i64, f.count, "{b} {sort:?}");
            // Backwards from the last page with "previous" links.
            for w in by_key.windows(2).rev() {
                let back = ids(s.as_ref(), user, f.id, sort, Page::Before(w[1][0]), N);
                assert_eq!(back, w[0], "{b} {sort:?}");
            }
        }
        // A cursor that is not this user's message lists from the start.
        let first = ids(s.as_ref(), user, f.id, Sort::Sender, Page::FIRST, N);
        assert_eq!(
            ids(
                s.as_ref(),
                user,
                f.id,
                Sort::Sender,
                Page::After(999_999_999),
                N
            ),
            first,
            "{b}"
        );
    }
}

#[test]
fn the_pages_links_are_keyset_links_that_the_service_follows() {
    let corpus = corpus();
    let (user, f) = largest(&corpus);
    let s = store::open(&temp_db("listing_links"), "").unwrap();
    s.reset().unwrap();
    s.load(&corpus).unwrap();
    let (rt, svc) = service(s.clone(), seda_mail::ServiceOptions::default());
    let cookie = login(&svc, user as u64);
    let page_of = |target: &str| call(&svc, req("GET", target, Some(&cookie), "")).body;
    let first = page_of(&format!("/folder?f={}&sort=subject", f.id));
    let next = first
        .split("href=\"")
        .filter_map(|l| l.split('"').next())
        .find(|l| l.contains("after="))
        .expect("a next link")
        .replace("&amp;", "&");
    assert!(next.contains("page=1"), "{next}");
    assert_eq!(
        page_of(&next),
        page_of(&format!("/folder?f={}&sort=subject&page=1", f.id))
    );
    rt.shutdown();
}
