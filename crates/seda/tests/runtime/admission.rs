use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use seda::{Knob, Meta, Quality, RejectReason, Runtime, Stage, handler};

use crate::Counter;

/// A stage whose handler blocks until released, so its queue fills deterministically.
fn gated(
    rt: &Runtime,
    name: &str,
    threshold: usize,
) -> (seda::Sink<u64>, mpsc::Sender<()>, Counter) {
    let (open_tx, open_rx) = mpsc::channel::<()>();
    let open_rx = std::sync::Mutex::new(open_rx);
    let done = Counter::default();
    let d = done.clone();
    let sink = rt
        .stage(
            Stage::builder(name)
                .threshold(threshold)
                .batch(1)
                .handler(handler::each(move |_: u64, _| {
                    let _ = open_rx.lock().unwrap().recv();
                    d.add(1);
                })),
        )
        .unwrap();
    (sink, open_tx, done)
}

#[test]
fn threshold_rejects_with_the_event_back() {
    let rt = Runtime::start().unwrap();
    let (sink, open, done) = gated(&rt, "gated", 3);
    // One event is taken by the worker (blocked), three fill the queue.
    sink.enqueue(0).unwrap();
    assert!(crate::eventually(Duration::from_secs(5), || sink.is_empty()));
    for i in 1..=3 {
        sink.enqueue(i).unwrap();
    }
    let rejected = sink.enqueue(99).unwrap_err();
    assert_eq!(rejected.reason, RejectReason::QueueFull);
    assert_eq!(rejected.event, 99);
    assert!(!sink.enqueue_lossy(100));
    for _ in 0..4 {
        open.send(()).unwrap();
    }
    rt.shutdown();
    assert_eq!(done.get(), 4);
    let stats = rt.stats();
    let s = &stats.stages[0].totals.counters;
    assert_eq!(s.rejected["queue_full"], 2);
    assert_eq!((s.admitted, s.completed, s.arrivals), (4, 4, 6));
}

#[test]
fn enqueue_many_is_all_or_none() {
    let rt = Runtime::start().unwrap();
    let (sink, open, done) = gated(&rt, "gated", 4);
    sink.enqueue(0).unwrap();
    assert!(crate::eventually(Duration::from_secs(5), || sink.is_empty()));
    sink.enqueue_many(vec![1, 2, 3]).unwrap();
    let back = sink.enqueue_many(vec![4, 5]).unwrap_err();
    assert_eq!(back.event, vec![4, 5]);
    assert_eq!(sink.len(), 3, "nothing of the rejected batch entered");
    sink.enqueue_many(vec![6]).unwrap();
    for _ in 0..5 {
        open.send(()).unwrap();
    }
    rt.shutdown();
    assert_eq!(done.get(), 5);
}

#[test]
fn prepared_enqueue_commits_aborts_and_releases_on_drop() {
    let rt = Runtime::start().unwrap();
    let (sink, open, done) = gated(&rt, "gated", 2);
    sink.enqueue(0).unwrap();
    assert!(crate::eventually(Duration::from_secs(5), || sink.is_empty()));
    let p = sink.enqueue_prepare(vec![1, 2]).unwrap();
    assert_eq!(
        sink.enqueue(3).unwrap_err().reason,
        RejectReason::QueueFull,
        "slots reserved"
    );
    assert_eq!(p.abort(), vec![1, 2]);
    {
        let _forgotten = sink.enqueue_prepare(vec![4, 5]).unwrap();
    } // dropped: aborts
    assert_eq!(sink.len(), 0);
    let p = sink.enqueue_prepare(vec![6, 7]).unwrap();
    p.commit();
    assert_eq!(sink.len(), 2);
    for _ in 0..3 {
        open.send(()).unwrap();
    }
    rt.shutdown();
    assert_eq!(done.get(), 3);
}

