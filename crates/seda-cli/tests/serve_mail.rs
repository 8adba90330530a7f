//! `seda mail corpus` and `seda serve mail` as a user runs them: the binary, a real socket, a
//! login, a page, SIGINT; through the shared front end and through the built-in adapter.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::Duration;

fn exchange(addr: &str, raw: &str) -> String {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    s.write_all(raw.as_bytes()).expect("send");
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out
}

#[test]
fn corpus_then_serve_mail_then_sigint() {
    let seda = env!("CARGO_BIN_EXE_seda");
    let dir = std::env::temp_dir().join(format!("seda-cli-mail-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let db = dir.join("mail.db");
    let out = Command::new(seda)
        .args([
            "mail",
            "corpus",
            "--users",
            "3",
            "--max-folder",
            "20",
            "--db",
        ])
        .arg(&db)
        .output()
        .expect("run seda mail corpus");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("inconsistent folders 0"), "{text}");

    for front in ["seda-http", "builtin"] {
        let common::Server {
            mut child,
            mut stdout,
            addr,
        } = common::start(&[
            "serve".as_ref(),
            "mail".as_ref(),
            "--addr".as_ref(),
            "127.0.0.1:0".as_ref(),
            "--front".as_ref(),
            front.as_ref(),
            "--db".as_ref(),
            db.as_os_str(),
        ]);

        let body = "user=user2&password=pass2";
        let r = exchange(
            &addr,
            &format!(
                "POST /login HTTP/1.1\r\nhost: t\r\nconnection: close\r\ncontent-type: \
                 application/x-www-form-urlencoded\r\ncontent-length: {}\r\n\r\n{body}",
                body.len()
            ),
        );
        assert!(r.starts_with("HTTP/1.1 303"), "{front}: {r}");
        let sid = r
            .lines()
            .find_map(|l| {
                l.strip_prefix("set-cookie: ")
                    .or_else(|| l.strip_prefix("Set-Cookie: "))
            })
            .and_then(|c| c.split(';').next())
            .unwrap_or_else(|| panic!("{front}: no cookie in {r}"))
            .to_string();
        let r = exchange(
            &addr,
            &format!(
                "GET /folders HTTP/1.1\r\nhost: t\r\ncookie: {sid}\r\nconnection: close\r\n\r\n"
            ),
        );
        assert!(r.starts_with("HTTP/1.1 200"), "{front}: {r}");
        assert!(r.contains("Folders of user2"), "{front}: {r}");
        let r = exchange(
            &addr,
            "GET /nope HTTP/1.1\r\nhost: t\r\nconnection: close\r\n\r\n",
        );
        assert!(r.starts_with("HTTP/1.1 404"), "{front}: {r}");

        let killed = Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status()
            .expect("kill");
        assert!(killed.success());
        let status = child.wait().expect("wait");
        let mut rest = String::new();
        stdout.read_to_string(&mut rest).expect("rest of stdout");
        assert!(
            status.success(),
            "{front}: exit status {status}, output {rest}"
        );
        assert!(rest.contains("mail.list_folders"), "{front}: {rest}");
        assert!(rest.contains("drained true"), "{front}: {rest}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
