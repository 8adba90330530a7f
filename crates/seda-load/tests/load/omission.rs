//! Coordinated omission: a server that stalls for 1 s must show in the open model's tail, while
//! the closed model's percentiles barely move (only the few requests caught in the stall see it).

use std::time::{Duration, Instant};

use seda_load::Arrivals;

use crate::common::*;

const MS: fn(u64) -> Duration = Duration::from_millis;

/// A server that holds every reply between 1 s and 2 s after `t0` until 2 s.
fn stalling_server(t0: Instant) -> TestServer {
    TestServer::start(move |s| {
        let t = s.at.duration_since(t0);
        if t >= MS(1000) && t < MS(2000) {
            Reply::delayed(MS(2000) - t)
        } else {
            Reply::ok()
        }
    })
}

#[test]
fn a_stall_shows_in_the_open_model_tail_and_not_in_the_closed_median() {
    let t0 = Instant::now();
    let server = stalling_server(t0);
    let r = seda_load::run(open(&server.url("/"), 1000.0, Arrivals::Constant, MS(3000))).unwrap();
    let l = r.summary.latency;
    assert!(l.max_ms >= 950.0, "open max {l:?}");
    // A third of the requests arrive during the stall and wait 0..1 s: the p99 is near 1 s.
    assert!(l.p99_ms >= 900.0, "open p99 {l:?}");
    // (No bound on the open p50: draining the stall's backlog takes a while on a busy machine.)

    let t1 = Instant::now();
    let server = stalling_server(t1);
    let r = seda_load::run(closed(&server.url("/"), 8, MS(1), MS(3000))).unwrap();
    let l = r.summary.latency;
    // Only the 8 requests in flight saw the stall.
    assert!(l.max_ms >= 900.0, "closed max {l:?}");
    assert!(
        l.p50_ms < 20.0 && l.p99_ms < 100.0,
        "closed percentiles moved: {l:?}"
    );
}

#[test]
fn nginx_paused_with_sigstop() {
    let Some(nginx) = Nginx::start("nginx_paused_with_sigstop", |www| {
        std::fs::write(www.join("1k.html"), vec![b'x'; 1024]).unwrap();
    }) else {
        return;
    };
    let pause = |n: &Nginx| {
        std::thread::scope(|s| {
            s.spawn(|| {
                // The stimulus: 1 s of run, 1 s stopped, then resumed.
                std::thread::sleep(MS(1000));
                n.pause(true);
                std::thread::sleep(MS(1000));
                n.pause(false);
            });
        });
    };
    let url = nginx.url("/1k.html");
    let (open, closed_r) = std::thread::scope(|s| {
        let run =
            s.spawn(|| seda_load::run(open(&url, 2000.0, Arrivals::Poisson, MS(3000))).unwrap());
        pause(&nginx);
        let open = run.join().unwrap();
        let run = s.spawn(|| seda_load::run(closed(&url, 8, MS(1), MS(3000))).unwrap());
        pause(&nginx);
        (open, run.join().unwrap())
    });
    let l = open.summary.latency;
    eprintln!("open: {l:?}\nclosed: {:?}", closed_r.summary.latency);
    assert!(l.max_ms >= 1000.0, "open max {l:?}");
    assert!(l.p99_ms >= 900.0, "open p99 {l:?}");
    let c = closed_r.summary.latency;
    // A closed user that sent just after the stop waits a little less than the pause.
    assert!(c.max_ms >= 950.0, "closed max {c:?}");
    assert!(
        c.p50_ms < 20.0 && c.p99_ms < 100.0,
        "closed percentiles moved: {c:?}"
    );
}
