//! The binary over a real socket: the page is served through a peer's front, and the admin
//! routes refuse bad input with a reason. (Also what makes `cargo test --workspace` build the
//! binary beside `seda`, where the `tower-peers` scenario looks for it.)

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start(mode: &str) -> (Server, SocketAddr) {
    let addr = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port");
    let child = Command::new(env!("CARGO_BIN_EXE_tower-peers"))
        .args([
            "--addr",
            &addr.to_string(),
            "--mode",
            mode,
            "--mean-ms",
            "2",
        ])
        .stdout(Stdio::null())
        .spawn()
        .expect("start tower-peers");
    let mut server = Server(child);
    // Ready once the page is answered, not once something accepts: a connect alone can be
    // accepted by whatever else took the port, or be reset while the server still starts.
    let began = Instant::now();
    loop {
        if let Ok(Some(status)) = server.0.try_wait() {
            panic!("tower-peers --mode {mode} exited at start: {status}");
        }
        if try_request(addr, "GET", "/").is_ok_and(|a| a.starts_with("HTTP/1.1 200")) {
            return (server, addr);
        }
        assert!(
            began.elapsed() < Duration::from_secs(10),
            "tower-peers --mode {mode} did not answer on {addr} within 10 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// One request on its own connection: the whole answer, or the socket's error.
fn try_request(addr: SocketAddr, method: &str, path: &str) -> std::io::Result<String> {
    let mut s = TcpStream::connect(addr)?;
    s.set_read_timeout(Some(Duration::from_secs(5)))?;
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )?;
    let mut out = String::new();
    s.read_to_string(&mut out)?;
    Ok(out)
}

/// One request on its own connection: the whole answer.
fn request(addr: SocketAddr, method: &str, path: &str) -> String {
    try_request(addr, method, path).expect("read the answer")
}

#[test]
fn each_front_serves_the_page_and_the_admin_routes_check_their_input() {
    for mode in ["bare", "limit:4", "little", "acc-vegas", "res-aimd", "seda"] {
        let (_server, addr) = start(mode);
        let page = request(addr, "GET", "/");
        assert!(page.starts_with("HTTP/1.1 200"), "{mode}: {page}");
        assert!(page.contains("held "), "{mode}: {page}");
        let ok = request(addr, "POST", "/admin/slowdown/2");
        assert!(ok.starts_with("HTTP/1.1 200"), "{mode}: {ok}");
        let bad = request(addr, "POST", "/admin/slowdown/0.5");
        assert!(
            bad.starts_with("HTTP/1.1 400") && bad.contains("[1, 100]"),
            "{bad}"
        );
        let bad = request(addr, "POST", "/admin/dist/pareto");
        assert!(
            bad.starts_with("HTTP/1.1 400") && bad.contains("exp or heavy"),
            "{bad}"
        );
    }
}

#[test]
fn a_bad_mode_is_refused_naming_the_good_ones() {
    let out = Command::new(env!("CARGO_BIN_EXE_tower-peers"))
        .args(["--mode", "fast"])
        .output()
        .expect("run tower-peers");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("acc-vegas"), "{err}");
}
