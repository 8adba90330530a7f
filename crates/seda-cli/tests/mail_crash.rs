//! Crash consistency: `seda serve mail` on SQLite is killed with SIGKILL at random moments while
//! clients delete and refile, then restarted, again and again. After each crash the database is
//! audited: every message is in exactly one folder of its own user, every folder's count
//! matches its messages, no message is lost, and every move acknowledged to a client (a 303)
//! survived; a move in flight at the crash is either wholly done or wholly not. On SQLite, and
//! on PostgreSQL when it answers on 127.0.0.1 (skipped with a printed reason otherwise).

mod common;

use std::collections::HashMap;
use std::ffi::OsStr;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use seda::Meta;
use seda_mail::store::{self, MAX_PAGE, Page, Sort, Store, TRASH};

const USERS: i64 = 3;
const ROUNDS: u32 = 6;

/// A small deterministic generator (xorshift), so a failing run can be repeated.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }
}

/// What a client knows about one of its messages.
#[derive(Debug, Clone, Copy)]
struct Known {
    /// The folder of the last acknowledged move (or the start).
    acked: i64,
    /// The target of a move sent but not acknowledged (the crash came first).
    pending: Option<i64>,
}

/// One user's messages and folders, as the client tracks them across crashes.
struct Client {
    user: i64,
    trash: i64,
    folders: Vec<i64>,
    messages: HashMap<i64, Known>,
}

/// Sends one request; `Some(status)` if an answer came.
fn send(addr: &str, raw: &str) -> Option<u16> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    s.write_all(raw.as_bytes()).ok()?;
    let mut head = [0u8; 12];
    s.read_exact(&mut head).ok()?;
    std::str::from_utf8(&head[9..12]).ok()?.parse().ok()
}

fn post(path: &str, cookie: Option<&str>, body: &str) -> String {
    let cookie = cookie.map_or(String::new(), |c| format!("cookie: {c}\r\n"));
    format!(
        "POST {path} HTTP/1.1\r\nhost: t\r\nconnection: close\r\n{cookie}content-type: \
         application/x-www-form-urlencoded\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
}

fn login(addr: &str, user: i64) -> Option<String> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    let body = format!("user=user{user}&password=pass{user}");
    s.write_all(post("/login", None, &body).as_bytes()).ok()?;
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out.lines()
        .find_map(|l| l.strip_prefix("set-cookie: "))
        .and_then(|c| c.split(';').next())
        .map(str::to_string)
}

/// Moves messages until `stop` or the server dies; returns the acknowledged moves.
fn run(client: &mut Client, addr: &str, cookie: &str, stop: &AtomicBool, rng: &mut Rng) -> u64 {
    let ids: Vec<i64> = client.messages.keys().copied().collect();
    let mut acked = 0;
    while !stop.load(Ordering::Relaxed) {
        let id = ids[rng.below(ids.len() as u64) as usize];
        let k = client.messages[&id];
        let (raw, to) = if k.acked != client.trash && rng.below(3) == 0 {
            let body = format!("id={id}&from={}", k.acked);
            (post("/delete", Some(cookie), &body), client.trash)
        } else {
            let others: Vec<i64> = client
                .folders
                .iter()
                .copied()
                .filter(|&f| f != k.acked)
                .collect();
            let to = others[rng.below(others.len() as u64) as usize];
            let body = format!("id={id}&to={to}");
            (post("/refile", Some(cookie), &body), to)
        };
        client.messages.get_mut(&id).expect("own").pending = Some(to);
        match send(addr, &raw) {
            Some(303) => {
                client.messages.insert(
                    id,
                    Known {
                        acked: to,
                        pending: None,
                    },
                );
                acked += 1;
            }
            // No answer (the server died) or another status: the move may or may not have
            // happened; the audit after the restart decides.
            _ => break,
        }
    }
    acked
}

/// Audits the database after a crash (through the store, so every backend is read alike) and
/// settles every pending move from what it holds.
fn audit(store: &dyn Store, clients: &mut [Client], total: i64) -> (u64, u64) {
    let a = store.audit().expect("audit after the crash");
    assert_eq!(a.messages, total, "a message was lost");
    assert_eq!(
        a.bad_folders, 0,
        "a folder count does not match its messages"
    );
    assert_eq!(a.folder_counts, a.messages);
    let meta = Meta::new();
    let (mut done, mut undone) = (0, 0);
    for client in clients.iter_mut() {
        for (id, k) in client.messages.iter_mut() {
            let now = store
                .message(client.user, *id, &meta)
                .expect("read")
                .unwrap_or_else(|| panic!("message {id} is gone"))
                .summary
                .folder_id;
            assert!(
                client.folders.contains(&now),
                "message {id} outside its user's folders"
            );
            match k.pending.take() {
                None => assert_eq!(now, k.acked, "message {id}: an acknowledged move was lost"),
                Some(p) => {
                    assert!(
                        now == k.acked || now == p,
                        "message {id} in {now}: neither {} nor {p}",
                        k.acked
                    );
                    if now == p {
                        done += 1;
                    } else {
                        undone += 1;
                    }
                }
            }
            k.acked = now;
        }
    }
    (done, undone)
}

