//! The lab's seeded corpus of mailboxes (built once a run, copied for each server) and the
//! store's audit after a run: what tells that nothing was lost or doubled.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use seda_mail::store::Audit;

use super::CORPUS_USERS;
use crate::lab::Lab;
use crate::outcome::Check;

/// The mail store's table layout the cached corpus was built with; raise it when the layout
/// changes (2: hashed passwords and a class per user; 3: cheaper password hashes; 4: listing
/// indexes in each sort's order, and the second half of the users in class 1).
const CORPUS_LAYOUT: u32 = 4;

/// A seeded corpus, built once per `seda lab run` and copied for each server so that every
/// run starts from the same mailboxes.
pub(super) fn corpus(lab: &Lab) -> Result<PathBuf> {
    // The name carries the store's table layout: a corpus cached by an older build (clear-text
    // passwords, no class column) is refused by `seda serve mail`, so it must not be reused.
    let template = lab
        .cache_dir()?
        .join(format!("mail-{CORPUS_USERS}-layout{CORPUS_LAYOUT}.db"));
    if !template.exists() {
        let partial = template.with_extension("partial");
        let _ = std::fs::remove_file(&partial);
        lab.log(format!("seeding a corpus of {CORPUS_USERS} users"));
        let status = lab
            .seda(&[
                "mail",
                "corpus",
                "--users",
                &CORPUS_USERS.to_string(),
                "--db",
            ])
            .arg(&partial)
            .stdout(std::process::Stdio::null())
            .status()
            .context("cannot run `seda mail corpus`")?;
        if !status.success() {
            bail!("`seda mail corpus` failed ({status})");
        }
        std::fs::rename(&partial, &template)?;
    }
    Ok(template)
}

/// The audit of the lab's corpus as seeded: what every server's copy starts from.
pub fn corpus_audit(lab: &Lab) -> Result<Audit> {
    audit_db(&corpus(lab)?)
}

/// Whole: every user and message the corpus had, each folder's count right.
pub(crate) fn audit_clean(a: &Audit, before: &Audit) -> bool {
    a == before && a.bad_folders == 0 && a.messages == a.folder_counts
}

/// The enforced claim that variant `name`'s store came out of its run whole.
pub(crate) fn audit_check(name: &str, audit: &Audit, before: &Audit) -> Check {
    Check::new(
        format!("{name}: nothing lost or doubled in the store (audit after the run)"),
        audit_clean(audit, before),
        format!(
            "{} users, {} messages, folder counts {}, {} bad folders (corpus: {} users, {} \
             messages)",
            audit.users,
            audit.messages,
            audit.folder_counts,
            audit.bad_folders,
            before.users,
            before.messages
        ),
    )
}

/// The store's audit of the SQLite database at `db`.
pub(super) fn audit_db(db: &Path) -> Result<Audit> {
    let url = db.to_str().context("the database path is not UTF-8")?;
    let store = seda_mail::store::open(url, "")
        .map_err(|e| anyhow::anyhow!("cannot open {url} to audit it: {e}"))?;
    store
        .audit()
        .map_err(|e| anyhow::anyhow!("audit of {url} failed: {e}"))
}

/// Removes a SQLite database with its write-ahead log: a stale log left beside a fresh copy
/// would be replayed into it and corrupt it.
pub(super) fn remove_db(db: &Path) {
    for suffix in ["", "-wal", "-shm"] {
        let mut p = db.as_os_str().to_owned();
        p.push(suffix);
        let _ = std::fs::remove_file(p);
    }
}
