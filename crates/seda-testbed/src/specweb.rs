//! The SPECweb99 static file set as Haboob's benchmark used it, and its request mix.
//!
//! Directories `dirNNNNN` of 36 files `class{c}_{f}`: four classes of nine sizes each,
//! 0.1-0.9 KB, 1-9 KB, 10-90 KB and 100-900 KB (about 5 MB per directory). Requests pick a
//! directory by Zipf (weight 1/i), a class with probabilities 0.35/0.50/0.14/0.01, and a file by
//! Zipf over eight ranks mapped through `FILE_ORDER` (file 0 is never asked for), as in
//! `HttpLoad.java` (SPECWEB99 in `docs/papers.md`).

use std::fs;
use std::io;
use std::path::Path;

use rand::Rng;

/// Files per class.
pub const FILES_PER_CLASS: usize = 9;
/// Size classes.
pub const CLASSES: usize = 4;
/// Base size of each class, bytes (file `f` has `(f + 1) * base`; class 0 uses tenths of KB).
const CLASS_BASE: [u64; CLASSES] = [1024, 1024, 10 * 1024, 100 * 1024];
/// Access probability of each class.
pub const CLASS_PROBABILITY: [f64; CLASSES] = [0.35, 0.50, 0.14, 0.01];
/// Zipf rank (1-based position) to file number.
pub const FILE_ORDER: [usize; 9] = [4, 3, 5, 2, 6, 1, 7, 8, 0];
/// Ranks drawn by the Zipf within a class.
const NUM_FILES: usize = 8;

/// Size in bytes of file `f` of class `c`.
pub fn file_size(class: usize, file: usize) -> u64 {
    let n = file as u64 + 1;
    if class == 0 {
        CLASS_BASE[0] * n / 10
    } else {
        CLASS_BASE[class] * n
    }
}

/// The URL path of a file.
pub fn url(dir: usize, class: usize, file: usize) -> String {
    format!("/dir{dir:05}/class{class}_{file}")
}

/// Total bytes of a file set of `dirs` directories.
pub fn total_bytes(dirs: usize) -> u64 {
    let per_dir: u64 = (0..CLASSES)
        .flat_map(|c| (0..FILES_PER_CLASS).map(move |f| file_size(c, f)))
        .sum();
    per_dir * dirs as u64
}

/// Deterministic file content: printable bytes from a SplitMix64 stream seeded by the name.
pub fn content(dir: usize, class: usize, file: usize) -> Vec<u8> {
    let len = usize::try_from(file_size(class, file)).unwrap_or(0);
    let mut state = (dir as u64) << 16 | (class as u64) << 8 | file as u64;
    let mut out = Vec::with_capacity(len);
    while out.len() < len {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        for b in z.to_le_bytes() {
            if out.len() < len {
                // 64 printable characters; a newline every 64 bytes keeps the files readable.
                out.push(if out.len() % 64 == 63 {
                    b'\n'
                } else {
                    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
                        [usize::from(b & 63)]
                });
            }
        }
    }
    out
}

/// Writes `dirs` directories under `out`; files that already have the right size are kept.
/// Returns the number of bytes in the set.
pub fn generate(out: &Path, dirs: usize) -> io::Result<u64> {
    for d in 0..dirs {
        let dir = out.join(format!("dir{d:05}"));
        fs::create_dir_all(&dir)?;
        for c in 0..CLASSES {
            for f in 0..FILES_PER_CLASS {
                let path = dir.join(format!("class{c}_{f}"));
                if fs::metadata(&path).is_ok_and(|m| m.len() == file_size(c, f)) {
                    continue;
                }
                fs::write(&path, content(d, c, f))?;
            }
        }
    }
    Ok(total_bytes(dirs))
}

/// Draws requests of the SPECweb99 mix over `dirs` directories.
#[derive(Debug, Clone)]
pub struct Mix {
    dir_cdf: Vec<f64>,
    file_cdf: Vec<f64>,
}

fn zipf_cdf(n: usize) -> Vec<f64> {
    let mut acc = 0.0;
    let mut cdf: Vec<f64> = (1..=n)
        .map(|i| {
            acc += 1.0 / i as f64;
            acc
        })
        .collect();
    for x in &mut cdf {
        *x /= acc;
    }
    cdf
}

fn pick(cdf: &[f64], u: f64) -> usize {
    cdf.partition_point(|&x| x < u).min(cdf.len() - 1)
}

impl Mix {
    /// The mix over `dirs` directories (at least one).
    pub fn new(dirs: usize) -> Mix {
        Mix {
            dir_cdf: zipf_cdf(dirs.max(1)),
            file_cdf: zipf_cdf(NUM_FILES),
        }
    }

    /// One request: (directory, class, file).
    pub fn sample(&self, rng: &mut impl Rng) -> (usize, usize, usize) {
        let dir = pick(&self.dir_cdf, rng.random());
        let u: f64 = rng.random();
        let mut acc = 0.0;
        let mut class = CLASSES - 1;
        for (c, p) in CLASS_PROBABILITY.iter().enumerate() {
            acc += p;
            if u < acc {
                class = c;
                break;
            }
        }
        let file = FILE_ORDER[pick(&self.file_cdf, rng.random())];
        (dir, class, file)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn sizes_and_layout() {
        assert_eq!(file_size(0, 0), 102);
        assert_eq!(file_size(0, 8), 921);
        assert_eq!(file_size(1, 0), 1024);
        assert_eq!(file_size(3, 8), 921_600);
        let per_dir = total_bytes(1);
        assert!((5_000_000..5_200_000).contains(&per_dir), "{per_dir}");
        assert_eq!(content(3, 1, 2).len(), 3072);
        assert_eq!(content(3, 1, 2), content(3, 1, 2));
        assert_ne!(content(3, 1, 2), content(4, 1, 2));
    }

    #[test]
    fn mix_follows_the_shares() {
        let mix = Mix::new(10);
        let mut rng = rand::rngs::SmallRng::seed_from_u64(1);
        let n = 100_000;
        let mut class = [0usize; 4];
        let mut file4 = 0;
        let mut file0 = 0;
        for _ in 0..n {
            let (_, c, f) = mix.sample(&mut rng);
            class[c] += 1;
            file4 += usize::from(f == 4);
            file0 += usize::from(f == 0);
        }
        assert_eq!(file0, 0, "file 0 is never requested");
        let share = |k: usize| k as f64 / n as f64;
        assert!((share(class[1]) - 0.50).abs() < 0.01);
        assert!((share(file4) - 0.368).abs() < 0.01);
    }
}
