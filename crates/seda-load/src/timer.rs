//! A precise one-shot timer on a Linux `timerfd`, awaited through tokio's reactor.
//!
//! tokio's own timer has 1 ms ticks and rounds deadlines up, so an arrival slept for with
//! `tokio::time::sleep_until` leaves up to ~2 ms late. In the open model that lateness would be
//! counted as latency (latency is measured from the intended time), so the pacer sleeps on a
//! timerfd instead, which wakes within tens of microseconds.

use std::io;
use std::os::fd::OwnedFd;
use std::time::{Duration, Instant};

use rustix::time::{
    Itimerspec, TimerfdClockId, TimerfdFlags, TimerfdTimerFlags, Timespec, timerfd_create,
    timerfd_settime,
};
use tokio::io::unix::AsyncFd;

pub(crate) struct PreciseTimer {
    fd: AsyncFd<OwnedFd>,
}

impl PreciseTimer {
    pub fn new() -> io::Result<PreciseTimer> {
        let fd = timerfd_create(
            TimerfdClockId::Monotonic,
            TimerfdFlags::NONBLOCK | TimerfdFlags::CLOEXEC,
        )?;
        // `AsyncFd::new` is deprecated because a borrowed descriptor could be closed behind the
        // reactor's back; ours is an `OwnedFd` that only this struct holds, so that cannot
        // happen (the replacement, `AsyncFd::register`, is `unsafe`, which the workspace denies).
        #[allow(deprecated)]
        let fd = AsyncFd::new(fd)?;
        Ok(PreciseTimer { fd })
    }

    /// Sleeps until `deadline` (returns at once if it has passed).
    pub async fn sleep_until(&self, deadline: Instant) -> io::Result<()> {
        let now = Instant::now();
        if deadline <= now {
            return Ok(());
        }
        let d = (deadline - now).max(Duration::from_nanos(1));
        let zero = Timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        let spec = Itimerspec {
            it_interval: zero,
            it_value: Timespec {
                tv_sec: d.as_secs().min(i64::MAX as u64) as i64,
                tv_nsec: i64::from(d.subsec_nanos()),
            },
        };
        timerfd_settime(self.fd.get_ref(), TimerfdTimerFlags::empty(), &spec)?;
        loop {
            let mut guard = self.fd.readable().await?;
            let mut buf = [0u8; 8];
            match rustix::io::read(self.fd.get_ref(), &mut buf) {
                Ok(_) => return Ok(()),
                Err(rustix::io::Errno::AGAIN) => guard.clear_ready(),
                Err(e) => return Err(e.into()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "current_thread")]
    async fn wakes_close_to_the_deadline() {
        let t = PreciseTimer::new().unwrap();
        let mut worst = Duration::ZERO;
        for _ in 0..20 {
            let deadline = Instant::now() + Duration::from_micros(300);
            t.sleep_until(deadline).await.unwrap();
            let now = Instant::now();
            assert!(now >= deadline);
            worst = worst.max(now - deadline);
        }
        // Not a speed assertion: only that it is not the 1 ms tick of tokio's timer
        // on every wake-up.
        eprintln!("worst timerfd lateness {worst:?}");
    }
}
