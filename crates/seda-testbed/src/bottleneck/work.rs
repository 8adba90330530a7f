//! The bottleneck's CPU work: a deterministic data file, reads of a varying size, checksums.
//!
//! WC03 Section 4.5: "for each request, the stage reads a varying amount of data from a file,
//! computes checksums on the file data, and produces a dynamically generated HTML page". The
//! quality factor scales both the amount read and the number of checksum passes, so the
//! variable part of a request's cost falls with the square of the quality. A fixed part (the
//! `base` bytes, checksummed once whatever the quality) bounds what degrading can gain, as the
//! WC03 text implies: even the lowest quality may not meet the target under an extreme spike.

use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// The data file the stage reads: `len` bytes of a seeded pseudo-random stream, so every run
/// reads the same content. Removed on drop when this process created it.
#[derive(Debug)]
pub(crate) struct DataFile {
    file: File,
    path: PathBuf,
    len: u64,
}

impl DataFile {
    /// Writes `len` (at least 1) deterministic bytes to `path` (replacing it) and opens it.
    pub(crate) fn create(path: &Path, len: u64, seed: u64) -> io::Result<DataFile> {
        let len = len.max(1);
        let mut out = io::BufWriter::new(File::create(path)?);
        let mut state = seed;
        let mut left = len;
        while left > 0 {
            let word = splitmix64(&mut state).to_le_bytes();
            let n = left.min(8) as usize;
            out.write_all(&word[..n])?;
            left -= n as u64;
        }
        out.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        let file = File::open(path)?;
        Ok(DataFile {
            file,
            path: path.to_path_buf(),
            len,
        })
    }

    /// Where the file is.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Its length in bytes.
    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    /// Fills `buf` from `offset` on, wrapping around at the end of the file.
    pub(crate) fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let mut done = 0;
        let mut at = offset % self.len;
        while done < buf.len() {
            let want = (buf.len() - done).min((self.len - at) as usize);
            self.file.read_exact_at(&mut buf[done..done + want], at)?;
            done += want;
            at = (at + want as u64) % self.len;
        }
        Ok(())
    }
}

impl Drop for DataFile {
    fn drop(&mut self) {
        // Best effort: a leftover file in the temporary directory is harmless.
        let _ = std::fs::remove_file(&self.path);
    }
}

/// How much work one request does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    /// Bytes read from the file and checksummed `rounds` times.
    pub bytes: usize,
    /// Checksum passes over those bytes.
    pub rounds: u32,
    /// Where the read starts (wrapping around at the end of the file).
    pub offset: u64,
}

/// The work at `quality` (clamped to `[0, 1]`) for a request whose size factor is `size` (the
/// request's share of the mean, in `[0.5, 1.5]`): `quality x size x work_bytes` bytes (at least
/// one) and `quality x rounds` passes, rounded up (at least one).
pub(crate) fn plan(work_bytes: usize, rounds: u32, quality: f64, size: f64, offset: u64) -> Plan {
    let q = if quality.is_finite() {
        quality.clamp(0.0, 1.0)
    } else {
        1.0
    };
    let bytes = ((work_bytes as f64) * q * size).round().max(1.0) as usize;
    let rounds = ((f64::from(rounds) * q).ceil() as u32).max(1);
    Plan {
        bytes,
        rounds,
        offset,
    }
}

/// `rounds` chained FNV-1a passes over `data`: each pass starts from the previous result, so
/// the passes cannot be merged or skipped by the compiler.
pub(crate) fn checksum(data: &[u8], rounds: u32) -> u64 {
    let mut h = FNV_OFFSET;
    for _ in 0..rounds {
        h = fnv1a(h, data);
    }
    h
}

