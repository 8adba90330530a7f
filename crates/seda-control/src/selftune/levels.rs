//! The throughput against the thread count over the last few periods: a local line, where the
//! ARX model fits one line over its whole (forgetting) history.
//!
//! The ARX model relates a period's *change* of threads to its throughput, and keeps the climb
//! that fitted it long after the pool has left it: past a knee, its gain per thread still says
//! that threads pay. On `pool-control`'s PostgreSQL plant (throughput flat within its 8% noise
//! from 12 to 40 threads) P's model, fitted on the climb from 5 to 12 threads, agreed with
//! every addition whose change was within the noise, and P ran to 48 threads at 0.73 of the
//! best fixed pool. A least-squares line through the last [`WINDOW`] periods' levels sees the
//! plateau the pool is on.

use std::collections::VecDeque;

/// Periods the line is fitted over.
pub const WINDOW: usize = 10;

/// Fewest periods, and fewest threads between the smallest and largest pool among them, for a
/// line: fewer say nothing of a slope (see `two_sizes_draw_a_line`).
const MIN_PERIODS: usize = 4;
const MIN_SPREAD: f64 = 1.0;

/// Fewest readings beyond the first at each size for the window to measure a reading's noise.
const MIN_REPEATS: usize = 4;

/// Standard errors by which a size's mean reading must pass its neighbours' to be a peak.
pub const PEAK_Z: f64 = 2.0;

/// The last [`WINDOW`] periods' `(threads, throughput)`.
#[derive(Debug, Clone, Default)]
pub struct Levels {
    points: VecDeque<(f64, f64)>,
}

impl Levels {
    /// Records a period.
    pub fn push(&mut self, threads: usize, throughput: f64) {
        if self.points.len() == WINDOW {
            self.points.pop_front();
        }
        self.points.push_back((threads as f64, throughput));
    }

    /// The least-squares line's throughput per added thread near `threads` (through the
    /// periods that ran between half and twice as many), and its standard error. `None` while
    /// the window holds too few such periods or threads. Only nearby periods count because a
    /// plant's throughput is concave in its threads: a line from a climb at 3 to 7 threads
    /// says that threads pay at 30, and took a pool on a plateau from 6 threads to 42.
    pub fn slope(&self, threads: usize) -> Option<Slope> {
        let near = |p: &&(f64, f64)| (0.5..=2.0).contains(&(p.0 / threads.max(1) as f64));
        let points: Vec<(f64, f64)> = self.points.iter().filter(near).copied().collect();
        let n = points.len();
        if n < MIN_PERIODS {
            return None;
        }
        let (lo, hi) = points.iter().fold((f64::MAX, f64::MIN), |(lo, hi), p| {
            (lo.min(p.0), hi.max(p.0))
        });
        if hi - lo < MIN_SPREAD {
            return None;
        }
        let mean = |f: fn(&(f64, f64)) -> f64| points.iter().map(f).sum::<f64>() / n as f64;
        let (mx, my) = (mean(|p| p.0), mean(|p| p.1));
        let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
        let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
        let per_thread = sxy / sxx;
        let residual: f64 = points
            .iter()
            .map(|p| (p.1 - my - per_thread * (p.0 - mx)).powi(2))
            .sum();
        let std_error = (residual / (n - 2) as f64 / sxx).sqrt();
        (per_thread.is_finite() && std_error.is_finite()).then_some(Slope {
            per_thread,
            std_error,
            mean_threads: mx,
        })
    }

    /// Whether the mean reading at `threads` passes the mean readings at one thread fewer and
    /// one more (see [`Self::better`]): a peak the pool's own readings show. A line through
    /// readings on both sides of a sharp knee does not say that threads pay there, so an
    /// addition must show half a noise margin that the linear model's misses at the knee
    /// inflate (150-350/s on `pool-control`'s contended plant of 299/s): the addition from
    /// 11 threads to its knee of 12 (+9%) was undone in every other period. Only the sizes
    /// next to it decide: in `pool-control`'s quick form a
    /// pool that had read 10 threads and 16 held 14 as a peak, two threads past the knee.
    pub fn peak_at(&self, threads: usize, reading_sd: f64) -> bool {
        threads > 0
            && self.better(threads, threads - 1, reading_sd)
            && self.better(threads, threads + 1, reading_sd)
    }

