//! The SPECweb99 file set, written once per `seda lab run` into the lab's cache directory.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use seda_load::workload::SpecWeb;

use crate::lab::Lab;

/// Bytes in `dirs` directories (36 files each, about 5.1 MB).
pub fn bytes(dirs: usize) -> u64 {
    let per_dir: u64 = (0..4)
        .flat_map(|c| (0..9).map(move |f| SpecWeb::file_size(c, f)))
        .sum();
    per_dir * dirs as u64
}

/// The file set of `dirs` directories under the lab's cache, written where a file is missing
/// or has the wrong size (so a second scenario or run reuses it).
pub fn ensure(lab: &Lab, dirs: usize) -> Result<PathBuf> {
    let root = lab.cache_dir()?.join(format!("specweb99-{dirs}"));
    let mut written = 0u64;
    for d in 0..dirs {
        for c in 0..4 {
            for f in 0..9 {
                written += ensure_file(&root, d, c, f)?;
            }
        }
    }
    if written > 0 {
        lab.log(format!(
            "wrote {:.0} MB of the SPECweb99 file set under {}",
            written as f64 / 1e6,
            root.display()
        ));
    }
    Ok(root)
}

fn ensure_file(root: &Path, dir: usize, class: usize, file: usize) -> Result<u64> {
    let size = SpecWeb::file_size(class, file);
    let rel = SpecWeb::file_path(dir, class, file);
    let path = root.join(rel.trim_start_matches('/'));
    if std::fs::metadata(&path).is_ok_and(|m| m.len() == size) {
        return Ok(0);
    }
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
    }
    let len = usize::try_from(size).context("file size")?;
    std::fs::write(&path, vec![b'x'; len])
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(size)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_is_about_five_megabytes() {
        let b = bytes(1);
        assert!((5_000_000..5_200_000).contains(&b), "{b}");
        // Haboob's 680 directories: the paper's "3.31 GB" (here 3.48 GB, 3.24 GiB).
        assert_eq!(bytes(680), 680 * b);
    }
}
