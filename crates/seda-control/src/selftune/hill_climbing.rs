//! The .NET thread pool's hill climbing, a peer pool sizer (HILL08; dotnet/runtime
//! `PortableThreadPool.HillClimbing.cs`).
//!
//! It maximises completions per second with no model and no target. It adds a square wave to
//! the thread count (period [`WAVE_PERIOD`] samples) and measures, with the Goertzel
//! algorithm, how much of that wave comes back in the throughput; the neighbouring frequencies
//! estimate the noise. The ratio of the two waves is the slope of throughput against threads:
//! positive, add threads; negative, remove them. The move is scaled by the confidence (signal
//! to noise over [`TARGET_SNR`]), raised to [`GAIN_EXPONENT`], biased against adding threads
//! by [`BIAS`], and limited to [`MAX_CHANGE_PER_SECOND`] and [`MAX_CHANGE_PER_SAMPLE`].
//!
//! Left out: .NET draws each sample's length at random between 10 and 200 ms; here the caller's
//! control period sets it. The starvation rule (a thread every 500 ms when nothing was
//! dequeued) and the 95% CPU cap belong to the runtime, not to this controller.

use num_complex_lite::Complex;

/// Samples per wave.
pub const WAVE_PERIOD: usize = 4;
/// Waves of history measured.
pub const WAVE_HISTORY: usize = 8;
/// Largest wave amplitude, in threads.
pub const MAX_WAVE_MAGNITUDE: f64 = 20.0;
/// Bias against adding threads (`targetThroughputRatio`).
pub const BIAS: f64 = 0.15;
/// Signal-to-noise ratio for full confidence.
pub const TARGET_SNR: f64 = 3.0;
/// Exponent on the move.
pub const GAIN_EXPONENT: f64 = 2.0;
/// Most threads changed per second of samples.
pub const MAX_CHANGE_PER_SECOND: f64 = 4.0;
/// Most threads changed in one sample.
pub const MAX_CHANGE_PER_SAMPLE: f64 = 20.0;
/// A sample with `(threads - 1) / completions` at or above this is merged into the next.
pub const MAX_SAMPLE_ERROR: f64 = 0.15;
/// Weight of a new noise estimate in the noise average.
const NOISE_SMOOTHING: f64 = 0.01;
/// Wave magnitude multiplier (.NET's `WaveMagnitudeMultiplier` of 100%).
const WAVE_MULTIPLIER: f64 = 1.0;

const SAMPLES: usize = WAVE_PERIOD * WAVE_HISTORY;

/// The .NET hill-climbing pool sizer (see the module docs).
#[derive(Debug, Clone)]
pub struct HillClimbing {
    min_threads: usize,
    max_threads: usize,
    throughput: [f64; SAMPLES],
    threads: [f64; SAMPLES],
    total: usize,
    setting: f64,
    noise: f64,
    pending_secs: f64,
    pending_completions: f64,
}

impl HillClimbing {
    /// A sizer between `min_threads` and `max_threads`, starting at `initial`.
    pub fn new(min_threads: usize, max_threads: usize, initial: usize) -> Self {
        let min_threads = min_threads.max(1);
        let max_threads = max_threads.max(min_threads);
        HillClimbing {
            min_threads,
            max_threads,
            throughput: [0.0; SAMPLES],
            threads: [0.0; SAMPLES],
            total: 0,
            setting: initial.clamp(min_threads, max_threads) as f64,
            noise: 0.0,
            pending_secs: 0.0,
            pending_completions: 0.0,
        }
    }

    /// Feeds one sample: `completions` over `secs` seconds with `threads` running. Returns the
    /// thread count for the next sample.
    pub fn update(&mut self, threads: usize, secs: f64, completions: u64) -> usize {
        if !(secs.is_finite() && secs > 0.0) {
            return threads.clamp(self.min_threads, self.max_threads);
        }
        let secs = secs + self.pending_secs;
        let completions = completions as f64 + self.pending_completions;
        if self.total > 0
            && (completions == 0.0 || (threads as f64 - 1.0) / completions >= MAX_SAMPLE_ERROR)
        {
            // Too few completions to tell the wave from noise: merge with the next sample.
            self.pending_secs = secs;
            self.pending_completions = completions;
            return threads.clamp(self.min_threads, self.max_threads);
        }
        self.pending_secs = 0.0;
        self.pending_completions = 0.0;

        let i = self.total % SAMPLES;
        self.throughput[i] = completions / secs;
        self.threads[i] = threads as f64;
        self.total += 1;

        let mut ratio = Complex::default();
        let mut confidence = 0.0;
        let n = ((self.total - 1).min(SAMPLES) / WAVE_PERIOD) * WAVE_PERIOD;
        if n > WAVE_PERIOD {
            let avg_tput = self.last(&self.throughput, n).iter().sum::<f64>() / n as f64;
            let avg_threads = self.last(&self.threads, n).iter().sum::<f64>() / n as f64;
            if avg_tput > 0.0 && avg_threads > 0.0 {
                let period = WAVE_PERIOD as f64;
                let waves = n as f64 / period;
                let tput_wave = self.wave(&self.throughput, n, period) / avg_tput;
                let mut err =
                    (self.wave(&self.throughput, n, n as f64 / (waves + 1.0)) / avg_tput).abs();
                let adjacent2 = n as f64 / (waves - 1.0);
                if adjacent2 <= n as f64 {
                    err = err.max((self.wave(&self.throughput, n, adjacent2) / avg_tput).abs());
                }
                let thread_wave = self.wave(&self.threads, n, period) / avg_threads;
                self.noise = if self.noise == 0.0 {
                    err
                } else {
                    NOISE_SMOOTHING * err + (1.0 - NOISE_SMOOTHING) * self.noise
                };
                if thread_wave.abs() > 0.0 {
                    ratio = (tput_wave - thread_wave * BIAS) / thread_wave;
                }
                let noise = self.noise.max(err);
                confidence = if noise > 0.0 {
                    thread_wave.abs() / noise / TARGET_SNR
                } else {
                    1.0
                };
            }
        }

        let mut step = ratio.re.clamp(-1.0, 1.0) * confidence.clamp(0.0, 1.0);
        step = step.abs().powf(GAIN_EXPONENT) * step.signum() * MAX_CHANGE_PER_SECOND * secs;
        step = step.min(MAX_CHANGE_PER_SAMPLE);
        self.setting += step;
        let magnitude = (0.5 + self.setting * self.noise * TARGET_SNR * WAVE_MULTIPLIER * 2.0)
            .floor()
            .clamp(1.0, MAX_WAVE_MAGNITUDE);
        self.setting = self.setting.clamp(
            self.min_threads as f64,
            (self.max_threads as f64 - magnitude).max(self.min_threads as f64),
        );
        let phase = ((self.total / (WAVE_PERIOD / 2)) % 2) as f64;
        let next = (self.setting + magnitude * phase) as usize;
        next.clamp(self.min_threads, self.max_threads)
    }

