//! The cache and file-I/O stages on real files: hits, coalesced misses, failures, confinement.

use super::files::*;
use super::*;
use crate::request::Reply;
use bytes::Bytes;
use seda::RejectReason;
use std::sync::mpsc;
use std::time::Duration;
use tokio::sync::oneshot;

type Answer = oneshot::Receiver<crate::request::Answer>;

fn files(root: &Path) -> Files {
    Files {
        root: fs::canonicalize(root).expect("root"),
        max_file_bytes: 1 << 20,
        retry_after_s: 1,
        serve_hidden: false,
        max_waiters: 3,
        state: Mutex::new(State {
            cache: Cache::new(crate::Policy::S3fifo, 1 << 20),
            pending: HashMap::new(),
        }),
    }
}

fn lookup(key: &str) -> (Lookup, Answer, Meta) {
    let (head, ()) = http::Request::get(format!("/{key}"))
        .body(())
        .expect("request")
        .into_parts();
    let meta = Meta::new();
    let (reply, rx) = Reply::channel();
    let req = HttpRequest::new(meta.clone(), head.into(), Bytes::new(), reply);
    (
        Lookup {
            req,
            key: Key::Owned(Arc::from(key)),
        },
        rx,
        meta,
    )
}

/// A stand-in for the file-I/O stage that hands each read to the test.
fn capture(rt: &Runtime) -> (Sink<ReadFile>, mpsc::Receiver<ReadFile>) {
    let (tx, rx) = mpsc::channel();
    let tx = std::sync::Mutex::new(tx);
    let sink = rt
        .stage(Stage::builder("file_io").threads(1).handler(handler::each(
            move |ev: ReadFile, _cx| {
                let _ = tx.lock().map(|t| t.send(ev));
            },
        )))
        .expect("stage");
    (sink, rx)
}