    /// Whether the mean reading at `a` threads passes the mean at `b` by [`PEAK_Z`] standard
    /// errors of their difference (each reading off by `reading_sd`). Means over the window
    /// say more than one period's change: judged by the change alone, a removal from 15 to 14
    /// threads past the contended plant's knee read as within the noise, and the pool re-added
    /// the thread, period after period.
    pub fn better(&self, a: usize, b: usize, reading_sd: f64) -> bool {
        self.gain(a, b, reading_sd) > PEAK_Z
    }

    /// The mean reading at `threads`, where the window has one.
    pub fn mean_at(&self, threads: usize) -> Option<f64> {
        let sizes = self.by_size();
        let at = sizes.iter().find(|s| s.threads == threads as f64);
        at.map(|s| s.mean)
    }

    /// The largest size below `threads` the window read, and its mean reading.
    pub fn nearest_below(&self, threads: usize) -> Option<(usize, f64)> {
        let sizes = self.by_size();
        let below = sizes.iter().rev().find(|s| s.threads < threads as f64);
        below.map(|s| (s.threads as usize, s.mean))
    }

    /// By how many standard errors of their difference the mean reading at `a` threads passes
    /// the mean at `b` (each reading off by `reading_sd` where the window has not measured its
    /// noise); 0 where either size has no reading.
    pub fn gain(&self, a: usize, b: usize, reading_sd: f64) -> f64 {
        let sizes = self.by_size();
        let at = |n: usize| sizes.iter().find(|s| s.threads == n as f64);
        let (Some(a), Some(b)) = (at(a), at(b)) else {
            return 0.0;
        };
        let sd = within_size_sd(&sizes).unwrap_or(reading_sd);
        let z = (a.mean - b.mean) / (sd * (1.0 / a.count + 1.0 / b.count).sqrt());
        if z.is_finite() { z } else { 0.0 }
    }

    /// The window's readings summed up by pool size.
    fn by_size(&self) -> Vec<SizeReadings> {
        let mut sizes: Vec<f64> = self.points.iter().map(|p| p.0).collect();
        sizes.sort_by(f64::total_cmp);
        sizes.dedup();
        sizes
            .into_iter()
            .map(|threads| {
                let ys = || {
                    self.points
                        .iter()
                        .filter(move |p| p.0 == threads)
                        .map(|p| p.1)
                };
                let count = ys().count() as f64;
                let mean = ys().sum::<f64>() / count;
                let squares = ys().map(|y| (y - mean).powi(2)).sum();
                SizeReadings {
                    threads,
                    mean,
                    count,
                    squares,
                }
            })
            .collect()
    }
}

/// The readings at one pool size.
struct SizeReadings {
    threads: f64,
    mean: f64,
    count: f64,
    /// Squared distances of the readings from their mean, summed.
    squares: f64,
}

/// The standard deviation of a reading about its size's mean, pooled over the sizes: the noise
/// of a reading, measured apart from the moves. `None` with fewer than [`MIN_REPEATS`]
/// readings beyond the first at each size.
fn within_size_sd(sizes: &[SizeReadings]) -> Option<f64> {
    let repeats = sizes.iter().map(|s| s.count).sum::<f64>() - sizes.len() as f64;
    let squares: f64 = sizes.iter().map(|s| s.squares).sum();
    (repeats >= MIN_REPEATS as f64).then(|| (squares / repeats).sqrt())
}

/// A line's throughput per thread, events/s.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Slope {
    /// The fitted slope.
    pub per_thread: f64,
    /// Its standard error.
    pub std_error: f64,
    /// The mean thread count of the periods it was fitted over.
    pub mean_threads: f64,
}

impl Slope {
    /// At least `gain` per thread, beyond one standard error.
    pub fn pays(&self, gain: f64) -> bool {
        self.per_thread - self.std_error >= gain
    }

