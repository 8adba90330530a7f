//! `seda proxy` as a user runs it: in front of `seda serve static`, over real sockets.

mod common;

use std::io::{BufRead, Read, Write};
use std::net::TcpStream;
use std::process::Command;

use seda_lab::peers;

fn get(addr: &str, path: &str) -> String {
    let mut s = TcpStream::connect(addr).expect("connect");
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

/// A fresh directory named after `name` with `files` in it.
fn temp_root(name: &str, files: &[(&str, &[u8])]) -> std::path::PathBuf {
    let root = std::env::temp_dir().join(format!("seda-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).unwrap();
    for (file, content) in files {
        std::fs::write(root.join(file), content).unwrap();
    }
    root
}

/// `seda serve static` on `root`, and `seda proxy` in front of it with `target_ms` and any
/// `extra` flags: (upstream, proxy).
fn static_behind_proxy(
    root: &std::path::Path,
    target_ms: &str,
    extra: &[&str],
) -> (common::Server, common::Server) {
    let upstream = common::start(&[
        "serve".as_ref(),
        "static".as_ref(),
        "--addr".as_ref(),
        "127.0.0.1:0".as_ref(),
        "--root".as_ref(),
        root.as_os_str(),
    ]);
    let upstream_url = format!("http://{}", upstream.addr);
    let mut args: Vec<&std::ffi::OsStr> = vec![
        "proxy".as_ref(),
        "--listen".as_ref(),
        "127.0.0.1:0".as_ref(),
        "--upstream".as_ref(),
        upstream_url.as_ref(),
        "--target-ms".as_ref(),
        target_ms.as_ref(),
    ];
    args.extend(extra.iter().map(std::ffi::OsStr::new));
    (upstream, common::start(&args))
}

#[test]
fn proxies_a_static_server_and_forwards_its_answers() {
    let root = temp_root("proxy", &[("hello.txt", b"hello through the proxy\n")]);
    let (mut upstream, mut proxy) = static_behind_proxy(&root, "500", &[]);

    let ok = get(&proxy.addr, "/hello.txt");
    assert!(ok.starts_with("HTTP/1.1 200"), "{ok}");
    assert!(ok.ends_with("hello through the proxy\n"), "{ok}");
    let missing = get(&proxy.addr, "/missing.txt");
    assert!(missing.starts_with("HTTP/1.1 404"), "{missing}");

    for child in [&mut proxy.child, &mut upstream.child] {
        child.kill().unwrap();
        child.wait().unwrap();
    }
    let mut printed = String::new();
    proxy.stdout.read_to_string(&mut printed).unwrap();
    assert!(printed.contains("p90 target 500 ms"), "{printed}");
    let _ = std::fs::remove_dir_all(&root);
}

/// `--admin` (on by default, loopback): each route's admission in `/metrics`, which promtool
/// accepts (where Debian's `prometheus` is installed), in `/_seda/stats`, and drawn as a stage
/// in the dashboard's feed; never on the proxy's own port.
#[test]
fn the_admin_address_serves_each_routes_metrics() {
    let root = temp_root("proxy-admin", &[("a.txt", b"a\n")]);
    let (mut upstream, mut proxy) = static_behind_proxy(&root, "500", &[]);
    // `start` stopped at the listen line; the admin line follows the routes.
    let admin = loop {
        let mut line = String::new();
        assert!(
            proxy.stdout.read_line(&mut line).unwrap() > 0,
            "no admin line"
        );
        if let Some(rest) = line.strip_prefix("admin: http://") {
            break rest.split('/').next().unwrap().to_string();
        }
    };
    for _ in 0..5 {
        assert!(get(&proxy.addr, "/a.txt").starts_with("HTTP/1.1 200"));
    }
    let metrics = get(&admin, "/metrics");
    let stats = get(&admin, "/_seda/stats");
    // The dashboard's feed draws the route as a stage fed from outside (sampled once a second).
    let mut live = String::new();
    for _ in 0..50 {
        live = get(&admin, "/_seda/live");
        if live.contains("\"name\":\"/\"") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let on_service_port = get(&proxy.addr, "/metrics");
    for child in [&mut proxy.child, &mut upstream.child] {
        child.kill().unwrap();
        child.wait().unwrap();
    }
    let _ = std::fs::remove_dir_all(&root);
    assert!(
        metrics.contains("seda_layer_admitted_total{layer=\"/\"} 5"),
        "{metrics}"
    );
    assert!(
        metrics.contains("seda_layer_completed_total{layer=\"/\"} 5"),
        "{metrics}"
    );
    assert!(metrics.contains("seda_layer_rejected_total{layer=\"/\",reason=\"rate\"} 0"));
    assert!(
        metrics.contains("process_resident_memory_bytes "),
        "{metrics}"
    );
    assert!(stats.contains("\"layers\""), "{stats}");
    assert!(live.contains("\"name\":\"/\""), "{live}");
    assert!(live.contains("\"from\":\"outside\""), "{live}");
    // The upstream has no /metrics: the proxy forwarded the request there.
    assert!(
        on_service_port.starts_with("HTTP/1.1 404"),
        "{on_service_port}"
    );
    let body = metrics.split("\r\n\r\n").nth(1).unwrap_or_default();
    let Some(promtool) = peers::PROMTOOL.find() else {
        let what = "seda-cli test the_admin_address_serves_each_routes_metrics (promtool)";
        return peers::skip(what, &peers::PROMTOOL, "not installed");
    };
    let mut promtool = Command::new(promtool)
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    promtool
        .stdin
        .take()
        .unwrap()
        .write_all(body.as_bytes())
        .unwrap();
    let check = promtool.wait_with_output().unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&check.stdout),
        String::from_utf8_lossy(&check.stderr)
    );
    assert!(
        check.status.success() && said.trim().is_empty(),
        "promtool: {said}\n{body}"
    );
}

#[test]
fn without_an_upstream_it_says_what_to_give() {
    let out = Command::new(env!("CARGO_BIN_EXE_seda"))
        .arg("proxy")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--upstream"), "{err}");
    let out = Command::new(env!("CARGO_BIN_EXE_seda"))
        .args(["proxy", "--upstream", "https://127.0.0.1:1"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("only http://"),
        "{err}"
    );
}

/// HAProxy in front of the proxy takes its weight from the agent-check: full while the proxy
/// admits everything, lower or drained while it sheds (skipped where HAProxy is not installed;
/// `.ci/packages` installs it).
#[test]
fn haproxy_weights_the_proxy_by_its_admission_state() {
    let Some(haproxy_bin) = peers::HAPROXY.find() else {
        let what = "seda-cli test haproxy_weights_the_proxy_by_its_admission_state";
        return peers::skip(what, &peers::HAPROXY, "not installed");
    };
    let dir = temp_root("agent", &[("big", &[b'x'; 1 << 20])]);
    // A 1 ms target that 1 MB responses to 64 clients cannot meet: the proxy must shed.
    let (mut upstream, mut proxy) = static_behind_proxy(&dir, "1", &["--agent", "127.0.0.1:0"]);
    let agent = loop {
        let mut line = String::new();
        assert!(
            proxy.stdout.read_line(&mut line).unwrap() > 0,
            "no agent line"
        );
        if let Some(a) = line.strip_prefix("agent-check: ") {
            break a.trim().to_string();
        }
    };
    let mut reply = String::new();
    TcpStream::connect(&agent)
        .unwrap()
        .read_to_string(&mut reply)
        .unwrap();
    assert_eq!(reply, "ready,100%\n");

    let front = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let sock = dir.join("stats.sock");
    let cfg = format!(
        "global\n  stats socket {} mode 600 level admin\n\
         defaults\n  mode http\n  timeout connect 1s\n  timeout client 5s\n  timeout server 5s\n\
         frontend f\n  bind {front}\n  default_backend b\n\
         backend b\n  server r1 {} check inter 200ms agent-check agent-port {} agent-inter 100ms weight 100\n",
        sock.display(),
        proxy.addr,
        agent.rsplit(':').next().unwrap(),
    );
    std::fs::write(dir.join("haproxy.cfg"), cfg).unwrap();
    let mut haproxy = Command::new(haproxy_bin)
        .args(["-db", "-f"])
        .arg(dir.join("haproxy.cfg"))
        .spawn()
        .unwrap();
    let weights_until = |secs: u64, stop: &dyn Fn(u32) -> bool| {
        let end = std::time::Instant::now() + std::time::Duration::from_secs(secs);
        let mut seen = Vec::new();
        while std::time::Instant::now() < end {
            std::thread::sleep(std::time::Duration::from_millis(50));
            if let Some(w) = haproxy_weight(&sock) {
                seen.push(w);
                if stop(w) {
                    break;
                }
            }
        }
        seen
    };
    let idle = weights_until(5, &|w| w == 100);
    let flood_end = std::time::Instant::now() + std::time::Duration::from_secs(3);
    let clients: Vec<_> = (0..64)
        .map(|_| {
            let addr = proxy.addr.clone();
            std::thread::spawn(move || {
                let mut shed = 0u32;
                while std::time::Instant::now() < flood_end {
                    shed += u32::from(get(&addr, "/big").starts_with("HTTP/1.1 503"));
                }
                shed
            })
        })
        .collect();
    let loaded = weights_until(3, &|w| w < 100);
    let shed: u32 = clients.into_iter().map(|c| c.join().unwrap()).sum();
    let through = get(&front.to_string(), "/big");
    for child in [&mut haproxy, &mut proxy.child, &mut upstream.child] {
        child.kill().unwrap();
        child.wait().unwrap();
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(idle.last(), Some(&100), "idle weights {idle:?}");
    assert!(shed > 0, "the proxy never shed: the test measured nothing");
    assert!(
        loaded.iter().any(|&w| w < 100),
        "weights while shedding {loaded:?}"
    );
    assert!(
        through.starts_with("HTTP/1.1 200") || through.starts_with("HTTP/1.1 503"),
        "{through}"
    );
}

/// The weight HAProxy gives server `b/r1`, from its stats socket.
fn haproxy_weight(sock: &std::path::Path) -> Option<u32> {
    let mut s = std::os::unix::net::UnixStream::connect(sock).ok()?;
    s.write_all(b"show stat\n").ok()?;
    let mut csv = String::new();
    s.read_to_string(&mut csv).ok()?;
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next()?.trim_start_matches("# ").split(',').collect();
    let column = |name: &str| header.iter().position(|h| *h == name);
    let (weight, status) = (column("weight")?, column("status")?);
    let row: Vec<&str> = lines.find(|l| l.starts_with("b,r1,"))?.split(',').collect();
    // An agent's `drain` puts the server in the DRAIN state and leaves its weight as it was.
    if row.get(status)?.contains("DRAIN") {
        return Some(0);
    }
    row.get(weight)?.parse().ok()
}
