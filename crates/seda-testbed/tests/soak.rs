//! The safe-release soak in small (`seda bench terminate-soak` is the full one): requests
//! terminated while holding memory, a lock guard, an open file and a database statement (a
//! quarter of them after a write transaction) leave nothing behind, on every backend that
//! answers. Its own test binary, so the process's open files and resident memory are only the
//! soak's.

use std::sync::Arc;
use std::time::Duration;

use seda_mail::Corpus;
use seda_mail::store::{self, Store};
use seda_testbed::mail::soak::{self, SoakConfig};

const PG_URL: &str = "postgres://postgres@127.0.0.1:5432/test";
const MY_URL: &str = "mysql://root@127.0.0.1:3306/test";

fn soak_on(store: Arc<dyn Store>, requests: u64, file: &std::path::Path) {
    let config = SoakConfig {
        store,
        user: 1,
        requests,
        warmup: requests / 5,
        workers: 4,
        threshold: Duration::from_millis(1),
        hold_bytes: 64 * 1024,
        file: file.to_path_buf(),
    };
    let r = soak::run(&config).expect("soak runs");
    eprintln!("{r:?}");
    assert_eq!((r.terminated, r.completed), (requests, 0), "{}", r.backend);
    assert!(r.wrote > 0, "{}: some requests wrote first", r.backend);
    let problems = r.problems(config.hold_bytes);
    assert!(problems.is_empty(), "{}: {problems:?}", r.backend);
}

#[test]
fn terminated_requests_release_everything_they_held() {
    let dir = std::env::temp_dir().join(format!("seda-soak-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("held");
    std::fs::write(&file, b"held\n").unwrap();
    let corpus = Corpus::with_max_folder(2, 5, 200);
    let candidates = [
        ("sqlite", dir.join("soak.db").display().to_string(), 1000),
        ("postgres", PG_URL.to_string(), 100),
        ("mysql", MY_URL.to_string(), 100),
    ];
    for (name, url, requests) in candidates {
        match store::open(&url, "t_soak_") {
            Ok(s) => {
                s.reset().expect("tables");
                s.load(&corpus).expect("corpus");
                soak_on(s, requests, &file);
            }
            Err(e) => {
                assert_ne!(name, "sqlite", "SQLite must always work: {e}");
                seda_peers::skip("seda-mail soak", seda_peers::database(name), &e.to_string());
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