#[test]
fn enqueue_timeout_waits_for_room_then_gives_up() {
    let rt = Runtime::start().unwrap();
    let (sink, open, done) = gated(&rt, "gated", 1);
    sink.enqueue(0).unwrap();
    assert!(crate::eventually(Duration::from_secs(5), || sink.is_empty()));
    sink.enqueue(1).unwrap();
    let t = Instant::now();
    let err = sink
        .enqueue_timeout(2, Duration::from_millis(50))
        .unwrap_err();
    assert_eq!(err.reason, RejectReason::TimedOut);
    assert!(t.elapsed() >= Duration::from_millis(50));
    // Now release the worker while a producer waits: it gets in.
    let s2 = sink.clone();
    let waiter = std::thread::spawn(move || s2.enqueue_timeout(3, Duration::from_secs(10)));
    open.send(()).unwrap();
    assert!(waiter.join().unwrap().is_ok());
    for _ in 0..2 {
        open.send(()).unwrap();
    }
    rt.shutdown();
    assert_eq!(done.get(), 3);
    // The wait that gave up counts as timed out, not as a full queue.
    let stats = rt.stats();
    let s = &stats.stages[0].totals.counters;
    assert_eq!((s.rejected["timed_out"], s.rejected["queue_full"]), (1, 0));
}

#[test]
fn a_sink_of_the_wrong_event_type_is_told_apart_from_a_missing_stage() {
    let rt = Runtime::start().unwrap();
    rt.stage(Stage::builder("numbers").handler(handler::each(|_: u64, _| {})))
        .unwrap();
    let wrong = rt.sink::<String>("numbers").unwrap_err();
    assert!(
        matches!(&wrong, seda::BuildError::WrongEventType { stage, actual, .. }
            if stage == "numbers" && *actual == "u64"),
        "{wrong:?}"
    );
    assert!(
        wrong.to_string().contains("alloc::string::String"),
        "{wrong}"
    );
    let missing = rt.sink::<u64>("letters").unwrap_err();
    assert!(matches!(missing, seda::BuildError::NoSuchStage(ref n) if n == "letters"));
    let pool = rt.resize_pool("letters", 1, 2).unwrap_err();
    assert!(matches!(pool, seda::BuildError::NoSuchPool(_)), "{pool:?}");
    assert!(rt.sink::<u64>("numbers").is_ok());
    rt.shutdown();
}

#[test]
fn rate_limit_admits_the_burst_then_rejects() {
    let rt = Runtime::start().unwrap();
    let sink = rt
        .stage(
            Stage::builder("limited")
                .rate_limit(1.0, 5.0)
                .handler(handler::each(|_: u64, _| {})),
        )
        .unwrap();
    let results: Vec<_> = (0..8)
        .map(|i| sink.enqueue(i).map_err(|r| r.reason))
        .collect();
    assert_eq!(results.iter().filter(|r| r.is_ok()).count(), 5);
    assert!(results[5..].iter().all(|r| *r == Err(RejectReason::Rate)));
    rt.shutdown();
}

#[test]
fn predicates_compose() {
    let rt = Runtime::start().unwrap();
    let sink = rt
        .stage(
            Stage::builder("even")
                .admit_if(|n: &u64| {
                    if n.is_multiple_of(2) {
                        Ok(())
                    } else {
                        Err(RejectReason::Class)
                    }
                })
                .handler(handler::each(|_: u64, _| {})),
        )
        .unwrap();
    assert!(sink.enqueue(2).is_ok());
    assert_eq!(sink.enqueue(3).unwrap_err().reason, RejectReason::Class);
    rt.shutdown();
}

#[derive(Debug)]
struct Req {
    meta: Meta,
    reply: mpsc::Sender<&'static str>,
}

impl seda::Event for Req {
    fn meta(&self) -> Option<&Meta> {
        Some(&self.meta)
    }
}

