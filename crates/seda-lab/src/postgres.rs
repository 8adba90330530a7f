//! The PostgreSQL the lab's database scenarios use (`cluster`, `proxy-spike`, `pool-control`):
//! the one `.ci/run`'s machine runs on 127.0.0.1 with trust authentication. Each scenario
//! keeps its own tables, by prefix.

use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// Where it listens.
pub const ADDR: &str = "127.0.0.1:5432";
/// Its URL, as `seda serve mail --db` and `seda_mail::store::open` take it.
pub const URL: &str = "postgres://postgres@127.0.0.1:5432/test";
/// The same database as libpq keywords, as psycopg2 (the gunicorn app) takes it.
pub const DSN: &str = "host=127.0.0.1 port=5432 user=postgres dbname=test";

/// Why PostgreSQL cannot be used here, if it cannot: nothing answers on [`ADDR`].
pub fn missing() -> Option<String> {
    let addr: SocketAddr = ADDR.parse().ok()?;
    TcpStream::connect_timeout(&addr, Duration::from_secs(1))
        .is_err()
        .then(|| format!("no PostgreSQL listening on {ADDR}"))
}

/// Vacuums the mail tables with `prefix`, where they exist, so that a scenario's servers start
/// on the same store each run: autovacuum is off on the lab's machine, and every refile and
/// delete would leave its dead row behind for every later run to read past
/// ([`seda_mail::store::Store::reclaim`]).
pub fn reclaim_mail_tables(prefix: &str) -> anyhow::Result<()> {
    let store = seda_mail::store::open(URL, prefix)?;
    if store.tables()? == 3 {
        store.reclaim()?;
    }
    Ok(())
}