    /// The slow-moving thread count the wave rides on.
    pub fn setting(&self) -> f64 {
        self.setting
    }

    fn last(&self, ring: &[f64; SAMPLES], n: usize) -> Vec<f64> {
        (0..n)
            .map(|k| ring[(self.total - n + k) % SAMPLES])
            .collect()
    }

    /// The Goertzel algorithm: the component of the last `n` samples at `period`.
    fn wave(&self, ring: &[f64; SAMPLES], n: usize, period: f64) -> Complex {
        let w = 2.0 * std::f64::consts::PI / period;
        let (cos, sin) = (w.cos(), w.sin());
        let (mut q1, mut q2) = (0.0, 0.0);
        for x in self.last(ring, n) {
            let q0 = 2.0 * cos * q1 - q2 + x;
            q2 = q1;
            q1 = q0;
        }
        Complex::new(q1 - q2 * cos, q2 * sin) / n as f64
    }
}

/// The little complex arithmetic Goertzel needs (no dependency for four operations).
mod num_complex_lite {
    use std::ops::{Div, Mul, Sub};

    #[derive(Debug, Clone, Copy, Default, PartialEq)]
    pub struct Complex {
        pub re: f64,
        pub im: f64,
    }

    impl Complex {
        pub fn new(re: f64, im: f64) -> Self {
            Complex { re, im }
        }
        pub fn abs(self) -> f64 {
            self.re.hypot(self.im)
        }
    }

    impl Sub for Complex {
        type Output = Complex;
        fn sub(self, o: Complex) -> Complex {
            Complex::new(self.re - o.re, self.im - o.im)
        }
    }

    impl Mul<f64> for Complex {
        type Output = Complex;
        fn mul(self, k: f64) -> Complex {
            Complex::new(self.re * k, self.im * k)
        }
    }

    impl Div<f64> for Complex {
        type Output = Complex;
        fn div(self, k: f64) -> Complex {
            Complex::new(self.re / k, self.im / k)
        }
    }

    impl Div for Complex {
        type Output = Complex;
        fn div(self, o: Complex) -> Complex {
            let d = o.re * o.re + o.im * o.im;
            Complex::new(
                (self.re * o.re + self.im * o.im) / d,
                (self.im * o.re - self.re * o.im) / d,
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Throughput rises 30/s per thread up to `knee`, then falls 5/s per extra thread.
    fn plant(n: usize, knee: usize) -> f64 {
        let n = n as f64;
        let k = knee as f64;
        if n <= k {
            30.0 * n
        } else {
            30.0 * k - 5.0 * (n - k)
        }
    }

    fn run(knee: usize, start: usize, samples: usize) -> Vec<usize> {
        let mut hc = HillClimbing::new(1, 100, start);
        let mut n = start;
        let mut seen = Vec::new();
        for _ in 0..samples {
            // One-second samples; a little deterministic noise.
            let noise = if seen.len() % 3 == 0 { 1.0 } else { -0.5 };
            let completions = (plant(n, knee) + noise).max(0.0) as u64;
            n = hc.update(n, 1.0, completions);
            seen.push(n);
        }
        seen
    }

    #[test]
    fn climbs_toward_the_optimum_from_below() {
        let seen = run(20, 2, 400);
        let tail: Vec<usize> = seen[300..].to_vec();
        let mean = tail.iter().sum::<usize>() as f64 / tail.len() as f64;
        assert!((12.0..=28.0).contains(&mean), "mean {mean}: {seen:?}");
    }

    #[test]
    fn backs_off_from_above_the_optimum() {
        let seen = run(10, 40, 400);
        let tail: Vec<usize> = seen[300..].to_vec();
        let mean = tail.iter().sum::<usize>() as f64 / tail.len() as f64;
        assert!(mean < 25.0, "mean {mean}: {seen:?}");
    }

    #[test]
    fn stays_within_bounds_on_nonsense() {
        let mut hc = HillClimbing::new(2, 8, 4);
        for _ in 0..50 {
            let n = hc.update(100, f64::NAN, 0);
            assert!((2..=8).contains(&n));
            let n = hc.update(3, 1.0, u64::MAX / 2);
            assert!((2..=8).contains(&n));
        }
    }
}
