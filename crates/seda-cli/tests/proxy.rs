//! `seda proxy` as a user runs it: in front of `seda serve static`, over real sockets.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;

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

#[test]
fn proxies_a_static_server_and_forwards_its_answers() {
    let root = std::env::temp_dir().join(format!("seda-cli-proxy-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("hello.txt"), "hello through the proxy\n").unwrap();

    let mut upstream = common::start(&[
        "serve".as_ref(),
        "static".as_ref(),
        "--addr".as_ref(),
        "127.0.0.1:0".as_ref(),
        "--root".as_ref(),
        root.as_os_str(),
    ]);
    let upstream_url = format!("http://{}", upstream.addr);
    let mut proxy = common::start(&[
        "proxy".as_ref(),
        "--listen".as_ref(),
        "127.0.0.1:0".as_ref(),
        "--upstream".as_ref(),
        upstream_url.as_ref(),
        "--target-ms".as_ref(),
        "500".as_ref(),
    ]);

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
