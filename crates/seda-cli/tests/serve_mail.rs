//! `seda mail corpus` and `seda serve mail` as a user runs them: the binary, a real socket, a
//! login, a page, SIGINT.

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

    {
        let front = "seda-http";
        let common::Server {
            mut child,
            mut stdout,
            addr,
            ..
        } = common::start(&[
            "serve".as_ref(),
            "mail".as_ref(),
            "--addr".as_ref(),
            "127.0.0.1:0".as_ref(),
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

/// The status of `/_seda/stats` at `addr`.
fn login_totals_status(addr: &str) -> u16 {
    let r = exchange(
        addr,
        "GET /_seda/stats HTTP/1.1\r\nhost: t\r\nconnection: close\r\n\r\n",
    );
    r.split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0)
}

/// The login stage's counters.
#[derive(Clone, Copy, Default)]
struct LoginTotals {
    arrivals: u64,
    completed: u64,
    /// Dropped as expired or cancelled.
    dropped: u64,
}

/// The login stage's totals from the admin address.
fn login_totals(addr: &str) -> LoginTotals {
    let r = exchange(
        addr,
        "GET /_seda/stats HTTP/1.1\r\nhost: t\r\nconnection: close\r\n\r\n",
    );
    let body = r.split("\r\n\r\n").nth(1).unwrap_or_default();
    let stats: serde_json::Value = serde_json::from_str(body).expect("stats JSON");
    let login = stats["runtime"]["stages"]
        .as_array()
        .and_then(|s| s.iter().find(|s| s["name"] == "mail.login"))
        .cloned()
        .expect("a mail.login stage");
    let n = |p: &str| login.pointer(p).and_then(serde_json::Value::as_u64);
    LoginTotals {
        arrivals: n("/totals/counters/arrivals").unwrap_or(0),
        completed: n("/totals/counters/completed").unwrap_or(0),
        dropped: n("/totals/counters/dropped/expired").unwrap_or(0),
    }
}

/// Polls the login totals until `done` holds (at most 60 s) and returns the last ones.
fn wait_for(admin: &str, done: impl Fn(&LoginTotals) -> bool) -> LoginTotals {
    let mut totals = LoginTotals::default();
    for _ in 0..1200 {
        totals = login_totals(admin);
        if done(&totals) {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    totals
}

#[test]
fn abandoned_logins_are_dropped_unless_the_server_is_told_to_serve_them() {
    let dir = std::env::temp_dir().join(format!("seda-cli-abandoned-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let db = dir.join("mail.db");
    const SENT: u64 = 8;
    for serve_abandoned in [false, true] {
        let mut args = vec![
            "serve",
            "mail",
            "--addr",
            "127.0.0.1:0",
            "--seed-users",
            "3",
            "--threads",
            "1",
            // Each login holds the one login thread for its cost on a fiftieth of a core (about
            // 60 ms): the others wait in the queue while their clients leave.
            "--cores",
            "0.02",
        ];
        if serve_abandoned {
            args.push("--serve-abandoned");
        }
        let mut os: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_ref()).collect();
        os.extend(["--db".as_ref(), db.as_os_str()]);
        let common::Server {
            mut child,
            addr,
            admin,
            ..
        } = common::start_with_admin(&os);
        let admin = admin.expect("admin address");
        assert_eq!(
            login_totals_status(&addr),
            404,
            "introspection is not served on the service port"
        );
        let body = "user=user1&password=pass1";
        let login = format!(
            "POST /login HTTP/1.1\r\nhost: t\r\ncontent-type: \
             application/x-www-form-urlencoded\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        );
        let clients: Vec<TcpStream> = (0..SENT)
            .map(|_| {
                let mut s = TcpStream::connect(&addr).expect("connect");
                s.write_all(login.as_bytes()).expect("send");
                s
            })
            .collect();
        // Hang up only once every login reached the stage: hyper may drop a request whose
        // client closed before its service ran, and then no stage ever sees it.
        let arrived = wait_for(&admin, |t| t.arrivals >= SENT);
        assert_eq!(arrived.arrivals, SENT, "logins that reached the stage");
        drop(clients);
        let LoginTotals {
            completed, dropped, ..
        } = wait_for(&admin, |t| t.completed + t.dropped >= SENT);
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(
            completed + dropped,
            SENT,
            "serve_abandoned {serve_abandoned}"
        );
        if serve_abandoned {
            assert_eq!(dropped, 0, "every abandoned login was served");
        } else {
            assert!(
                dropped > 0,
                "no abandoned login was dropped: {completed} completed"
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Runs `seda serve mail` on `db` and waits (at most 60 s) for it to exit: a server that
/// refuses the database exits at once; one that accepted it is killed, and the test fails.
fn serve_must_refuse(db: &std::path::Path) -> String {
    let mut child = Command::new(env!("CARGO_BIN_EXE_seda"))
        .args([
            "serve",
            "mail",
            "--addr",
            "127.0.0.1:0",
            "--seed-users",
            "2",
        ])
        .arg("--db")
        .arg(db)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run seda serve mail");
    let t0 = std::time::Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break Some(s);
        }
        if t0.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut out = String::new();
    if let Some(mut o) = child.stdout.take() {
        let _ = o.read_to_string(&mut out);
    }
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut out);
    }
    let status = status.unwrap_or_else(|| panic!("the server started on {db:?}: {out}"));
    assert!(!status.success(), "{status}: {out}");
    assert!(out.contains("refusing to start"), "{out}");
    out
}

#[test]
fn serve_mail_never_drops_a_database_it_cannot_read() {
    let dir = std::env::temp_dir().join(format!("seda-cli-mail-keep-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");

    // Another application's `users` table: the audit fails (no folders, no messages).
    let foreign = dir.join("foreign.db");
    let c = rusqlite::Connection::open(&foreign).expect("sqlite");
    c.execute_batch("CREATE TABLE users (who TEXT); INSERT INTO users VALUES ('precious');")
        .expect("foreign table");
    drop(c);
    serve_must_refuse(&foreign);
    let c = rusqlite::Connection::open(&foreign).expect("sqlite");
    let who: String = c
        .query_row("SELECT who FROM users", [], |r| r.get(0))
        .expect("the foreign table survives");
    assert_eq!(who, "precious");
    drop(c);

    // All three mail tables, one of them damaged (no folder_id): refused, nothing dropped.
    let broken = dir.join("broken.db");
    let c = rusqlite::Connection::open(&broken).expect("sqlite");
    c.execute_batch(
        "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT, password TEXT);
         INSERT INTO users VALUES (1, 'kept', 'secret');
         CREATE TABLE folders (id INTEGER PRIMARY KEY, user_id INTEGER, name TEXT,
           msg_count INTEGER);
         CREATE TABLE messages (id INTEGER PRIMARY KEY);",
    )
    .expect("damaged tables");
    drop(c);
    serve_must_refuse(&broken);

    // The layout before hashed passwords and session classes (no `class` column).
    let old = dir.join("old.db");
    let c = rusqlite::Connection::open(&old).expect("sqlite");
    c.execute_batch(
        "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT, password TEXT);
         INSERT INTO users VALUES (1, 'user1', 'pass1');
         CREATE TABLE folders (id INTEGER PRIMARY KEY, user_id INTEGER, name TEXT,
           msg_count INTEGER);
         CREATE TABLE messages (id INTEGER PRIMARY KEY, folder_id INTEGER);",
    )
    .expect("old tables");
    drop(c);
    let out = serve_must_refuse(&old);
    assert!(out.contains("older layout"), "{out}");
    let c = rusqlite::Connection::open(&broken).expect("sqlite");
    let n: i64 = c
        .query_row("SELECT COUNT(*) FROM users WHERE name = 'kept'", [], |r| {
            r.get(0)
        })
        .expect("the users table survives");
    assert_eq!(n, 1);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A database URL's password never reaches the output: the error names the store by its
/// redacted URL.
#[test]
fn serve_mail_hides_the_database_password_in_its_errors() {
    const SECRET: &str = "hunter2secret";
    // Nothing listens on port 1: opening fails, and the error names the URL.
    for url in [
        format!("postgres://postgres:{SECRET}@127.0.0.1:1/test"),
        format!("mysql://root:{SECRET}@127.0.0.1:1/test"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_seda"))
            .args(["serve", "mail", "--addr", "127.0.0.1:0", "--db", &url])
            .output()
            .expect("run seda serve mail");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!out.status.success(), "{text}");
        assert!(text.contains("cannot open the mail store"), "{text}");
        assert!(text.contains(":***@127.0.0.1:1"), "{text}");
        assert!(!text.contains(SECRET), "{text}");
    }
}

/// `--agent` answers HAProxy's agent-check from the stages' admission (everything admitted:
/// full weight), and `--slow-on-usr1` slows the emulated processor on SIGUSR1 and gives it back
/// its speed on SIGUSR2.
#[test]
fn serve_mail_answers_agent_checks_and_slows_down_on_a_signal() {
    use std::io::BufRead;
    let dir = std::env::temp_dir().join(format!("seda-cli-agent-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let db = dir.join("mail.db");
    let mut server = common::start(&[
        "serve".as_ref(),
        "mail".as_ref(),
        "--addr".as_ref(),
        "127.0.0.1:0".as_ref(),
        "--seed-users".as_ref(),
        "2".as_ref(),
        "--agent".as_ref(),
        "127.0.0.1:0".as_ref(),
        "--cores".as_ref(),
        "1".as_ref(),
        "--slow-on-usr1".as_ref(),
        "7".as_ref(),
        "--db".as_ref(),
        db.as_os_str(),
    ]);
    let mut read_until = |prefix: &str| loop {
        let mut line = String::new();
        let n = server.stdout.read_line(&mut line).expect("server output");
        assert!(n > 0, "the server exited before printing `{prefix}`");
        if let Some(rest) = line.strip_prefix(prefix) {
            break rest.trim().to_string();
        }
    };
    let agent = read_until("agent-check: ");
    let body = "user=user1&password=pass1";
    let r = exchange(
        &server.addr,
        &format!(
            "POST /login HTTP/1.1\r\nhost: t\r\nconnection: close\r\ncontent-type: \
             application/x-www-form-urlencoded\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        ),
    );
    assert!(r.starts_with("HTTP/1.1 303"), "{r}");
    let mut reply = String::new();
    TcpStream::connect(&agent)
        .expect("agent port")
        .read_to_string(&mut reply)
        .expect("agent reply");
    assert_eq!(reply, "ready,100%\n");
    for (sig, to) in [("-USR1", "7"), ("-USR2", "1")] {
        let sent = Command::new("kill")
            .args([sig, &server.child.id().to_string()])
            .status()
            .expect("kill");
        assert!(sent.success());
        assert_eq!(read_until("processor "), format!("{to} x slower"));
    }
    let _ = Command::new("kill")
        .args(["-INT", &server.child.id().to_string()])
        .status();
    let _ = server.child.wait();
    let _ = std::fs::remove_dir_all(&dir);
}
