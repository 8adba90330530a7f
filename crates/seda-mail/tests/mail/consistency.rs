//! Deletes and refiles under concurrent load with random cancellations and rejections: no
//! message is lost or duplicated, and every folder's count matches its messages.

use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;
use std::time::Duration;

use seda::Meta;
use seda_mail::ServiceOptions;
use seda_mail::corpus::{Rng, UserPlan};
use seda_mail::store::{Page, Sort, Store, TRASH};

use crate::common::*;

const WORKERS: u64 = 6;
const OPS_PER_WORKER: u64 = 120;

fn all_ids(store: &dyn Store, users: &[UserPlan]) -> BTreeSet<i64> {
    let meta = Meta::new();
    let mut ids = BTreeSet::new();
    for u in users {
        for f in &u.folders {
            let mut offset = 0;
            loop {
                let (_, rows) = store
                    .messages(u.id, f.id, Sort::Date, Page::Offset(offset), 200, &meta)
                    .unwrap()
                    .unwrap();
                for r in &rows {
                    assert!(ids.insert(r.id), "message {} listed twice", r.id);
                }
                if rows.len() < 200 {
                    break;
                }
                offset += 200;
            }
        }
    }
    ids
}

/// Logs in, retrying while the (tiny) login stage rejects.
fn login_retrying(svc: &seda_mail::MailService, i: u64) -> String {
    let body = format!("user=user{i}&password=pass{i}");
    for _ in 0..1000 {
        let r = call(svc, req("POST", "/login", None, &body));
        if r.status == 303 {
            let c = r.header("set-cookie").expect("cookie");
            return c.split(';').next().expect("sid").to_string();
        }
        assert_eq!(r.status, 503, "{}", r.body);
        std::thread::sleep(Duration::from_millis(2));
    }
    panic!("login rejected 1000 times");
}

#[test]
fn moves_under_cancellation_and_rejection_lose_and_duplicate_nothing() {
    let corpus = small_corpus();
    for store in backends("consistency", &corpus) {
        let backend = store.backend();
        let before = store.audit().unwrap();
        let ids_before = all_ids(store.as_ref(), corpus.users());
        assert_eq!(ids_before.len() as i64, before.messages);
        // One worker thread and a queue of one per stage: concurrent clients get rejected.
        let (rt, svc) = service(
            store.clone(),
            ServiceOptions {
                threads: 1,
                threshold: 1,
                ..ServiceOptions::default()
            },
        );
        let mut handles = Vec::new();
        for w in 0..WORKERS {
            let svc = svc.clone();
            let store: Arc<dyn Store> = store.clone();
            let users = corpus.users().to_vec();
            handles.push(std::thread::spawn(move || {
                let user = &users[(w % users.len() as u64) as usize];
                let parity = w / users.len() as u64;
                let meta = Meta::new();
                let mut own = Vec::new();
                // A message that may be in Trash is never deleted again (that would purge it):
                // it is refiled out first, and only a confirmed refile clears the doubt.
                let mut maybe_in_trash: HashSet<i64> = HashSet::new();
                for f in &user.folders {
                    let (_, rows) = store
                        .messages(user.id, f.id, Sort::Date, Page::FIRST, 200, &meta)
                        .unwrap()
                        .unwrap();
                    for id in rows
                        .iter()
                        .map(|r| r.id)
                        .filter(|id| (*id as u64) % 2 == parity)
                    {
                        own.push(id);
                        if f.name == TRASH {
                            maybe_in_trash.insert(id);
                        }
                    }
                }
                let targets: Vec<i64> = user
                    .folders
                    .iter()
                    .filter(|f| f.name != TRASH)
                    .map(|f| f.id)
                    .collect();
                let mut rng = Rng::new(w + 100);
                let mut cookie = login_retrying(&svc, user.id as u64);
                let (mut ok, mut turned_away) = (0u64, 0u64);
                for _ in 0..OPS_PER_WORKER {
                    if own.is_empty() {
                        break;
                    }
                    let id = own[rng.below(own.len() as u64) as usize];
                    let refile = maybe_in_trash.contains(&id) || rng.below(2) == 0;
                    let to = targets[rng.below(targets.len() as u64) as usize];
                    let r = if refile {
                        req(
                            "POST",
                            "/refile",
                            Some(&cookie),
                            &format!("id={id}&to={to}"),
                        )
                    } else {
                        maybe_in_trash.insert(id);
                        req("POST", "/delete", Some(&cookie), &format!("id={id}"))
                    };
                    let token = r.meta.cancel_token().clone();
                    let mode = rng.below(10);
                    if mode == 0 {
                        token.cancel(); // cancelled before admission
                    }
                    let resp = match svc.submit(r) {
                        Err((_, resp)) => resp,
                        Ok((_, rx)) => {
                            if mode <= 2 {
                                // cancelled while queued or inside the database
                                std::thread::sleep(Duration::from_micros(rng.below(1500)));
                                token.cancel();
                            }
                            rx.blocking_recv().expect("answered")
                        }
                    };
                    match resp.status {
                        303 => {
                            ok += 1;
                            if refile {
                                maybe_in_trash.remove(&id);
                            }
                        }
                        503 => turned_away += 1,
                        // A lost session would be a bug, but log in again rather than hide
                        // the count check behind a panic in a thread.
                        s => panic!("unexpected status {s}: {}", resp.body),
                    }
                    if resp.status == 303 && resp.header("location") == Some("/login") {
                        cookie = login_retrying(&svc, user.id as u64);
                    }
                }
                (ok, turned_away)
            }));
        }
        let (mut ok, mut turned_away) = (0, 0);
        for h in handles {
            let (o, t) = h.join().expect("worker");
            ok += o;
            turned_away += t;
        }
        let report = rt.shutdown();
        assert!(report.drained, "{backend}");
        let after = store.audit().unwrap();
        let ids_after = all_ids(store.as_ref(), corpus.users());
        eprintln!(
            "{backend}: {ok} moves done, {turned_away} rejected or cancelled; {} messages before and {} after",
            before.messages, after.messages
        );
        assert!(
            ok > 0 && turned_away > 0,
            "{backend}: both outcomes exercised"
        );
        assert_eq!(
            after.messages, before.messages,
            "{backend}: nothing lost or purged"
        );
        assert_eq!(ids_after, ids_before, "{backend}: the same messages");
        assert_eq!(after.bad_folders, 0, "{backend}: folder counts match");
        assert_eq!(after.folder_counts, after.messages, "{backend}");
    }
}
