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

/// Whether this machine can pin processes to two cores and read `/proc`.
fn can_pin() -> bool {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let pinned = ["/usr/bin/taskset", "/bin/taskset"]
        .iter()
        .any(|p| std::path::Path::new(p).exists());
    let ok = cpus >= 2 && pinned && std::path::Path::new("/proc/stat").exists();
    if !ok {
        eprintln!("skipped: needs two CPUs, taskset and /proc");
    }
    ok
}

#[test]
fn a_process_hogging_the_servers_core_makes_the_run_loaded() {
    if !can_pin() {
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
        service_pids: Vec::new(),
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

#[test]
fn a_service_the_system_relies_on_is_not_counted_as_others() {
    if !can_pin() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("seda-lab-service-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // A "database" busy on the generator's core, as the lab's unpinned PostgreSQL can be.
    let service = Child::spawn("service", &busy_loop(), Some(1), &dir).unwrap();
    // The server's core is left unwatched: the other test's hogs run there.
    let watched = |service_pids| Watched {
        server_pids: Vec::new(),
        server_cpu: None,
        load_cpu: Some(1),
        service_pids,
    };
    let run = |w| {
        let watch = Watch::start(w);
        std::thread::sleep(Duration::from_secs(3));
        LoadHealth::assess("service".into(), watch.stop(), None)
    };
    let unknown = run(watched(Vec::new()));
    let known = run(watched(vec![service.pid()]));
    service.stop();
    let _ = std::fs::remove_dir_all(&dir);
    let services = known
        .seconds
        .iter()
        .map(|s| s.services_cpu_share)
        .sum::<f64>()
        / known.seconds.len().max(1) as f64;
    eprintln!(
        "others on the generator's core: {:.0}% unknown, {:.0}% known as a service ({:.0}%)",
        unknown.load_core_others_share * 100.0,
        known.load_core_others_share * 100.0,
        services * 100.0
    );
    assert!(unknown.loaded(), "{unknown:?}");
    assert!(services > 0.5, "the service ran {services}");
    assert!(!known.loaded(), "{:?}", known.loaded_because);
}