/// Each user's folders and messages, as they are before the first round.
fn clients(store: &dyn Store) -> Vec<Client> {
    let meta = Meta::new();
    (1..=USERS)
        .map(|user| {
            let folders = store.folders(user, &meta).expect("folders");
            let trash = folders
                .iter()
                .find(|f| f.name == TRASH)
                .expect("a Trash folder")
                .id;
            let mut messages = HashMap::new();
            for f in &folders {
                let (_, rows) = store
                    .messages(user, f.id, Sort::Date, Page::FIRST, MAX_PAGE, &meta)
                    .expect("list")
                    .expect("own folder");
                for m in rows {
                    messages.insert(
                        m.id,
                        Known {
                            acked: f.id,
                            pending: None,
                        },
                    );
                }
            }
            Client {
                user,
                trash,
                folders: folders.iter().map(|f| f.id).collect(),
                messages,
            }
        })
        .collect()
}

/// Loads a corpus into `db` (tables under `prefix`), then crashes and audits [`ROUNDS`] times;
/// `settled` waits, after each kill, until the database has finished with the dead server's
/// connections.
fn crash_rounds(db: &OsStr, prefix: &str, settled: &dyn Fn()) {
    let out = Command::new(env!("CARGO_BIN_EXE_seda"))
        .args([
            "mail",
            "corpus",
            "--users",
            "3",
            "--max-folder",
            "30",
            "--prefix",
            prefix,
        ])
        .arg("--db")
        .arg(db)
        .output()
        .expect("seda mail corpus");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The test's own connections without the server's options (its application name).
    let url = db.to_string_lossy();
    let url = url.split('?').next().unwrap_or_default();
    let store = store::open(url, prefix).expect("open the store");
    let backend = store.backend();
    let total = store.audit().expect("audit").messages;
    let mut clients = clients(store.as_ref());
    let seed = u64::from(std::process::id()) | 1;
    eprintln!("{backend}: seed {seed}");
    let mut rng = Rng(seed);
    for round in 0..ROUNDS {
        // Its stdout stays open until the kill (a closed pipe would fail its prints).
        let mut server = common::start(&[
            "serve".as_ref(),
            "mail".as_ref(),
            "--addr".as_ref(),
            "127.0.0.1:0".as_ref(),
            "--prefix".as_ref(),
            prefix.as_ref(),
            "--db".as_ref(),
            db,
        ]);
        let addr = server.addr.clone();
        let stop = Arc::new(AtomicBool::new(false));
        let mut handles = Vec::new();
        for (i, mut client) in std::mem::take(&mut clients).into_iter().enumerate() {
            let addr = addr.clone();
            let stop = stop.clone();
            let mut rng = Rng(seed
                .wrapping_mul(31)
                .wrapping_add(u64::from(round) * 7 + i as u64));
            handles.push(std::thread::spawn(move || {
                let acked = match login(&addr, client.user) {
                    Some(cookie) => run(&mut client, &addr, &cookie, &stop, &mut rng),
                    None => 0,
                };
                (client, acked)
            }));
        }
        // A random moment: 50 to 650 ms into the load.
        std::thread::sleep(Duration::from_millis(50 + rng.below(600)));
        server.child.kill().expect("SIGKILL");
        let _ = server.child.wait();
        drop(server.stdout);
        stop.store(true, Ordering::Relaxed);
        settled();
        let mut acked = 0;
        for h in handles {
            let (client, a) = h.join().expect("client");
            clients.push(client);
            acked += a;
        }
        clients.sort_by_key(|c| c.user);
        let (done, undone) = audit(store.as_ref(), &mut clients, total);
        eprintln!(
            "{backend} round {round}: {acked} moves acknowledged; in flight at the kill: {done} \
             done, {undone} not"
        );
    }
}

#[test]
fn kill_9_during_moves_loses_nothing_acknowledged_on_sqlite() {
    let dir = std::env::temp_dir().join(format!("seda-cli-mail-crash-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    // SQLite lives in the killed process: once it is gone, nothing more can commit.
    crash_rounds(dir.join("mail.db").as_os_str(), "", &|| {});
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn kill_9_during_moves_loses_nothing_acknowledged_on_postgres() {
    const PG_URL: &str = "postgres://postgres@127.0.0.1:5432/test";
    if let Err(e) = store::open(PG_URL, "") {
        let what = "seda-cli test kill_9_during_moves_loses_nothing_acknowledged_on_postgres";
        return seda_lab::peers::skip(what, &seda_lab::peers::POSTGRESQL, &e.to_string());
    }
    // The server's connections carry a name, so the test can wait for them to end: a COMMIT
    // the killed server had sent is still carried out by PostgreSQL, possibly after the kill,
    // and the audit must see the outcome of every move that was in flight.
    const APP: &str = "seda_crash_test";
    let url = format!("{PG_URL}?application_name={APP}");
    let settled = || {
        let mut c = postgres::Client::connect(PG_URL, postgres::NoTls).expect("connect");
        for _ in 0..3000 {
            let n: i64 = c
                .query_one(
                    "SELECT COUNT(*) FROM pg_stat_activity WHERE application_name = $1",
                    &[&APP],
                )
                .expect("pg_stat_activity")
                .get(0);
            if n == 0 {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!("the killed server's connections did not end within 30 s");
    };
    crash_rounds(url.as_ref(), "t_crash_", &settled);
}
