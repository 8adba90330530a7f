//! An emulated processor: a resource whose capacity is stated, not measured.
//!
//! A handler does its real work, then holds the processor for the work its request is said to
//! cost ([`EmulatedProcessor::run`]) with a timed wait, not a spin. The processor has `cores`
//! virtual cores shared by processor sharing, as an operating system shares real cores between
//! threads: while `n` requests hold it, each progresses at `min(1, cores / n)` of real time, so
//! a short request is not stuck behind a long one, and everything slows as more hold it at
//! once. Its capacity is then `cores` seconds of work per second, known before a run, whatever
//! else the machine does: an experiment whose bottleneck is this processor decides by design
//! rather than by the speed of the machine it runs on (which, on a shared virtual machine,
//! moves threefold over minutes). Its real cost is a few wake-ups per request.
//!
//! ```
//! use std::time::Duration;
//! use seda::EmulatedProcessor;
//!
//! let cpu = EmulatedProcessor::new(2.0);
//! let done = cpu.run(Duration::from_millis(3), || false);
//! assert_eq!(done, Duration::from_millis(3));
//! assert!(cpu.busy_core_s() >= 0.003);
//! ```
//!
//! The bookkeeping is virtual time: every request holding the processor has received the same
//! work since the last change in their number, so one clock (`virtual_s`, the work one request
//! received) tells each request how far it got; a request that arrived when it read `v` with
//! `w` of work finishes when it reads `v + w`. Arrivals slow the others (they wake early and
//! sleep again); departures speed them up, so a departure wakes them.

use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

/// Longest sleep between two checks of a request's `stop` (its cancellation): short next to a
/// termination threshold or a control tick.
const POLL: Duration = Duration::from_millis(5);

/// Most cores a processor may have.
pub const MAX_CORES: f64 = 1024.0;

/// See the module docs.
#[derive(Debug)]
pub struct EmulatedProcessor {
    state: Mutex<State>,
    departed: Condvar,
}

#[derive(Debug)]
struct State {
    cores: f64,
    /// Work per second of a core (1: as stated; 0.2: five times slower).
    speed: f64,
    /// Requests holding the processor.
    running: usize,
    /// Work each running request has received since the processor started, seconds.
    virtual_s: f64,
    /// Core-seconds of work done since the processor started.
    busy_core_s: f64,
    /// When `virtual_s` and `busy_core_s` were last brought up to date.
    at: Instant,
}

impl State {
    /// Work per second each running request receives.
    fn rate(&self) -> f64 {
        if self.running == 0 {
            return self.speed;
        }
        self.speed * (self.cores / self.running as f64).min(1.0)
    }

    fn advance(&mut self, now: Instant) {
        let dt = now.saturating_duration_since(self.at).as_secs_f64();
        let rate = self.rate();
        self.virtual_s += dt * rate;
        self.busy_core_s += dt * rate * self.running as f64;
        self.at = now;
    }
}

impl EmulatedProcessor {
    /// A processor of `cores` virtual cores (held to `[0.01, MAX_CORES]`; fractions allowed).
    pub fn new(cores: f64) -> EmulatedProcessor {
        EmulatedProcessor {
            state: Mutex::new(State {
                cores: clamp_cores(cores),
                speed: 1.0,
                running: 0,
                virtual_s: 0.0,
                busy_core_s: 0.0,
                at: Instant::now(),
            }),
            departed: Condvar::new(),
        }
    }

    /// Holds the processor until `work` is done or `stop` says to stop (checked at least every
    /// 5 ms); returns the work done, `work` unless stopped.
    pub fn run(&self, work: Duration, stop: impl Fn() -> bool) -> Duration {
        let mut s = self.state.lock();
        s.advance(Instant::now());
        s.running += 1;
        let start = s.virtual_s;
        let finish = start + work.as_secs_f64();
        while s.virtual_s < finish && !stop() {
            let left = Duration::from_secs_f64((finish - s.virtual_s) / s.rate().max(1e-9));
            self.departed.wait_for(&mut s, left.min(POLL));
            s.advance(Instant::now());
        }
        s.advance(Instant::now());
        s.running -= 1;
        let done = (s.virtual_s - start).clamp(0.0, work.as_secs_f64());
        drop(s);
        // The others now share the cores among fewer: they finish sooner than they planned.
        self.departed.notify_all();
        if done >= work.as_secs_f64() {
            work
        } else {
            Duration::from_secs_f64(done)
        }
    }

