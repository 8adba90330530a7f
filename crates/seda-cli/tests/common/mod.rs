//! Shared by the CLI tests: start a `seda serve ...` process and learn where it listens.

// Each test binary includes this module and uses only part of it.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::Duration;

/// A running `seda` server process, its stdout (for what it prints at shutdown) and address.
pub struct Server {
    pub child: Child,
    pub stdout: BufReader<ChildStdout>,
    /// `host:port` from the line it prints when listening.
    pub addr: String,
    /// `host:port` of its admin address, from the `admin: http://...` line that follows (read
    /// by [`start_with_admin`] only).
    pub admin: Option<String>,
}

fn host_port(line: &str) -> Option<String> {
    let rest = line.split("http://").nth(1)?;
    Some(rest.split('/').next().unwrap_or_default().to_string())
}

/// Like [`start`], then reads on to the `admin: http://host:port/` line.
pub fn start_with_admin(args: &[&std::ffi::OsStr]) -> Server {
    let mut server = start(args);
    let admin = loop {
        let mut line = String::new();
        let n = server.stdout.read_line(&mut line).expect("server output");
        assert!(n > 0, "the server exited before printing its admin address");
        if line.starts_with("admin: ") {
            break host_port(&line).expect("an admin address (not `off`)");
        }
    };
    server.admin = Some(admin);
    server
}

/// Starts the `seda` binary with `args` and reads stdout up to the line that names its
/// `http://host:port/` address.
pub fn start(args: &[&std::ffi::OsStr]) -> Server {
    let mut child = Command::new(env!("CARGO_BIN_EXE_seda"))
        .args(args)
        .stdout(Stdio::piped())
        .spawn()
        .expect("run seda");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let addr = loop {
        let mut line = String::new();
        let n = stdout.read_line(&mut line).expect("server output");
        assert!(n > 0, "the server exited before printing its address");
        if let Some(addr) = host_port(&line) {
            break addr;
        }
    };
    Server {
        child,
        stdout,
        addr,
        admin: None,
    }
}

/// `GET target` over a fresh connection (`connection: close`), the whole response as text
/// (empty if the server sent nothing in 30 s).
pub fn get(addr: &str, target: &str) -> String {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    write!(
        s,
        "GET {target} HTTP/1.1\r\nhost: t\r\nconnection: close\r\n\r\n"
    )
    .expect("send");
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out
}