/// Chained FNV-1a passes over `data` until `total` bytes were hashed (the last pass partial).
pub(crate) fn checksum_bytes(data: &[u8], total: usize) -> u64 {
    let mut h = FNV_OFFSET;
    let mut left = total;
    while left > 0 && !data.is_empty() {
        let n = left.min(data.len());
        h = fnv1a(h, &data[..n]);
        left -= n;
    }
    h
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

fn fnv1a(mut h: u64, data: &[u8]) -> u64 {
    for &b in data {
        h ^= u64::from(b);
        h = h.wrapping_mul(FNV_PRIME);
    }
    h
}

/// One step of SplitMix64: a fast, well-mixed 64-bit sequence (Steele et al. 2014).
pub(crate) fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The `n`-th request's draw from the sequence of `seed`: a size factor uniform in
/// `[0.5, 1.5)` and a file offset below `file_len`.
pub(crate) fn draw(seed: u64, n: u64, file_len: u64) -> (f64, u64) {
    let mut s = seed ^ n.wrapping_mul(0xd6e8_feb8_6659_fd93);
    let a = splitmix64(&mut s);
    let b = splitmix64(&mut s);
    let size = 0.5 + (a >> 11) as f64 / (1u64 << 53) as f64;
    (size, b % file_len.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str) -> PathBuf {
        std::env::temp_dir().join(format!("seda-bottleneck-{}-{name}", std::process::id()))
    }

    #[test]
    fn the_file_is_deterministic_and_reads_wrap_around() {
        let (a, b) = (temp("a"), temp("b"));
        let fa = DataFile::create(&a, 100, 7).unwrap();
        let fb = DataFile::create(&b, 100, 7).unwrap();
        assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
        assert_eq!(fa.len(), 100);
        let whole = std::fs::read(&a).unwrap();
        let mut buf = vec![0; 30];
        fa.read_at(&mut buf, 90).unwrap();
        assert_eq!(&buf[..10], &whole[90..]);
        assert_eq!(&buf[10..], &whole[..20]);
        drop((fa, fb));
        assert!(!a.exists() && !b.exists(), "removed on drop");
    }

    #[test]
    fn quality_scales_bytes_and_rounds() {
        let full = plan(1000, 8, 1.0, 1.0, 0);
        assert_eq!((full.bytes, full.rounds), (1000, 8));
        let half = plan(1000, 8, 0.5, 1.0, 0);
        assert_eq!((half.bytes, half.rounds), (500, 4));
        let low = plan(1000, 8, 0.0001, 0.5, 0);
        assert_eq!((low.bytes, low.rounds), (1, 1));
        assert_eq!(plan(1000, 8, f64::NAN, 1.5, 0).bytes, 1500);
        assert_eq!(plan(1000, 8, 7.0, 1.0, 0).rounds, 8);
    }

    #[test]
    fn rounds_chain() {
        let data = b"seda";
        assert_ne!(checksum(data, 1), checksum(data, 2));
        assert_eq!(checksum(data, 2), fnv1a(fnv1a(FNV_OFFSET, data), data));
        // FNV-1a 64 of "a", a published test vector.
        assert_eq!(checksum(b"a", 1), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(checksum_bytes(data, 8), checksum(data, 2));
        assert_eq!(
            checksum_bytes(data, 6),
            fnv1a(fnv1a(FNV_OFFSET, data), b"se")
        );
        assert_eq!(checksum_bytes(data, 0), FNV_OFFSET);
    }

    #[test]
    fn draws_cover_the_size_range() {
        let sizes: Vec<f64> = (0..1000).map(|n| draw(1, n, 10).0).collect();
        assert!(sizes.iter().all(|s| (0.5..1.5).contains(s)));
        let mean = sizes.iter().sum::<f64>() / sizes.len() as f64;
        assert!((mean - 1.0).abs() < 0.05, "{mean}");
        assert!(sizes.iter().any(|s| *s < 0.6) && sizes.iter().any(|s| *s > 1.4));
        assert_eq!(draw(1, 5, 10), draw(1, 5, 10));
        assert!((0..100).all(|n| draw(3, n, 10).1 < 10));
    }
}
