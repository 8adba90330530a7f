//! The loaded-machine detection fires on real interference: a busy loop pinned to the server's
//! core beside a CPU-bound "server" takes about half of it, and the watch says so.

use std::process::Command;
use std::time::Duration;

use seda_lab::Child;
use seda_lab::health::{LoadHealth, Watch, Watched};

fn busy_loop() -> Command {
    let mut c = Command::new("sh");
    c.args(["-c", "while :; do :; done"]);
    c
}

#[test]
fn a_process_hogging_the_servers_core_makes_the_run_loaded() {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let pinned = ["/usr/bin/taskset", "/bin/taskset"]
        .iter()
        .any(|p| std::path::Path::new(p).exists());
    if cpus < 2 || !pinned || !std::path::Path::new("/proc/stat").exists() {
        eprintln!("skipped: needs two CPUs, taskset and /proc");
        return;
    }
    let dir = std::env::temp_dir().join(format!("seda-lab-health-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let server = Child::spawn("server", &busy_loop(), Some(0), &dir).unwrap();
    let hog = Child::spawn("hog", &busy_loop(), Some(0), &dir).unwrap();
    let watch = Watch::start(Watched {
        server_pids: vec![server.pid()],
        server_cpu: Some(0),
        load_cpu: Some(1),
    });
    std::thread::sleep(Duration::from_secs(4));
    let seconds = watch.stop();
    hog.stop();
    server.stop();
    let _ = std::fs::remove_dir_all(&dir);
    let h = LoadHealth::assess("hogged".into(), seconds, None);
    eprintln!(
        "server {:.0}%, others on its core {:.0}% (worst second {:.0}%): {:?}",
        h.server_cpu_share * 100.0,
        h.server_core_others_share * 100.0,
        h.worst_second_server_core_others_share * 100.0,
        h.loaded_because
    );
    assert!(h.duration_s >= 2.0, "{h:?}");
    assert!(
        h.loaded_because
            .iter()
            .any(|w| w.contains("of the server's core")),
        "the hog took {:.0}% of the server's core, the server {:.0}%: {:?}",
        h.server_core_others_share * 100.0,
        h.server_cpu_share * 100.0,
        h.loaded_because
    );
}
