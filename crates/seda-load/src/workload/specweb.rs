//! The SPECweb99 static file mix as Haboob's `HttpLoad` client ran it.
//!
//! SPECWEB99 (`docs/papers.md`): the URL is `/dirNNNNN/class{c}_{f}`; class `c` is drawn with
//! probabilities 0.35 / 0.50 / 0.14 / 0.01; the directory by Zipf with weight `1/i`; the file
//! within the class by Zipf over ranks mapped through `FILE_ORDER = {4,3,5,2,6,1,7,8,0}`.
//! Class and file are drawn independently. File `f` of class `c` is `(f + 1) · 102.4 · 10^c`
//! bytes (0.1–0.9 KB, 1–9 KB, 10–90 KB, 100–900 KB).
//!
//! **The quirk, fixed.** The original client draws Zipf over `NUMFILES = 8` ranks, so the ninth
//! entry of `FILE_ORDER`, file 0, is never requested. By default this client draws over all nine
//! ranks (file 0 gets rank 9, weight 1/9); [`SpecWeb::original_file_mix`] restores the original
//! behaviour for exact reproductions.

use std::io;
use std::path::Path;
use std::sync::Arc;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::{Reply, Request, Session, Workload, cumulative, sample};
use crate::LoadError;

const CLASS_PROBABILITY: [f64; 4] = [0.35, 0.50, 0.14, 0.01];
const FILE_ORDER: [usize; 9] = [4, 3, 5, 2, 6, 1, 7, 8, 0];

/// The SPECweb99-style static workload.
#[derive(Debug, Clone)]
pub struct SpecWeb {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    prefix: String,
    dirs: usize,
    dir_cdf: Vec<f64>,
    class_cdf: Vec<f64>,
    file_cdf: Vec<f64>,
}

impl SpecWeb {
    /// `dirs` directories under `prefix` (`""` or a path such as `/specweb`).
    pub fn new(prefix: &str, dirs: usize) -> Result<SpecWeb, LoadError> {
        SpecWeb::build(prefix, dirs, false)
    }

    /// Like [`SpecWeb::new`], but with the original client's file mix, which never requests
    /// file 0 of any class.
    pub fn original_file_mix(prefix: &str, dirs: usize) -> Result<SpecWeb, LoadError> {
        SpecWeb::build(prefix, dirs, true)
    }

    /// The number of directories the original client used for `connload` (Haboob: 1000 → 680).
    pub fn dirs_for_connload(connload: u32) -> usize {
        (25.0 + (400_000.0 / 122_000.0 * f64::from(connload)) / 5.0) as usize
    }

    /// The size of file `file` (0..9) of class `class` (0..4) in bytes.
    pub fn file_size(class: usize, file: usize) -> u64 {
        ((file as f64 + 1.0) * 102.4 * 10f64.powi(class as i32)).round() as u64
    }

    /// The path of a file, relative to the prefix.
    pub fn file_path(dir: usize, class: usize, file: usize) -> String {
        format!("/dir{dir:05}/class{class}_{file}")
    }

    /// Writes the `dirs` directories of files under `root` (for a server to serve); returns the
    /// bytes written. One directory is about 5.1 MB.
    pub fn write_files(root: &Path, dirs: usize) -> io::Result<u64> {
        let mut total = 0;
        for d in 0..dirs {
            std::fs::create_dir_all(root.join(format!("dir{d:05}")))?;
            for c in 0..4 {
                for f in 0..9 {
                    let size = SpecWeb::file_size(c, f);
                    let rel = SpecWeb::file_path(d, c, f);
                    std::fs::write(root.join(&rel[1..]), vec![b'x'; size as usize])?;
                    total += size;
                }
            }
        }
        Ok(total)
    }

    fn build(prefix: &str, dirs: usize, original: bool) -> Result<SpecWeb, LoadError> {
        if dirs == 0 || dirs > 1_000_000 {
            return Err(LoadError::BadWorkload(format!(
                "SPECweb directories must be 1 to 1,000,000, not {dirs}"
            )));
        }
        let ranks = if original { 8 } else { 9 };
        Ok(SpecWeb {
            inner: Arc::new(Inner {
                prefix: prefix.trim_end_matches('/').to_string(),
                dirs,
                dir_cdf: cumulative((1..=dirs).map(|i| 1.0 / i as f64)),
                class_cdf: cumulative(CLASS_PROBABILITY),
                file_cdf: cumulative((1..=ranks).map(|r| 1.0 / r as f64)),
            }),
        })
    }