#[test]
fn expired_and_cancelled_requests_are_dropped_not_served() {
    let rt = Runtime::start().unwrap();
    let (open_tx, open_rx) = mpsc::channel::<()>();
    let open_rx = std::sync::Mutex::new(open_rx);
    let sink = rt
        .stage(
            Stage::builder("work")
                .batch(1)
                .handler(handler::each(move |r: Req, _| {
                    let _ = open_rx.lock().unwrap().recv();
                    let _ = r.reply.send("served");
                }))
                .on_drop(|r: Req, reason| {
                    assert_eq!(reason, RejectReason::Expired);
                    let _ = r.reply.send("503");
                }),
        )
        .unwrap();
    let (tx, rx) = mpsc::channel();
    // Already past its deadline: refused at the door.
    let late = Meta::new().with_deadline(Instant::now());
    let err = sink
        .enqueue(Req {
            meta: late,
            reply: tx.clone(),
        })
        .unwrap_err();
    assert_eq!(err.reason, RejectReason::Expired);
    drop(err); // it holds a reply sender
    // Blocker, then one that expires while queued, one whose client goes away, one fine.
    sink.enqueue(Req {
        meta: Meta::new(),
        reply: tx.clone(),
    })
    .unwrap();
    assert!(crate::eventually(Duration::from_secs(5), || sink.is_empty()));
    let soon = Meta::new().with_deadline(Instant::now() + Duration::from_millis(30));
    sink.enqueue(Req {
        meta: soon,
        reply: tx.clone(),
    })
    .unwrap();
    let gone = Meta::new();
    sink.enqueue(Req {
        meta: gone.clone(),
        reply: tx.clone(),
    })
    .unwrap();
    sink.enqueue(Req {
        meta: Meta::new(),
        reply: tx.clone(),
    })
    .unwrap();
    gone.cancel_token().cancel();
    std::thread::sleep(Duration::from_millis(40));
    open_tx.send(()).unwrap(); // blocker
    open_tx.send(()).unwrap(); // the fine one
    rt.shutdown();
    drop(tx);
    let mut replies: Vec<_> = rx.iter().collect();
    replies.sort();
    assert_eq!(replies, vec!["503", "503", "served", "served"]);
    let c = &rt.stats().stages[0].totals.counters;
    assert_eq!(
        (c.dropped["expired"], c.rejected["expired"], c.completed),
        (2, 1, 2)
    );
}

/// Counts what the stage tells a controller that admits everything.
#[derive(Default)]
struct Tally {
    admitted: Counter,
    dequeued: Counter,
}

struct TallyController(Arc<Tally>);

impl seda::AdmissionController for TallyController {
    fn name(&self) -> &'static str {
        "tally"
    }
    fn admit(&mut self, _: seda::Time, _: u8) -> Result<(), RejectReason> {
        self.0.admitted.add(1);
        Ok(())
    }
    fn undo_admit(&mut self, _: seda::Time, _: u8) {}
    fn on_dequeue(&mut self, _: seda::Time, _: Duration) -> bool {
        self.0.dequeued.add(1);
        false
    }
    fn on_complete(&mut self, _: seda::Time, _: u8, _: Duration, _: Duration) {}
    fn state(&self) -> Vec<(&'static str, f64)> {
        Vec::new()
    }
}

#[test]
fn the_controller_hears_of_every_dequeue_even_of_cancelled_events() {
    let rt = Runtime::start().unwrap();
    let (open_tx, open_rx) = mpsc::channel::<()>();
    let open_rx = std::sync::Mutex::new(open_rx);
    let tally = Arc::new(Tally::default());
    let sink = rt
        .stage(
            Stage::builder("counted")
                .threads(1)
                .batch(1)
                .admission(Box::new(TallyController(tally.clone())))
                .handler(handler::each(move |r: Req, _| {
                    let _ = open_rx.lock().unwrap().recv();
                    let _ = r.reply.send("served");
                }))
                .on_drop(|r: Req, _| {
                    let _ = r.reply.send("503");
                }),
        )
        .unwrap();
    let (tx, rx) = mpsc::channel();
    sink.enqueue(Req {
        meta: Meta::new(),
        reply: tx.clone(),
    })
    .unwrap();
    assert!(crate::eventually(Duration::from_secs(5), || sink.is_empty()));
    // Queued behind the blocker, its client goes away: dropped at dequeue, not served.
    let gone = Meta::new();
    sink.enqueue(Req {
        meta: gone.clone(),
        reply: tx.clone(),
    })
    .unwrap();
    gone.cancel_token().cancel();
    open_tx.send(()).unwrap();
    rt.shutdown();
    drop(tx);
    let mut replies: Vec<_> = rx.iter().collect();
    replies.sort();
    assert_eq!(replies, vec!["503", "served"]);
    assert_eq!((tally.admitted.get(), tally.dequeued.get()), (2, 2));
}

