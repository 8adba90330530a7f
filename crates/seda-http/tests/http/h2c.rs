//! HTTP/2 with prior knowledge (h2c), when turned on, beside HTTP/1.1 on the same port. The
//! HTTP/2 client is curl (Debian's curl is built with nghttp2); skipped without it (a failure
//! where `SEDA_REQUIRE_PEERS=1`, as in CI).

use std::fs;
use std::process::Command;
use std::time::Duration;

use crate::client::get;
use crate::{TempDir, static_server};

fn curl_has_http2() -> bool {
    Command::new("curl")
        .arg("--version")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("HTTP2"))
}

#[test]
fn h2c_and_http1_on_one_port() {
    if !curl_has_http2() {
        let what = "seda-http test h2c_and_http1_on_one_port";
        return seda_peers::skip(what, &seda_peers::CURL, "no curl with HTTP/2 support");
    }
    let dir = TempDir::new();
    let data: Vec<u8> = (0..20_000u32).map(|i| (i % 241) as u8).collect();
    fs::write(dir.path().join("f.bin"), &data).expect("write");
    let server = static_server(dir.path(), |c| c.http.h2c = true);
    let url = format!("http://{}/f.bin", server.local_addr());
    // (One URL per curl run: curl 7.88 reports 000 for a second URL on a reused HTTP/2
    // connection, against nginx too.)
    for range in ["", "0-99"] {
        let mut cmd = Command::new("curl");
        cmd.args([
            "-s",
            "--http2-prior-knowledge",
            "-w",
            "%{http_version} %{http_code}",
        ]);
        if !range.is_empty() {
            cmd.args(["-r", range]);
        }
        let out = cmd
            .arg(&url)
            .arg("-o")
            .arg(dir.path().join("got"))
            .output()
            .expect("curl");
        let report = String::from_utf8_lossy(&out.stdout).into_owned();
        let (want, len) = if range.is_empty() {
            ("2 200", data.len())
        } else {
            ("2 206", 100)
        };
        assert_eq!(report, want);
        assert_eq!(fs::read(dir.path().join("got")).expect("got"), &data[..len]);
    }
    let r = get(server.local_addr(), "/f.bin");
    assert_eq!(
        (r.status, r.body.len()),
        (200, data.len()),
        "HTTP/1.1 still served"
    );
    assert_eq!(server.frontend_stats().requests, 3);
    server.shutdown(Duration::from_secs(5));
}
