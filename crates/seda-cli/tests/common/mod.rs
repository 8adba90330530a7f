//! Shared by the CLI tests: start a `seda serve ...` process and learn where it listens.

use std::io::{BufRead, BufReader};
use std::process::{Child, ChildStdout, Command, Stdio};

/// A running `seda` server process, its stdout (for what it prints at shutdown) and address.
pub struct Server {
    pub child: Child,
    pub stdout: BufReader<ChildStdout>,
    /// `host:port` from the line it prints when listening.
    pub addr: String,
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
        if let Some(rest) = line.split("http://").nth(1) {
            break rest.split('/').next().unwrap_or_default().to_string();
        }
    };
    Server {
        child,
        stdout,
        addr,
    }
}