#[test]
fn concurrent_misses_for_one_file_share_one_read() {
    let dir = std::env::temp_dir().join(format!("seda-http-coalesce-{}", std::process::id()));
    fs::create_dir_all(&dir).expect("dir");
    fs::write(dir.join("f"), "shared").expect("write");
    let rt = Runtime::start().expect("runtime");
    let (io, reads) = capture(&rt);
    let files = files(&dir);
    let mut answers = Vec::new();
    for _ in 0..3 {
        let (ev, rx, _) = lookup("f");
        files.lookup(ev, &io);
        answers.push(rx);
    }
    let read = reads
        .recv_timeout(Duration::from_secs(5))
        .expect("one read");
    assert!(
        reads.recv_timeout(Duration::from_millis(50)).is_err(),
        "a second read was started"
    );
    assert_eq!(files.state.lock().pending["f"].len(), 3);
    files.read(read);
    for rx in answers {
        let r = rx.blocking_recv().expect("answered").into_response();
        assert_eq!(r.status(), 200);
        assert_eq!(r.headers()[http::header::CONTENT_LENGTH], "6");
    }
    // Now cached: a lookup is answered without a read.
    let (ev, rx, _) = lookup("f");
    files.lookup(ev, &io);
    assert_eq!(rx.blocking_recv().expect("hit").status(), 200);
    assert!(reads.recv_timeout(Duration::from_millis(50)).is_err());
    rt.shutdown_timeout(Duration::from_secs(5));
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn a_read_whose_client_left_is_done_for_the_other_waiters() {
    let dir = std::env::temp_dir().join(format!("seda-http-reassign-{}", std::process::id()));
    fs::create_dir_all(&dir).expect("dir");
    fs::write(dir.join("g"), "gee").expect("write");
    let rt = Runtime::start().expect("runtime");
    let (io, reads) = capture(&rt);
    let files = files(&dir);
    let (first, rx1, meta1) = lookup("g");
    let (second, rx2, _) = lookup("g");
    files.lookup(first, &io);
    files.lookup(second, &io);
    let read = reads.recv_timeout(Duration::from_secs(5)).expect("read");
    assert_eq!(read.meta.id(), meta1.id());
    meta1.cancel_token().cancel();
    files.read_dropped(read, RejectReason::Expired);
    assert!(files.state.lock().pending.is_empty());
    assert_eq!(rx2.blocking_recv().expect("second answered").status(), 200);
    assert!(
        rx1.blocking_recv().is_err(),
        "the cancelled request gets no answer"
    );
    // When every waiter is gone, nothing is read and the pending entry goes.
    let (only, _rx, meta) = lookup("h");
    files.lookup(only, &io);
    let read = reads.recv_timeout(Duration::from_secs(5)).expect("read");
    meta.cancel_token().cancel();
    files.read_dropped(read, RejectReason::Expired);
    assert!(files.state.lock().pending.is_empty());
    rt.shutdown_timeout(Duration::from_secs(5));
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn a_miss_the_file_io_queue_cannot_take_is_answered_503_with_retry_after() {
    let dir = std::env::temp_dir().join(format!("seda-http-full-{}", std::process::id()));
    fs::create_dir_all(&dir).expect("dir");
    let rt = Runtime::start().expect("runtime");
    let (started_tx, started) = mpsc::channel();
    let (release, release_rx) = mpsc::channel::<()>();
    let (started_tx, release_rx) = (
        std::sync::Mutex::new(started_tx),
        std::sync::Mutex::new(release_rx),
    );
    // A file-I/O stage with one busy worker and room for one more read.
    let io = rt
        .stage(
            Stage::builder("file_io")
                .threads(1)
                .threshold(1)
                .handler(handler::each(move |ev: ReadFile, _cx| {
                    let _ = started_tx.lock().map(|t| t.send(ev.key.clone()));
                    let _ = release_rx.lock().map(|r| r.recv());
                })),
        )
        .expect("stage");
    let files = files(&dir);
    let (a, _ra, _) = lookup("a");
    files.lookup(a, &io);
    assert_eq!(
        &*started.recv_timeout(Duration::from_secs(5)).expect("a"),
        "a"
    );
    let (b, _rb, _) = lookup("b");
    files.lookup(b, &io);
    assert_eq!(io.len(), 1, "b waits in the queue");
    let (c, rc, _) = lookup("c");
    files.lookup(c, &io);
    let r = rc
        .blocking_recv()
        .expect("c answered at once")
        .into_response();
    assert_eq!(r.status(), 503);
    assert_eq!(r.headers()[http::header::RETRY_AFTER], "1");
    assert!(!files.state.lock().pending.contains_key("c"));
    release.send(()).expect("release a");
    release.send(()).expect("release b");
    rt.shutdown_timeout(Duration::from_secs(5));
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn waiters_on_one_file_are_capped_and_cancelled_ones_make_room() {
    let dir = std::env::temp_dir().join(format!("seda-http-cap-{}", std::process::id()));
    fs::create_dir_all(&dir).expect("dir");
    fs::write(dir.join("f"), "capped").expect("write");
    let rt = Runtime::start().expect("runtime");
    let (io, reads) = capture(&rt);
    let files = files(&dir); // at most 3 waiters per file
    let mut answers = Vec::new();
    let mut metas = Vec::new();
    for _ in 0..3 {
        let (ev, rx, meta) = lookup("f");
        files.lookup(ev, &io);
        answers.push(rx);
        metas.push(meta);
    }
    // A fourth is refused at once, like a full queue.
    let (ev, mut rx4, _) = lookup("f");
    files.lookup(ev, &io);
    let r = rx4
        .try_recv()
        .expect("the fourth is answered at once")
        .into_response();
    assert_eq!(r.status(), 503);
    assert_eq!(r.headers()[http::header::RETRY_AFTER], "1");
    // A waiter whose client left is dropped, which makes room for a new one.
    metas[1].cancel_token().cancel();
    let (ev, rx5, _) = lookup("f");
    files.lookup(ev, &io);
    assert_eq!(files.state.lock().pending["f"].len(), 3);
    let read = reads.recv_timeout(Duration::from_secs(5)).expect("read");
    files.read(read);
    let mut answers = answers.into_iter();
    assert_eq!(
        answers
            .next()
            .map(|rx| rx.blocking_recv().map(|r| r.status())),
        Some(Ok(StatusCode::OK))
    );
    assert!(
        answers
            .next()
            .map(|rx| rx.blocking_recv())
            .is_some_and(|r| r.is_err()),
        "the cancelled one is not answered"
    );
    assert_eq!(
        answers
            .next()
            .map(|rx| rx.blocking_recv().map(|r| r.status())),
        Some(Ok(StatusCode::OK))
    );
    assert_eq!(rx5.blocking_recv().expect("fifth").status(), 200);
    rt.shutdown_timeout(Duration::from_secs(5));
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn a_read_that_panics_still_answers_every_waiter() {
    let dir = std::env::temp_dir().join(format!("seda-http-panic-{}", std::process::id()));
    fs::create_dir_all(&dir).expect("dir");
    let rt = Runtime::start().expect("runtime");
    let (io, reads) = capture(&rt);
    let files = files(&dir);
    let (a, ra, _) = lookup("p");
    let (b, rb, _) = lookup("p");
    files.lookup(a, &io);
    files.lookup(b, &io);
    let read = reads.recv_timeout(Duration::from_secs(5)).expect("read");
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        files.read_with(read, |_| panic!("a read that panics"));
    }));
    assert!(outcome.is_err());
    for rx in [ra, rb] {
        assert_eq!(rx.blocking_recv().expect("answered").status(), 500);
    }
    assert!(files.state.lock().pending.is_empty());
    rt.shutdown_timeout(Duration::from_secs(5));
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn a_file_longer_than_its_size_said_is_not_read_past_the_limit() {
    // Files under /proc report a size of 0 and then give more: the read must stop at the
    // limit, not trust the size.
    let mut files = files(Path::new("/proc/self"));
    files.max_file_bytes = 64;
    let status = fs::metadata(files.root.join("status")).expect("/proc/self/status");
    assert_eq!(status.len(), 0);
    match files.load("status") {
        Err(Failure::TooLarge) => {}
        Ok(e) => panic!("served {} bytes past a limit of 64", e.body.len()),
        Err(f) => panic!("{f:?}"),
    }
}

#[test]
fn a_directory_swapped_for_a_symlink_between_check_and_open_leaks_nothing() {
    let top = std::env::temp_dir().join(format!("seda-http-race-{}", std::process::id()));
    let root = top.join("www");
    fs::create_dir_all(root.join("in")).expect("dir");
    fs::create_dir_all(top.join("out")).expect("dir");
    fs::write(root.join("in/f"), "inside").expect("write");
    fs::write(top.join("out/f"), "OUTSIDE").expect("write");
    std::os::unix::fs::symlink(top.join("out"), root.join("swap")).expect("ln");
    let files = files(&root);
    let stop = std::sync::atomic::AtomicBool::new(false);
    let (served, leaked) = std::thread::scope(|s| {
        s.spawn(|| {
            // Atomically exchange `www/in` (a directory) and `www/swap` (a symlink to a
            // directory outside the root), over and over.
            use rustix::fs::{CWD, RenameFlags, renameat_with};
            let (a, b) = (root.join("in"), root.join("swap"));
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let _ = renameat_with(CWD, &a, CWD, &b, RenameFlags::EXCHANGE);
            }
        });
        let (mut served, mut leaked) = (0, 0);
        for _ in 0..20_000 {
            if let Ok(e) = files.load("in/f") {
                served += 1;
                if &e.body[..] == b"OUTSIDE" {
                    leaked += 1;
                }
            }
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        (served, leaked)
    });
    assert_eq!(leaked, 0, "a file outside the root was read {leaked} times");
    assert!(served > 0, "the file inside was never served");
    let _ = fs::remove_dir_all(&top);
}
