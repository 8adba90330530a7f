//! Driving a load leaves the calling thread's CPUs alone: the load generator pins the thread it
//! runs on, and a pinned caller made every later scenario of the same process (`seda lab run
//! all`, `seda lab repeat`) see one CPU and run its servers unpinned.

use std::time::Duration;

use seda_lab::{Lab, free_port};
use seda_load::{Closed, LoadConfig, Model, Target};

#[test]
fn a_load_does_not_pin_the_thread_that_drives_it() {
    let cpus = || std::thread::available_parallelism().map_or(1, |n| n.get());
    let before = cpus();
    if before < 2 {
        eprintln!("skipped: needs two CPUs");
        return;
    }
    let dir = std::env::temp_dir().join(format!("seda-lab-pinning-{}", std::process::id()));
    let lab = Lab::new("pinning", &dir, "seda".as_ref(), true).unwrap();
    assert_eq!(lab.load_cpu, Some(1));
    // Nothing listens there: the load only fails to connect, which is all this needs.
    let target = Target::parse(&format!("http://127.0.0.1:{}/", free_port().unwrap())).unwrap();
    let model = Model::Closed(Closed {
        users: 1,
        think: Duration::from_millis(10),
        think_exponential: false,
        ramp: Duration::ZERO,
    });
    let mut cfg = LoadConfig::new(target, model).unwrap();
    cfg.duration = Duration::from_millis(300);
    let _ = lab.load(cfg);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(cpus(), before);
}
