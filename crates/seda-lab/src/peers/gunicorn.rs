//! gunicorn (Debian's `gunicorn`, sync workers) serving a small WSGI app that queries
//! PostgreSQL (Debian's `python3-psycopg2`): a service none of us wrote, for `proxy-spike`.
//!
//! Each request reads a page of rows from one table and renders them as HTML, as a small
//! database-backed web page does, then holds its worker until a stated time since it started
//! (the hold, [`HOLD`]): the page's real work fits inside it, so each worker answers one page per
//! hold whatever else the machine runs, and the service's capacity is [`WORKERS`] / [`HOLD`],
//! stated before the run (as the lab's emulated processor states the mail service's). A fixed
//! number of sync workers each serve one connection at a time; connections beyond them wait in
//! the kernel's accept queue (`--backlog 2048`), which is where response times grow under a
//! spike.

use std::path::Path;
use std::process::Command;

use super::{PeerError, config_path, require, write_config};

/// Sync worker processes.
pub const WORKERS: usize = 4;

/// How long a page holds its worker, its real work included. A page's real work (the query,
/// the rendering of 200 rows) took 1.2-1.5 ms of gunicorn's CPU in `proxy-spike`'s first run
/// (its underload table): 40 ms leaves it ample room on a loaded machine, and at the capacity
/// of 100 pages/s gunicorn uses about 0.15 of a core.
pub const HOLD: std::time::Duration = std::time::Duration::from_millis(40);

/// The designed capacity, pages per second: each worker answers one page per hold.
pub fn capacity_per_s() -> f64 {
    WORKERS as f64 / HOLD.as_secs_f64()
}

/// The Python module gunicorn serves (`page:app`). The table is created and filled once, at
/// import in the master (`--preload`); workers connect on their first request.
pub const APP: &str = r#"# Written by seda-lab: a page of rows from PostgreSQL, rendered as HTML.
import html
import os
import random
import time

import psycopg2

DSN = os.environ["SEDA_LAB_DSN"]
TABLE = os.environ["SEDA_LAB_TABLE"]
HOLD_S = float(os.environ["SEDA_LAB_HOLD_S"])
ROWS = 1000
PAGE = 200


def _setup():
    conn = psycopg2.connect(DSN)
    conn.autocommit = True
    with conn.cursor() as cur:
        cur.execute(
            f"CREATE TABLE IF NOT EXISTS {TABLE} (id integer PRIMARY KEY, title text, body text)"
        )
        cur.execute(f"SELECT count(*) FROM {TABLE}")
        if cur.fetchone()[0] < ROWS:
            cur.execute(f"TRUNCATE {TABLE}")
            cur.execute(
                f"INSERT INTO {TABLE} SELECT i, 'item ' || i, repeat(md5(i::text), 8) "
                f"FROM generate_series(1, {ROWS}) AS i"
            )
    conn.close()


_setup()
_conn = None


def _cursor():
    global _conn
    if _conn is None or _conn.closed:
        _conn = psycopg2.connect(DSN)
        _conn.autocommit = True
    return _conn.cursor()


def app(environ, start_response):
    began = time.monotonic()
    start = random.randrange(ROWS - PAGE)
    with _cursor() as cur:
        cur.execute(
            f"SELECT id, title, body FROM {TABLE} WHERE id > %s ORDER BY id LIMIT %s",
            (start, PAGE),
        )
        rows = cur.fetchall()
    cells = "".join(
        f"<tr><td>{i}</td><td>{html.escape(t)}</td><td>{html.escape(b)}</td></tr>"
        for i, t, b in rows
    )
    body = f"<html><body><table>{cells}</table></body></html>".encode()
    # The stated cost: the worker is held until HOLD_S since the page began, its real work
    # included, so each worker answers one page per hold.
    rest = HOLD_S - (time.monotonic() - began)
    if rest > 0:
        time.sleep(rest)
    start_response(
        "200 OK", [("Content-Type", "text/html"), ("Content-Length", str(len(body)))]
    )
    return [body]
"#;

/// Writes the app into `work_dir` and returns the command that serves it on
/// `127.0.0.1:<port>` from `table` in the database `dsn` (a libpq connection string).
pub fn command(port: u16, work_dir: &Path, dsn: &str, table: &str) -> Result<Command, PeerError> {
    let bin = require(&super::GUNICORN)?;
    write_config(work_dir, "page.py", APP)?;
    let dir = config_path(work_dir)?;
    let mut cmd = Command::new(bin);
    cmd.args([
        "--workers",
        &WORKERS.to_string(),
        "--worker-class",
        "sync",
        "--bind",
        &format!("127.0.0.1:{port}"),
        "--backlog",
        "2048",
        "--preload",
        "--chdir",
        &dir,
        "page:app",
    ])
    .env("SEDA_LAB_DSN", dsn)
    .env("SEDA_LAB_TABLE", table)
    .env("SEDA_LAB_HOLD_S", HOLD.as_secs_f64().to_string());
    Ok(cmd)
}

/// Whether gunicorn's own Python (its `#!` line: `/usr/bin/python3` for Debian's, whatever
/// `python3` comes first on `PATH`) can import psycopg2, and if not, why.
pub fn python_ready() -> Result<(), String> {
    let bin = require(&super::GUNICORN).map_err(|e| e.to_string())?;
    let text = std::fs::read(&bin).map_err(|e| format!("cannot read {}: {e}", bin.display()))?;
    let first = text.split(|b| *b == b'\n').next().unwrap_or_default();
    let python = std::str::from_utf8(first)
        .ok()
        .and_then(|l| l.strip_prefix("#!"))
        .and_then(|l| l.split_whitespace().next())
        .unwrap_or("python3")
        .to_string();
    let out = Command::new(&python)
        .args(["-c", "import psycopg2"])
        .output()
        .map_err(|e| format!("cannot run {python}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("{python} (gunicorn's) cannot import psycopg2"))
    }
}