#[test]
fn drop_after_drops_events_that_waited_too_long() {
    let rt = Runtime::start().unwrap();
    let (open_tx, open_rx) = mpsc::channel::<()>();
    let open_rx = std::sync::Mutex::new(open_rx);
    let served = Counter::default();
    let s = served.clone();
    let sink = rt
        .stage(
            Stage::builder("sel")
                .batch(1)
                .drop_after(Duration::from_millis(20))
                .handler(handler::each(move |_: u64, _| {
                    let _ = open_rx.lock().unwrap().recv();
                    s.add(1);
                })),
        )
        .unwrap();
    sink.enqueue(0).unwrap();
    assert!(crate::eventually(Duration::from_secs(5), || sink.is_empty()));
    sink.enqueue(1).unwrap();
    std::thread::sleep(Duration::from_millis(40));
    open_tx.send(()).unwrap();
    rt.shutdown();
    assert_eq!(served.get(), 1);
    assert_eq!(rt.stats().stages[0].totals.counters.dropped["expired"], 1);
}

/// A controller that refuses class 0, records what the stage tells it, and publishes a
/// quality of 0.25.
struct Recorder {
    log: Arc<Mutex<Vec<&'static str>>>,
    quality: seda_control::KnobCell,
}

impl Recorder {
    fn new(log: Arc<Mutex<Vec<&'static str>>>) -> Self {
        let quality = seda_control::KnobCell::new::<Quality>();
        quality.set(0.25);
        Recorder { log, quality }
    }
}

impl seda::AdmissionController for Recorder {
    fn name(&self) -> &'static str {
        "recorder"
    }
    fn admit(&mut self, _now: seda::Time, class: u8) -> Result<(), RejectReason> {
        if class == 0 {
            return Err(RejectReason::Class);
        }
        self.log.lock().unwrap().push("admit");
        Ok(())
    }
    fn undo_admit(&mut self, _now: seda::Time, _class: u8) {
        self.log.lock().unwrap().push("undo");
    }
    fn on_complete(&mut self, _: seda::Time, class: u8, response: Duration, sojourn: Duration) {
        assert_eq!(class, 1);
        assert!(
            response >= sojourn,
            "response counts from birth, sojourn from admission"
        );
        self.log.lock().unwrap().push("complete");
    }
    fn state(&self) -> Vec<(&'static str, f64)> {
        vec![("quality", self.quality.get())]
    }
    fn knob(&self, name: &str) -> Option<seda_control::KnobCell> {
        (name == "quality").then(|| self.quality.clone())
    }
}

