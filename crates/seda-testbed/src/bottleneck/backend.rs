//! An *emulated* backend (a sleep, not real I/O): the plant where a pool's size matters.
//!
//! Each call waits `latency`, or with a `spread` a wait drawn uniformly within that share of
//! it on either side (the same mean; a seeded sequence, so runs repeat): a real backend's
//! calls vary, and with every call alike each response time is a whole number of waits, so a
//! percentile moves by a whole wait at once (`dynamic-groups`' p90 read 0.37 or 0.46 x its
//! target from run to run). With `channels`, at most that many calls are served at once and
//! the rest queue for a free one, so throughput grows with threads up to `channels` and stays
//! flat beyond (a device with that many channels). With a `knee`, the backend is a bounded
//! resource that thrashes past `knee` callers at once: the wait becomes
//! `latency x (active / knee)^2`, so throughput (`n / wait`) peaks at `knee` threads and falls
//! beyond (an interior optimum). FAIR07 Section
//! 5.1's stages block on I/O the same way; `seda serve bottleneck --backend-ms` and the lab's
//! `pool-control` use this one type.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

/// See the module docs.
#[derive(Debug)]
pub struct EmulatedBackend {
    latency: Duration,
    knee: usize,
    channels: usize,
    spread: f64,
    /// Calls so far: the position in the sequence the spread's draws come from.
    calls: AtomicU64,
    active: AtomicU64,
    busy: Mutex<usize>,
    freed: Condvar,
}

impl EmulatedBackend {
    /// A backend that answers in `latency`, thrashing past `knee` callers (0: never).
    pub fn new(latency: Duration, knee: usize) -> Self {
        EmulatedBackend {
            latency,
            knee,
            channels: 0,
            spread: 0.0,
            calls: AtomicU64::new(0),
            active: AtomicU64::new(0),
            busy: Mutex::new(0),
            freed: Condvar::new(),
        }
    }

    /// Serves at most `channels` calls at once (0: no limit); the rest wait for a channel.
    pub fn with_channels(mut self, channels: usize) -> Self {
        self.channels = channels;
        self
    }

    /// Draws each call's wait uniformly within `spread` (held to `[0, 1]`) of its mean on
    /// either side, from a sequence seeded by `seed`.
    pub fn with_spread(mut self, spread: f64, seed: u64) -> Self {
        self.spread = if spread.is_finite() {
            spread.clamp(0.0, 1.0)
        } else {
            0.0
        };
        self.calls = AtomicU64::new(seed);
        self
    }

    /// The share of the mean wait the next call waits: 1 without a spread.
    fn draw(&self) -> f64 {
        if self.spread == 0.0 {
            return 1.0;
        }
        let mut n = self.calls.fetch_add(1, Ordering::Relaxed);
        let u = super::work::splitmix64(&mut n) as f64 / (u64::MAX as f64 + 1.0);
        1.0 + self.spread * (2.0 * u - 1.0)
    }

    /// The wait with `active` callers at once.
    pub fn wait_with(&self, active: u64) -> Duration {
        if self.knee == 0 {
            return self.latency;
        }
        let over = (active as f64 / self.knee as f64).max(1.0);
        self.latency.mul_f64(over * over)
    }

    /// Blocks the calling thread for one call's wait.
    pub fn call(&self) {
        if self.latency.is_zero() {
            return;
        }
        if self.channels > 0 {
            let mut busy = self.busy.lock();
            while *busy >= self.channels {
                self.freed.wait(&mut busy);
            }
            *busy += 1;
        }
        let active = self.active.fetch_add(1, Ordering::SeqCst) + 1;
        std::thread::sleep(self.wait_with(active).mul_f64(self.draw()));
        self.active.fetch_sub(1, Ordering::SeqCst);
        if self.channels > 0 {
            *self.busy.lock() -= 1;
            self.freed.notify_one();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn throughput_peaks_at_the_knee() {
        let b = EmulatedBackend::new(Duration::from_millis(10), 6);
        let throughput = |n: u64| n as f64 / b.wait_with(n).as_secs_f64();
        assert_eq!(b.wait_with(3), Duration::from_millis(10));
        assert!(throughput(6) > throughput(5));
        assert!(throughput(6) > throughput(7));
        assert!(throughput(12) < 0.6 * throughput(6));
        let free = EmulatedBackend::new(Duration::from_millis(10), 0);
        assert_eq!(free.wait_with(100), Duration::from_millis(10));
    }

    #[test]
    fn a_spread_varies_the_waits_around_the_same_mean() {
        let b = EmulatedBackend::new(Duration::from_millis(40), 0).with_spread(0.5, 7);
        let draws: Vec<f64> = (0..10_000).map(|_| b.draw()).collect();
        let mean = draws.iter().sum::<f64>() / draws.len() as f64;
        assert!((mean - 1.0).abs() < 0.02, "mean {mean}");
        assert!(draws.iter().all(|d| (0.5..1.5).contains(d)));
        let low = draws.iter().filter(|&&d| d < 0.75).count();
        assert!((2_000..3_000).contains(&low), "{low} of 10,000 below 0.75");
        let again = EmulatedBackend::new(Duration::from_millis(40), 0).with_spread(0.5, 7);
        assert_eq!(again.draw(), draws[0], "a seeded sequence");
        let fixed = EmulatedBackend::new(Duration::from_millis(40), 0);
        assert_eq!(fixed.draw(), 1.0);
    }

    #[test]
    fn channels_bound_the_calls_served_at_once() {
        let b = std::sync::Arc::new(
            EmulatedBackend::new(Duration::from_millis(20), 0).with_channels(2),
        );
        let most = std::sync::Arc::new(AtomicU64::new(0));
        let threads: Vec<_> = (0..6)
            .map(|_| {
                let (b, most) = (b.clone(), most.clone());
                std::thread::spawn(move || {
                    for _ in 0..3 {
                        let busy = *b.busy.lock() as u64;
                        most.fetch_max(busy, Ordering::SeqCst);
                        b.call();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert!(most.load(Ordering::SeqCst) <= 2);
        assert_eq!(*b.busy.lock(), 0);
    }
}