    /// The virtual cores.
    pub fn cores(&self) -> f64 {
        self.state.lock().cores
    }

    /// Sets the processor's speed (held to `[0.001, 1000]`): 0.2 makes every request's work take
    /// five times as long, as a noisy neighbour or a failing disk would (the lab slows one
    /// replica of a cluster this way). Capacity becomes `cores x speed`.
    pub fn set_speed(&self, speed: f64) {
        let mut s = self.state.lock();
        s.advance(Instant::now());
        s.speed = if speed.is_finite() {
            speed.clamp(0.001, 1000.0)
        } else {
            1.0
        };
        drop(s);
        self.departed.notify_all();
    }

    /// Core-seconds of work done since the processor started (its capacity is `cores` of them a
    /// second).
    pub fn busy_core_s(&self) -> f64 {
        let mut s = self.state.lock();
        s.advance(Instant::now());
        s.busy_core_s
    }

    /// Requests holding the processor now.
    pub fn running(&self) -> usize {
        self.state.lock().running
    }

    /// Its cores, work done and requests running, as a service's stats report them.
    pub fn snapshot(&self) -> ProcessorSnapshot {
        ProcessorSnapshot {
            cores: self.cores(),
            busy_core_s: self.busy_core_s(),
            running: self.running(),
        }
    }
}

/// What an [`EmulatedProcessor`] reports in a service's stats: a run's use of a capacity
/// stated before it.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProcessorSnapshot {
    /// Virtual cores.
    pub cores: f64,
    /// Core-seconds of work done since start.
    pub busy_core_s: f64,
    /// Requests holding a core now.
    pub running: usize,
}

fn clamp_cores(cores: f64) -> f64 {
    if cores.is_finite() {
        cores.clamp(0.01, MAX_CORES)
    } else {
        1.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    #[test]
    fn requests_share_the_cores() {
        // Four requests of 40 ms of work on one core: 160 ms of work, so the last ends no
        // sooner than 160 ms after they started, and all of it is counted as busy.
        let cpu = Arc::new(EmulatedProcessor::new(1.0));
        let t = Instant::now();
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let cpu = cpu.clone();
                std::thread::spawn(move || cpu.run(Duration::from_millis(40), || false))
            })
            .collect();
        for h in handles {
            assert_eq!(h.join().unwrap(), Duration::from_millis(40));
        }
        assert!(
            t.elapsed() >= Duration::from_millis(158),
            "{:?}",
            t.elapsed()
        );
        let busy = cpu.busy_core_s();
        assert!((0.158..0.25).contains(&busy), "{busy}");
        assert_eq!(cpu.running(), 0);
    }

    #[test]
    fn a_short_request_is_not_stuck_behind_a_long_one() {
        // Processor sharing: a 10 ms request beside a 10 s one on one core takes about 20 ms,
        // not 10 s.
        let cpu = EmulatedProcessor::new(1.0);
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| cpu.run(Duration::from_secs(10), || stop.load(Ordering::Relaxed)));
            while cpu.running() == 0 {
                std::thread::yield_now();
            }
            let t = Instant::now();
            cpu.run(Duration::from_millis(10), || false);
            stop.store(true, Ordering::Relaxed);
            assert!(
                t.elapsed() >= Duration::from_millis(19),
                "{:?}",
                t.elapsed()
            );
            assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
        });
    }

    #[test]
    fn a_stopped_request_returns_the_work_it_got() {
        let cpu = EmulatedProcessor::new(1.0);
        let t = Instant::now();
        let stop = AtomicBool::new(false);
        let done = std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(Duration::from_millis(30));
                stop.store(true, Ordering::Relaxed);
            });
            cpu.run(Duration::from_secs(10), || stop.load(Ordering::Relaxed))
        });
        assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
        assert!(
            done >= Duration::from_millis(29) && done < Duration::from_secs(5),
            "{done:?}"
        );
    }

    #[test]
    fn speed_scales_the_work_per_second() {
        let cpu = EmulatedProcessor::new(1.0);
        cpu.set_speed(0.5);
        let t = Instant::now();
        cpu.run(Duration::from_millis(20), || false);
        assert!(
            t.elapsed() >= Duration::from_millis(39),
            "{:?}",
            t.elapsed()
        );
        cpu.set_speed(f64::NAN);
        assert_eq!(EmulatedProcessor::new(f64::INFINITY).cores(), 1.0);
        assert_eq!(EmulatedProcessor::new(1e9).cores(), MAX_CORES);
    }
}
