//! The peer launchers against the real servers: each installed peer starts from its generated
//! config, serves a file from the given root on 127.0.0.1, and leaves no process behind when
//! stopped. A peer that is not installed is skipped with a printed reason (a failure where
//! `SEDA_REQUIRE_PEERS=1`, as in CI).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use seda_lab::peers::{self, Peer, PeerError};
use seda_lab::{Child, free_port};

fn temp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("seda-lab-peers-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

/// `GET path` with HTTP/1.0; returns the status line and the body length.
fn get(addr: SocketAddr, path: &str) -> (String, usize) {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").unwrap();
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).expect("read the response");
    let text = String::from_utf8_lossy(&buf);
    let (head, body) = text.split_once("\r\n\r\n").expect("a head and a body");
    (head.lines().next().unwrap_or("").to_string(), body.len())
}

/// Processes whose command line mentions `needle`.
fn processes_mentioning(needle: &str) -> usize {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return 0;
    };
    dir.flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .filter(|c| String::from_utf8_lossy(c).contains(needle))
        .count()
}

type Launcher = fn(&Path, u16, &Path) -> Result<Command, PeerError>;

fn serves_a_file(name: &str, peer: &'static Peer, launch: Launcher) {
    let dir = temp_dir(name);
    let root = dir.join("www");
    std::fs::create_dir_all(root.join("dir00000")).unwrap();
    std::fs::write(root.join("dir00000/class1_2"), vec![b'x'; 3072]).unwrap();
    let port = free_port().unwrap();
    let work = dir.join("run");
    let cmd = match launch(&root, port, &work) {
        Ok(cmd) => cmd,
        Err(e) => match peers::Absent::from_error(peer, &e) {
            Some(absent) => {
                let what = format!("seda-lab test {name}_serves_the_root");
                return peers::skip(&what, peer, &absent.why);
            }
            None => panic!("{name}: {e}"),
        },
    };
    let mut child = Child::spawn(name, &cmd, None, &dir).expect("spawn");
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    child.wait_port(addr, Duration::from_secs(20)).unwrap();
    let (status, len) = get(addr, "/dir00000/class1_2");
    assert!(status.contains(" 200 "), "{name}: {status}");
    assert_eq!(len, 3072, "{name}: body length");
    let (status, _) = get(addr, "/dir00000/missing");
    assert!(status.contains(" 404 "), "{name}: {status}");
    let conf = work.to_string_lossy().into_owned();
    assert!(
        processes_mentioning(&conf) >= 1,
        "{name}: found by its config path"
    );
    child.stop();
    assert_eq!(
        processes_mentioning(&conf),
        0,
        "{name}: a process is left running after stop"
    );
    // nginx renames its worker's command line: what matters is that nothing still listens.
    assert!(
        TcpStream::connect_timeout(&addr, Duration::from_secs(1)).is_err(),
        "{name}: something still listens on {addr} after stop"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn nginx_serves_the_root() {
    serves_a_file("nginx", &peers::NGINX, peers::nginx::command);
}

#[test]
fn apache_serves_the_root() {
    serves_a_file("apache", &peers::APACHE, peers::apache::command);
}

#[test]
fn lighttpd_serves_the_root() {
    serves_a_file("lighttpd", &peers::LIGHTTPD, peers::lighttpd::command);
}