#[test]
fn an_admission_controller_sees_each_admitted_event_once_and_the_handler_reads_its_state() {
    let rt = Runtime::start().unwrap();
    let log = Arc::new(Mutex::new(Vec::new()));
    let quality = Arc::new(Mutex::new(None));
    let q = quality.clone();
    let knob = Knob::<Quality>::new();
    let k = knob.clone();
    let sink = rt
        .stage(
            Stage::builder("controlled")
                .threshold(1)
                .admission(Box::new(Recorder::new(log.clone())))
                .knob(&knob)
                .handler(handler::each(move |_: Req, _| {
                    *q.lock().unwrap() = Some(k.get());
                })),
        )
        .unwrap();
    let (tx, _rx) = mpsc::channel();
    let low = Req {
        meta: Meta::new().with_class(0),
        reply: tx.clone(),
    };
    assert_eq!(sink.enqueue(low).unwrap_err().reason, RejectReason::Class);
    // Two class-1 events at once exceed the threshold: the controller's admissions are undone.
    let pair = vec![
        Req {
            meta: Meta::new().with_class(1),
            reply: tx.clone(),
        },
        Req {
            meta: Meta::new().with_class(1),
            reply: tx.clone(),
        },
    ];
    assert_eq!(
        sink.enqueue_many(pair).unwrap_err().reason,
        RejectReason::QueueFull
    );
    sink.enqueue(Req {
        meta: Meta::new().with_class(1),
        reply: tx,
    })
    .unwrap();
    rt.shutdown();
    assert_eq!(
        *log.lock().unwrap(),
        vec!["admit", "admit", "undo", "undo", "admit", "complete"]
    );
    assert_eq!(*quality.lock().unwrap(), Some(0.25));
    let snap = &rt.stats().stages[0];
    let c = snap.controller.as_ref().unwrap();
    assert_eq!((c.name.as_ref(), c.state["quality"]), ("recorder", 0.25));
}

#[test]
fn a_knob_the_configured_controller_lacks_refuses_the_stage() {
    // The code attaches a controller with a quality knob; the file swaps in one without.
    let config = seda::Config::from_toml("[stages.knobbed.admission]\nkind = \"vegas\"\n").unwrap();
    let rt = Runtime::builder().config(config).start().unwrap();
    let knob = Knob::<Quality>::new();
    let log = Arc::new(Mutex::new(Vec::new()));
    let err = rt
        .stage(
            Stage::builder("knobbed")
                .admission(Box::new(Recorder::new(log)))
                .knob(&knob)
                .handler(handler::each(|_: u64, _| {})),
        )
        .unwrap_err();
    assert!(
        matches!(&err, seda::BuildError::Knob { stage, .. } if stage == "knobbed"),
        "{err}"
    );
    assert!(err.to_string().contains("`vegas`"), "{err}");
    assert!(!knob.is_bound());
    // The degradation controller from the file has the knob.
    let config = seda::Config::from_toml(
        "[stages.degraded.admission]\nkind = \"degradation\"\ntarget_s = 0.5\n",
    )
    .unwrap();
    let rt2 = Runtime::builder().config(config).start().unwrap();
    rt2.stage(
        Stage::builder("degraded")
            .knob(&knob)
            .handler(handler::each(|_: u64, _| {})),
    )
    .unwrap();
    assert!(knob.is_bound());
    assert_eq!(knob.get(), 1.0);
    rt.shutdown();
    rt2.shutdown();
}

#[test]
fn a_burst_on_a_quiet_stage_is_admitted_when_its_service_time_can_serve_it() {
    // Our response-time controller, 1 s target: a queue budget of 0.5 s to start with.
    let controller = seda_control::TunedResponseTimeController::new(
        seda_control::TunedConfig::new(Duration::from_secs(1)),
    )
    .unwrap();
    let rt = Runtime::start().unwrap();
    let sink = rt
        .stage(
            Stage::builder("quiet")
                .threads(1)
                .admission(Box::new(controller))
                .handler(handler::each(|r: Req, _| {
                    let _ = r.reply.send("done");
                })),
        )
        .unwrap();
    let (tx, rx) = mpsc::channel();
    let req = || Req {
        meta: Meta::new(),
        reply: tx.clone(),
    };
    // Quiet: 20 requests 20 ms apart (about 50 a second, each served in microseconds).
    for _ in 0..20 {
        sink.enqueue(req()).unwrap();
        rx.recv_timeout(Duration::from_secs(5)).unwrap();
        std::thread::sleep(Duration::from_millis(20));
    }
    // Then 60 at once. The quiet departure rate alone bounds the queue at about 25 (50/s x
    // 0.5 s); one server at the stage's service time serves far more within the budget.
    let admitted = (0..60).filter(|_| sink.enqueue(req()).is_ok()).count();
    rt.shutdown();
    assert_eq!(admitted, 60);
}
