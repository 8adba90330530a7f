//! The PostgreSQL the lab's database scenarios use (`cluster`, `proxy-spike`, `pool-control`):
//! the one `.ci/run`'s machine runs on 127.0.0.1 with trust authentication. Each scenario
//! keeps its own tables, by prefix.

use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use crate::peers::Absent;

/// Where it listens.
pub const ADDR: &str = "127.0.0.1:5432";
/// Its URL, as `seda serve mail --db` and `seda_mail::store::open` take it.
pub const URL: &str = "postgres://postgres@127.0.0.1:5432/test";
/// The same database as libpq keywords, as psycopg2 (the gunicorn app) takes it.
pub const DSN: &str = "host=127.0.0.1 port=5432 user=postgres dbname=test";

/// PostgreSQL, if it cannot be used here (nothing answers on [`ADDR`]), and why: what a
/// scenario that needs it hands to [`crate::Lab::skip`].
pub fn missing() -> Option<Absent> {
    let addr: SocketAddr = ADDR.parse().ok()?;
    TcpStream::connect_timeout(&addr, Duration::from_secs(1))
        .is_err()
        .then(|| {
            Absent::new(
                &crate::peers::POSTGRESQL,
                format!("nothing listens on {ADDR}"),
            )
        })
}

/// The PostgreSQL servers running here (each `postgres` process whose parent is not one): a
/// scenario on the lab's database hands them to [`crate::Lab::uses_service`], so that their
/// backends' work on the load generator's core counts as the system's, not as interference.
pub fn postmasters() -> Vec<u32> {
    let comm = |pid: &str| std::fs::read_to_string(format!("/proc/{pid}/comm")).ok();
    let parent = |pid: &str| -> Option<String> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        crate::procfs::stat_field(&stat, 1).map(str::to_string)
    };
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    procs
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|pid| pid.bytes().all(|b| b.is_ascii_digit()))
        .filter(|pid| comm(pid).is_some_and(|c| c.trim() == "postgres"))
        .filter(|pid| {
            parent(pid)
                .and_then(|pp| comm(&pp))
                .is_none_or(|c| c.trim() != "postgres")
        })
        .filter_map(|pid| pid.parse().ok())
        .collect()
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

#[cfg(test)]
mod tests {
    #[test]
    fn the_postmaster_and_its_backends_are_found_where_postgresql_runs() {
        if let Some(absent) = super::missing() {
            let what = "seda-lab test the_postmaster_and_its_backends_are_found";
            return crate::peers::skip(what, absent.peer, &absent.why);
        }
        let pids = super::postmasters();
        assert!(
            !pids.is_empty(),
            "PostgreSQL listens, but no postmaster was found"
        );
        // Its children (the checkpointer, the writer, ...) are in its tree.
        let threads: Vec<_> = pids
            .iter()
            .flat_map(|&p| crate::procfs::tree_threads(p))
            .collect();
        assert!(threads.len() > pids.len(), "{threads:?}");
    }
}
