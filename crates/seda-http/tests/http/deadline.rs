//! Deadlines at the front end: a request whose budget (`x-seda-deadline-ms`, `grpc-timeout`)
//! is spent is answered 504 before any stage sees it, and one whose deadline passes while it
//! waits in a stage's queue is dropped unserved and answered 504.

use std::thread;
use std::time::Duration;

use seda::RejectReason;

use crate::client::Conn;
use crate::eventually;
use crate::frontend::{WAIT, front, held_stage, spawn_get};

#[test]
fn a_spent_budget_never_reaches_a_stage() {
    let held = held_stage();
    let server = front(&held, false);
    let addr = server.local_addr();
    for header in ["x-seda-deadline-ms: 0\r\n", "grpc-timeout: 0m\r\n"] {
        let r = Conn::open(addr).get("/spent", header);
        assert_eq!(r.status, 504, "{header}");
        assert_eq!(r.header("x-seda-reject"), Some("deadline"));
        assert_eq!(r.header("retry-after"), None);
    }
    assert!(
        held.started.try_recv().is_err(),
        "a spent request reached the stage"
    );
    // A malformed budget is ignored: the request is served as one without a deadline.
    let m = thread::spawn(move || Conn::open(addr).get("/m", "x-seda-deadline-ms: soon\r\n"));
    assert_eq!(held.started.recv_timeout(WAIT).expect("m started"), "/m");
    held.release.send(()).expect("release m");
    assert_eq!(m.join().expect("m").status, 200);
    let s = server.stats();
    assert_eq!((s.deadline_missed, s.rejected_requests), (2, 0));
    server.shutdown(WAIT);
    held.runtime.shutdown_timeout(WAIT);
}

#[test]
fn a_request_whose_deadline_passes_in_the_queue_is_dropped_unserved() {
    let held = held_stage();
    let server = front(&held, false);
    let addr = server.local_addr();
    // a holds the stage's one thread; b queues behind it with 200 ms to live.
    let a = spawn_get(addr, "/a");
    assert_eq!(held.started.recv_timeout(WAIT).expect("a started"), "/a");
    let b = thread::spawn(move || Conn::open(addr).get("/b", "x-seda-deadline-ms: 200\r\n"));
    assert!(eventually(WAIT, || held.sink.len() == 1), "b queued");
    // Let b's deadline pass while it waits (time passing is the point, not a synchronisation).
    thread::sleep(Duration::from_millis(300));
    held.release.send(()).expect("release a");
    assert_eq!(a.join().expect("a").text(), "/a");
    let b = b.join().expect("b");
    assert_eq!(b.status, 504);
    assert_eq!(b.header("x-seda-reject"), Some("deadline"));
    assert_eq!(
        held.dropped.recv_timeout(WAIT).expect("b dropped"),
        RejectReason::Expired
    );
    assert!(held.started.try_recv().is_err(), "b reached the handler");
    let s = server.stats();
    assert_eq!((s.deadline_missed, s.unanswered_requests), (1, 0));
    server.shutdown(WAIT);
    held.runtime.shutdown_timeout(WAIT);
}
