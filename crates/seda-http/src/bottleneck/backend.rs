//! An *emulated* backend (a sleep, not real I/O): the plant where a pool's size matters.
//!
//! Each call waits `latency`. With `channels`, at most that many calls are served at once and
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
        std::thread::sleep(self.wait_with(active));
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
