//! `seda fileset specweb99`: the SPECweb99 file set Haboob's benchmark served.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;

/// Arguments of `seda fileset specweb99`.
#[derive(Args, Debug)]
pub struct Specweb99Args {
    /// Output directory (created if missing; files of the right size are kept).
    #[arg(long)]
    out: PathBuf,
    /// Number of directories of 36 files (about 5 MB each; Haboob used 680).
    #[arg(long, default_value_t = 10)]
    dirs: usize,
}

/// Writes the file set.
pub fn specweb99(args: &Specweb99Args) -> anyhow::Result<()> {
    let bytes = seda_testbed::specweb::generate(&args.out, args.dirs)
        .with_context(|| format!("cannot write the file set under {}", args.out.display()))?;
    println!(
        "wrote {} directories, {} files, {:.1} MB under {}",
        args.dirs,
        args.dirs * 36,
        bytes as f64 / 1e6,
        args.out.display()
    );
    Ok(())
}
