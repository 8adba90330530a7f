//! `seda fileset specweb99` and `seda serve static` as a user runs them: the binary, a real
//! socket, SIGINT.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

fn temp_dir(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("seda-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    p
}

#[test]
fn fileset_then_serve_then_sigint() {
    let seda = env!("CARGO_BIN_EXE_seda");
    let root = temp_dir("www");
    let out = Command::new(seda)
        .args(["fileset", "specweb99", "--dirs", "2", "--out"])
        .arg(&root)
        .output()
        .expect("run seda fileset");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let files: usize = (0..2)
        .map(|d| {
            std::fs::read_dir(root.join(format!("dir{d:05}")))
                .expect("dir")
                .count()
        })
        .sum();
    assert_eq!(files, 72);
    assert_eq!(
        std::fs::metadata(root.join("dir00001/class3_8"))
            .expect("file")
            .len(),
        921_600
    );

    let common::Server {
        mut child,
        mut stdout,
        addr,
        admin,
    } = common::start_with_admin(&[
        "serve".as_ref(),
        "static".as_ref(),
        "--addr".as_ref(),
        "127.0.0.1:0".as_ref(),
        "--admin".as_ref(),
        "127.0.0.1:0".as_ref(),
        "--root".as_ref(),
        root.as_os_str(),
    ]);
    let admin = admin.expect("admin address");
    let fetch = common::get;
    for path in ["/_seda/stats", "/metrics", "/"] {
        assert!(
            fetch(&admin, path).starts_with("HTTP/1.1 200"),
            "{path} on the admin address"
        );
    }
    assert!(fetch(&addr, "/_seda/stats").starts_with("HTTP/1.1 404"));
    assert!(fetch(&addr, "/metrics").starts_with("HTTP/1.1 404"));

    let mut s = TcpStream::connect(&addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    s.write_all(b"GET /dir00001/class0_4 HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        .expect("send");
    let mut response = Vec::new();
    s.read_to_end(&mut response).expect("read");
    let on_disk = std::fs::read(root.join("dir00001/class0_4")).expect("file");
    assert!(response.starts_with(b"HTTP/1.1 200 OK"));
    assert!(response.ends_with(&on_disk));

    let killed = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(killed.success());
    let status = child.wait().expect("wait");
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).expect("rest of stdout");
    assert!(status.success(), "exit status {status}, output {rest}");
    assert!(rest.contains("stopped: 0 connection(s) cut"), "{rest}");
    let _ = std::fs::remove_dir_all(&root);
}

/// `GET path` with `Connection: close`; the status code.
fn status_of(addr: &str, path: &str) -> u16 {
    common::get(addr, path)
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0)
}

#[test]
fn dotfiles_answer_404_unless_serve_hidden() {
    let root = temp_dir("dotfiles");
    std::fs::create_dir_all(root.join(".git")).expect("mkdir");
    std::fs::write(root.join(".env"), "SECRET=1").expect("write");
    std::fs::write(root.join(".git/config"), "[core]").expect("write");
    std::fs::write(root.join("index.html"), "hi").expect("write");
    for (flag, expect) in [(None, 404), (Some("--serve-hidden"), 200)] {
        let mut args = vec![
            "serve".as_ref(),
            "static".as_ref(),
            "--addr".as_ref(),
            "127.0.0.1:0".as_ref(),
            "--root".as_ref(),
            root.as_os_str(),
        ];
        args.extend(flag.map(std::ffi::OsStr::new));
        let mut server = common::start(&args);
        assert_eq!(status_of(&server.addr, "/index.html"), 200);
        assert_eq!(status_of(&server.addr, "/.env"), expect, "{flag:?}");
        assert_eq!(status_of(&server.addr, "/.git/config"), expect, "{flag:?}");
        let _ = server.child.kill();
        let _ = server.child.wait();
    }
    let _ = std::fs::remove_dir_all(&root);
}

/// `seda bench idle` runs end to end (it once wrote a config key the server no longer knew and
/// measured nothing): a small count, our server only.
#[test]
fn bench_idle_measures_our_server() {
    let out = Command::new(env!("CARGO_BIN_EXE_seda"))
        .args(["bench", "idle", "--connections", "200", "--no-nginx"])
        .output()
        .expect("run seda bench idle");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    let row = text
        .lines()
        .find(|l| l.starts_with("seda serve static"))
        .unwrap_or_else(|| panic!("no row for our server: {text}"));
    let per_conn: f64 = row
        .split_whitespace()
        .last()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no bytes per connection: {row}"));
    assert!(per_conn.is_finite(), "{row}");
}