    /// Draws `(dir, class, file)` from uniform numbers in [0, 1).
    fn draw(&self, u_dir: f64, u_class: f64, u_file: f64) -> (usize, usize, usize) {
        let i = &self.inner;
        let dir = sample(&i.dir_cdf, u_dir).min(i.dirs - 1);
        let class = sample(&i.class_cdf, u_class);
        let file = FILE_ORDER[sample(&i.file_cdf, u_file)];
        (dir, class, file)
    }
}

impl Workload for SpecWeb {
    fn classes(&self) -> Vec<String> {
        (0..4).map(|c| format!("class{c}")).collect()
    }

    fn session(&self, seed: u64) -> Box<dyn Session> {
        Box::new(SpecWebSession {
            mix: self.clone(),
            rng: SmallRng::seed_from_u64(seed),
        })
    }
}

struct SpecWebSession {
    mix: SpecWeb,
    rng: SmallRng,
}

impl Session for SpecWebSession {
    fn next_request(&mut self, _last: Option<&Reply<'_>>) -> Request {
        let (d, c, f) = self
            .mix
            .draw(self.rng.random(), self.rng.random(), self.rng.random());
        let path = format!("{}{}", self.mix.inner.prefix, SpecWeb::file_path(d, c, f));
        Request::get(path, c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shares(mix: &SpecWeb, n: usize) -> ([f64; 4], [f64; 9], Vec<f64>) {
        let mut rng = SmallRng::seed_from_u64(7);
        let (mut classes, mut files, mut dirs) = ([0.0; 4], [0.0; 9], vec![0.0; mix.inner.dirs]);
        for _ in 0..n {
            let (d, c, f) = mix.draw(rng.random(), rng.random(), rng.random());
            classes[c] += 1.0 / n as f64;
            files[f] += 1.0 / n as f64;
            dirs[d] += 1.0 / n as f64;
        }
        (classes, files, dirs)
    }

    #[test]
    fn class_and_file_shares_match_the_reference() {
        let (classes, files, _) = shares(&SpecWeb::original_file_mix("", 10).unwrap(), 200_000);
        for (got, want) in classes.iter().zip(CLASS_PROBABILITY) {
            assert!((got - want).abs() < 0.01, "class share {got} vs {want}");
        }
        // SPECWEB99's file ranks: 36.8% 18.4% 12.3% 9.2% 7.4% 6.1% 5.3% 4.6% 0.
        let want = [
            (4, 0.368),
            (3, 0.184),
            (5, 0.123),
            (2, 0.092),
            (8, 0.046),
            (0, 0.0),
        ];
        for (file, share) in want {
            assert!(
                (files[file] - share).abs() < 0.01,
                "file {file}: {}",
                files[file]
            );
        }
    }

    #[test]
    fn the_fixed_mix_requests_file_zero() {
        let (_, files, dirs) = shares(&SpecWeb::new("", 10).unwrap(), 200_000);
        let h9: f64 = (1..=9).map(|r| 1.0 / r as f64).sum();
        assert!(
            (files[0] - 1.0 / (9.0 * h9)).abs() < 0.01,
            "file 0: {}",
            files[0]
        );
        assert!((files[4] - 1.0 / h9).abs() < 0.01);
        // Zipf over directories: the first is twice as popular as the second.
        assert!(
            (dirs[0] / dirs[1] - 2.0).abs() < 0.1,
            "{} {}",
            dirs[0],
            dirs[1]
        );
    }

    #[test]
    fn sizes_paths_and_directory_count() {
        assert_eq!(SpecWeb::file_size(0, 0), 102);
        assert_eq!(SpecWeb::file_size(0, 8), 922);
        assert_eq!(SpecWeb::file_size(3, 8), 921_600);
        assert_eq!(SpecWeb::dirs_for_connload(1000), 680);
        let mut s = SpecWeb::new("/sw/", 3).unwrap().session(1);
        let r = s.next_request(None);
        assert!(r.path.starts_with("/sw/dir0000"), "{}", r.path);
        assert!(SpecWeb::new("", 0).is_err());
    }
}