    /// Falling with more threads, beyond one standard error, at `threads` at or above the
    /// middle of the periods fitted. Below it the line may span a peak (a sharp knee
    /// inside the window reads as a fall on both of its sides) and says nothing of the slope
    /// there.
    pub fn falls_at(&self, threads: usize) -> bool {
        self.per_thread + self.std_error < 0.0 && threads as f64 >= self.mean_threads
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fed(points: &[(usize, f64)]) -> Levels {
        let mut l = Levels::default();
        for &(n, y) in points {
            l.push(n, y);
        }
        l
    }

    #[test]
    fn a_climb_pays_and_a_plateau_does_not() {
        let climb = fed(&[
            (5, 500.0),
            (6, 610.0),
            (8, 790.0),
            (10, 1010.0),
            (12, 1190.0),
        ]);
        assert!(climb.slope(10).expect("a line").pays(80.0));
        let plateau = fed(&[
            (12, 1400.0),
            (13, 1260.0),
            (15, 1490.0),
            (15, 1360.0),
            (18, 1180.0),
            (22, 1450.0),
            (24, 1330.0),
        ]);
        let flat = plateau.slope(18).expect("a line");
        assert!(!flat.pays(10.0) && !flat.falls_at(24), "{flat:?}");
        let past_a_knee = fed(&[
            (16, 1850.0),
            (20, 1840.0),
            (24, 1700.0),
            (28, 1560.0),
            (30, 1450.0),
        ]);
        let falling = past_a_knee.slope(24).expect("a line");
        assert!(falling.falls_at(30) && !falling.falls_at(16), "{falling:?}");
    }

    /// A knee visited on both sides is a peak by its readings' means.
    #[test]
    fn a_size_above_both_neighbours_is_a_peak() {
        let knee = fed(&[
            (11, 275.0),
            (12, 300.0),
            (13, 277.0),
            (14, 257.0),
            (12, 298.0),
            (11, 276.0),
        ]);
        assert!(knee.peak_at(12, 3.0));
        assert!(!knee.peak_at(11, 3.0) && !knee.peak_at(13, 3.0));
        assert!(!knee.peak_at(12, 30.0), "within the noise of a reading");
        assert!(!fed(&[(12, 300.0), (13, 277.0), (12, 299.0)]).peak_at(12, 3.0));
        let apart = fed(&[
            (10, 495.0),
            (14, 515.0),
            (16, 424.0),
            (10, 497.0),
            (14, 512.0),
        ]);
        assert!(
            !apart.peak_at(14, 3.0),
            "sizes two threads away say nothing of 13"
        );
    }

    /// Where sizes were read several times, their spread is the noise the means are judged
    /// by, not the caller's estimate.
    #[test]
    fn the_noise_of_a_reading_is_measured_at_each_size() {
        let l = fed(&[
            (14, 256.0),
            (15, 240.0),
            (14, 254.0),
            (15, 238.0),
            (14, 257.0),
            (15, 241.0),
        ]);
        assert!(l.better(14, 15, 50.0) && !l.better(15, 14, 50.0));
        assert!(!fed(&[(14, 256.0), (15, 240.0)]).better(14, 15, 50.0));
    }

    #[test]
    fn too_few_periods_or_threads_give_no_line() {
        assert_eq!(fed(&[(5, 1.0), (9, 2.0), (12, 3.0)]).slope(9), None);
        let one_size = fed(&[(8, 1.0), (8, 2.0), (8, 3.0), (8, 2.0), (8, 1.0)]);
        assert_eq!(one_size.slope(8), None);
    }

    /// A pool that adds a thread and undoes it, period after period, learns from the two
    /// sizes it alternates between: with a spread of two threads required, P held 27 and 28
    /// threads for 28 periods on the PostgreSQL plant, where 20 served a tenth more.
    #[test]
    fn two_sizes_draw_a_line() {
        let l = fed(&[
            (27, 1720.0),
            (28, 1721.0),
            (27, 1627.0),
            (28, 1662.0),
            (27, 1586.0),
            (28, 1610.0),
        ]);
        assert!(!l.slope(27).expect("a line").pays(6.0));
    }

    #[test]
    fn only_periods_near_the_pool_count() {
        let l = fed(&[
            (3, 750.0),
            (4, 850.0),
            (5, 950.0),
            (6, 1030.0),
            (7, 1100.0),
            (14, 1300.0),
            (18, 1290.0),
            (22, 1310.0),
            (30, 1300.0),
        ]);
        assert!(l.slope(5).expect("a line").pays(50.0));
        assert!(!l.slope(22).expect("a line").pays(5.0));
    }

    #[test]
    fn only_the_last_window_counts() {
        let mut l = fed(&[(2, 200.0), (4, 400.0), (6, 600.0), (8, 800.0)]);
        for k in 0..WINDOW {
            l.push(10 + 2 * (k % 3), 1000.0);
        }
        assert!(!l.slope(12).expect("a line").pays(0.1));
    }
}
