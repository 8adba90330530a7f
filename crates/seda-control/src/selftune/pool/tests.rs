//! The self-tuning pool on known plants, in virtual time.

use super::super::design::Law;
use super::config::HOLD_BAND;
use super::*;

/// A plant whose throughput is `per_thread * n` up to `knee` threads, then falls by
/// `loss` per extra thread (contention): an interior optimum at `knee`.
fn plant(n: usize, per_thread: f64, knee: usize, loss: f64) -> f64 {
    if n <= knee {
        per_thread * n as f64
    } else {
        per_thread * knee as f64 - loss * (n - knee) as f64
    }
}

/// A pool of `law` (at most `max_threads`) run `periods` periods from `start` threads:
/// period `k` reads `read(threads)` against `target(k)`. Returns each period's threads and
/// reading.
fn drive(
    law: Law,
    max_threads: usize,
    start: usize,
    periods: usize,
    mut read: impl FnMut(usize) -> f64,
    target: impl Fn(usize) -> f64,
) -> Vec<(usize, f64)> {
    drive_measured(
        law,
        max_threads,
        start,
        periods,
        |n| (read(n), None),
        target,
    )
}

/// [`drive`] where `read(threads)` gives the throughput and, where the runtime measures
/// them, the busy threads.
fn drive_measured(
    law: Law,
    max_threads: usize,
    start: usize,
    periods: usize,
    mut read: impl FnMut(usize) -> (f64, Option<f64>),
    target: impl Fn(usize) -> f64,
) -> Vec<(usize, f64)> {
    let mut c = SelfTuningPool::new(SelfTuningConfig {
        law,
        max_threads,
        ..Default::default()
    });
    let mut n = start;
    (0..periods)
        .map(|k| {
            let (y, busy_threads) = read(n);
            let period = (n, y);
            n = c.update(PeriodSample {
                throughput_per_s: y,
                threads: n,
                target_per_s: target(k),
                busy_threads,
            });
            period
        })
        .collect()
}

fn follow(law: Law, target: f64) -> (Vec<usize>, Vec<f64>) {
    drive(law, 40, 2, 40, |n| plant(n, 25.0, 30, 10.0), |_| target)
        .into_iter()
        .unzip()
}

/// A plant like the lab's PostgreSQL one: throughput `3400 x (1 - exp(-n / 12))` events/s
/// (concave, no knee), each period's reading off by a normal error of 8% (seeded).
struct NoisyPlant(u64);

impl NoisyPlant {
    fn read(&mut self, n: usize) -> f64 {
        let y = 3400.0 * (1.0 - (-(n as f64) / 12.0).exp());
        y * (1.0 + 0.08 * self.normal())
    }

    fn uniform(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }

    fn normal(&mut self) -> f64 {
        let (u, v) = (self.uniform().max(1e-12), self.uniform());
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }
}

/// P on [`NoisyPlant`] from 8 threads: 20 periods at a target of 1,360/s, then 30 at
/// 2,720/s (19 threads). Returns the periods after the step until a 3-period mean first
/// comes within 10% of the target, and the mean throughput of the last 15 periods.
fn noisy_step(seed: u64) -> (usize, f64) {
    let mut plant = NoisyPlant(seed);
    let target = |k| if k < 20 { 1360.0 } else { 2720.0 };
    let ys: Vec<f64> = drive(Law::P, 64, 8, 50, |n| plant.read(n), target)
        .into_iter()
        .map(|(_, y)| y)
        .collect();
    let step = &ys[20..];
    let settle = (2..step.len())
        .find(|&k| (step[k - 2..=k].iter().sum::<f64>() / 3.0 - 2720.0).abs() <= 272.0)
        .unwrap_or(step.len());
    (settle, step[15..].iter().sum::<f64>() / 15.0)
}

/// On a plant whose marginal gain per thread is smaller than a period's noise, P still
/// climbs a step within a few periods and holds its target on average: a single period's
/// fall does not undo an addition the model says pays.
#[test]
fn p_climbs_a_step_on_a_noisy_plant() {
    let runs: Vec<(usize, f64)> = (1..=20).map(noisy_step).collect();
    let mut settles: Vec<usize> = runs.iter().map(|r| r.0).collect();
    settles.sort_unstable();
    let errors: Vec<f64> = runs.iter().map(|r| (r.1 - 2720.0).abs() / 2720.0).collect();
    // Judged by one period each, additions were undone by chance: settling took 9 to 15
    // periods in 5 of these 20 runs, and 3 held their target off by 5-7%.
    assert!(settles[18] <= 7, "settle periods {settles:?}");
    // One seed (5) holds 17 to 18 threads, 9% short: where a thread pays 2% of the
    // throughput under 8% noise, the last ten periods' line cannot tell this plant from
    // a plateau, on which additions must show their gain (see `Levels`).
    let within = errors.iter().filter(|e| **e <= 0.05).count();
    assert!(
        within >= 19 && errors.iter().all(|e| *e <= 0.1),
        "steady errors {errors:.3?}"
    );
}

/// A plant like the lab's PostgreSQL one on another day: its best pool 12 threads, each
/// thread past it losing 1% of the peak, 10% noise, and a target 1.5 x its peak. Trusting
/// the fitted gain without its standard error, every law ran to its bound of 48 threads
/// (0.65 of the peak) in some of these runs, as PI and PD did in the lab; with it, up to
/// 36 threads (0.76 of the peak), where the ARX model's fit on the climb said that threads
/// pay; with the line through the last periods near the pool (`Levels`), at most 20
/// (19.9, seed 16; the rest at most 15).
#[test]
fn no_law_runs_to_its_bound_past_a_gentle_knee_under_noise() {
    let peak = |n: usize| {
        let n = n as f64;
        let rise = |n: f64| 1.0 - (-n / 5.0).exp();
        if n <= 12.0 {
            1170.0 * rise(n) / rise(12.0)
        } else {
            1170.0 * (1.0 - 0.01 * (n - 12.0))
        }
    };
    for law in Law::ALL {
        for seed in 1..=20 {
            let mut noise = NoisyPlant(seed);
            let read = |n| peak(n) * (1.0 + 0.1 * noise.normal());
            let periods = drive(law, 48, 8, 80, read, |_| 1.5 * 1170.0);
            let tail = &periods[50..];
            let threads = tail.iter().map(|p| p.0).sum::<usize>() as f64 / tail.len() as f64;
            assert!(
                threads <= 20.0 && peak(threads.round() as usize) >= 0.9 * 1170.0,
                "{law:?}, seed {seed}: {threads:.1} threads"
            );
        }
    }
}

/// A plant flat past 12 threads (`1400 x (1 - exp(-n / 4))`, 8% noise, like the lab's
/// PostgreSQL plant on the day P ran it to 48 threads), asked first for just more than it
/// gives, then for nearly twice that: no law keeps adding threads that serve nothing. With
/// the ARX model judging additions within the noise, the median run ended phase two with 34
/// to 40 threads.
#[test]
fn no_law_fills_its_bound_on_a_plateau() {
    let flat = |n: usize| 1400.0 * (1.0 - (-(n as f64) / 4.0).exp());
    for law in Law::ALL {
        let mut ends: Vec<f64> = (1..=20)
            .map(|seed| {
                let mut noise = NoisyPlant(seed);
                let read = |n| flat(n) * (1.0 + 0.08 * noise.normal());
                let target = |k| if k < 20 { 1408.0 } else { 2640.0 };
                let tail = drive(law, 48, 5, 60, read, target).split_off(40);
                tail.iter().map(|p| p.0 as f64).sum::<f64>() / tail.len() as f64
            })
            .collect();
        ends.sort_by(f64::total_cmp);
        assert!(ends[10] <= 20.0 && ends[19] <= 36.0, "{law:?}: {ends:.1?}");
    }
}

/// Asked for more than a noisy plant with a knee gives (16 threads; each past it costs 5%
/// of the peak; 5% noise), P finds the knee's throughput and does not run to its bound.
/// A seed's last 20 periods may hold one probe of the knee from below and back (seed 11:
/// from 12 threads to 23 and back to 18, 0.85 of the peak).
#[test]
fn p_stops_near_the_knee_of_a_noisy_plant() {
    for seed in 1..=20 {
        let mut noise = NoisyPlant(seed);
        let read = |n| plant(n, 100.0, 16, 80.0).max(0.0) * (1.0 + 0.05 * noise.normal());
        let periods = drive(Law::P, 64, 8, 60, read, |_| 2400.0);
        let tail = &periods[40..];
        let mean = |f: fn(&(usize, f64)) -> f64| tail.iter().map(f).sum::<f64>() / 20.0;
        let (threads, y) = (mean(|t| t.0 as f64), mean(|t| t.1));
        assert!(
            y >= 0.83 * 1600.0 && threads <= 24.0,
            "seed {seed}: {threads} threads, {y}/s"
        );
    }
}

#[test]
fn every_law_reaches_a_reachable_target() {
    for law in Law::ALL {
        let (ns, ys) = follow(law, 400.0);
        let tail = &ys[25..];
        assert!(
            tail.iter().all(|y| (y - 400.0).abs() <= 0.05 * 400.0),
            "{law:?}: threads {ns:?} throughput {ys:?}"
        );
    }
}

/// PI climbing a large step `max_step` threads at a time does not store the climb's error
/// and overshoot by it (before the anti-windup, the lab's full run overshot by 0.63).
#[test]
fn pi_does_not_wind_up_while_its_step_is_clamped() {
    let (ns, _) = follow(Law::Pi, 400.0);
    let end = ns[ns.len() - 1];
    let peak = ns.iter().copied().max().unwrap_or(0);
    assert!(peak as f64 <= 1.2 * end as f64, "threads {ns:?}");
}

/// Periods of `thesis-open`'s first phase, as the runtime fed them (threads, throughput,
/// target): the throughput follows the arrivals, and the fits after them have `b < 0` or
/// `a` well under 1. Neither P nor a law on a fit with `b < 0` may add threads to a stage
/// above its target (P added 3 at 116.5/s for 113.1/s), and within [`HOLD_BAND`] of it the
/// pool holds (P added 3 at 105.3/s for 107.2/s).
#[test]
fn no_law_adds_threads_above_the_target() {
    let trace = [
        (6, 123.3, 231.2),
        (12, 161.0, 121.3),
        (14, 119.1, 125.0),
        (16, 116.5, 113.1),
        (16, 139.1, 137.1),
        (16, 105.3, 107.2),
    ];
    for law in Law::ALL {
        let mut c = SelfTuningPool::new(SelfTuningConfig {
            law,
            max_threads: 48,
            ..Default::default()
        });
        for (threads, y, target) in trace {
            let next = c.update(PeriodSample {
                throughput_per_s: y,
                threads,
                target_per_s: target,
                busy_threads: None,
            });
            if (y - target).abs() <= HOLD_BAND * target {
                assert_eq!(next, threads, "{law:?} at {y}/s for {target}/s");
            }
            assert!(
                y <= target || next <= threads,
                "{law:?}: {threads} -> {next} threads at {y}/s for {target}/s ({:?})",
                c.model()
            );
        }
    }
}

/// A pool of `law` (up to 48 threads) fed 20 periods of `base` to `base + 2` threads, each
/// period on its target, where a thread moves the throughput by `per_thread` from
/// `at_zero`: the model it fits has `b` near `per_thread`.
fn fitted(law: Law, base: usize, at_zero: f64, per_thread: f64) -> SelfTuningPool {
    let mut c = SelfTuningPool::new(SelfTuningConfig {
        law,
        max_threads: 48,
        ..Default::default()
    });
    for k in 0..20 {
        let threads = base + k % 3;
        let y = at_zero + per_thread * threads as f64;
        c.update(PeriodSample {
            throughput_per_s: y,
            threads,
            target_per_s: y,
            busy_threads: None,
        });
    }
    c
}

/// A pool whose model was fitted while its throughput followed the arrivals (each thread
/// moved it by 0.3/s), then asked for far more than it serves after a period without a
/// move: with nothing to judge the move by, it probes one thread. In `thesis-open` the law's
/// step on such a fit (`b` 0.26/s per thread) took a pool already past the backend's knee
/// from 14 to 18 threads, and the throughput fell from 252/s to 206/s.
#[test]
fn after_a_period_without_a_move_a_flat_model_only_probes() {
    for law in Law::ALL {
        let mut c = fitted(law, 13, 250.0, 0.3);
        let sample = |y, target| PeriodSample {
            throughput_per_s: y,
            threads: 14,
            target_per_s: target,
            busy_threads: None,
        };
        c.update(sample(254.0, 256.0));
        let next = c.update(sample(254.0, 400.0));
        assert!(
            next <= 15,
            "{law:?}: 14 -> {next} threads ({:?})",
            c.model()
        );
    }
}

/// A pool whose fit has `b < 0` (fitted by chance while its throughput followed the
/// arrivals: here each added thread lowered it), then serving half again its target, gives
/// threads back. Every law's step is positive there, against the error's sign; the sign
/// check held the pool, the model learns nothing without a move, and in `follow-target` a
/// pool of 12 threads stayed so for 25 s with its p90 at a tenth of the target.
#[test]
fn a_pool_above_its_target_gives_threads_back() {
    for law in Law::ALL {
        let mut c = fitted(law, 11, 200.0, -4.0);
        let mut threads = 12;
        for _ in 0..4 {
            threads = c.update(PeriodSample {
                throughput_per_s: 150.0,
                threads,
                target_per_s: 100.0,
                busy_threads: None,
            });
        }
        assert!(
            threads < 12,
            "{law:?}: 12 -> {threads} threads ({:?})",
            c.model()
        );
    }
}

/// `thesis-open`'s plant, one 0.5 s period at a time: arrivals at `rate`/s (off by a normal
/// error of the square root of their count, as Poisson counts are) queue for threads of a
/// 40 ms backend that thrashes past 12 callers at once (`n / 0.04`/s up to 12 threads, then
/// `12^2 / (0.04 n)`), and the dropper sheds what the threads cannot serve within 160 ms.
struct OpenPlant {
    rng: NoisyPlant,
    queue: f64,
    dropped: f64,
}

impl OpenPlant {
    /// One period at `n` threads: the throughput, global control's target (the period's
    /// arrivals, and the queue drained over a second), per second, and the busy threads.
    fn period(&mut self, n: usize, rate: f64) -> (f64, f64, f64) {
        const SECS: f64 = 0.5;
        let expected = rate * SECS;
        let arrived = (expected + expected.sqrt() * self.rng.normal()).max(0.0);
        let n = n as f64;
        let service_s = 0.04 * (n / 12.0).max(1.0).powi(2);
        let capacity = n / service_s;
        let served = (self.queue + arrived).min(capacity * SECS);
        self.queue += arrived - served;
        let within_dropper = capacity * 0.16;
        if self.queue > within_dropper {
            self.dropped += self.queue - within_dropper;
            self.queue = within_dropper;
        }
        let y = served / SECS;
        (y, arrived / SECS + self.queue, y * service_s)
    }
}

/// P on [`OpenPlant`] from 4 threads, as `thesis-open` runs it: 16 periods of 135/s
/// arrivals (5.4 threads busy), then 8 of 270/s (10.8 threads; 13 give 277/s, 14 only
/// 257/s), its busy threads measured as the runtime measures them. Global control's target
/// here includes the backlog, so it passes the plant's peak and the pool probes past the
/// knee. Over 20 seeds, judging moves by the throughput (before the pool read its busy
/// threads) shed over 4% of the arrivals in 12 seeds, 12% in the worst, and ran to 20
/// threads; judged by the capacity too, 2 seeds shed 4.2% and 5.6%, and none passes 16.
#[test]
fn p_follows_open_arrivals_that_double_without_thrashing() {
    let mut runs = Vec::new();
    for seed in 1..=20 {
        let mut plant = OpenPlant {
            rng: NoisyPlant(seed * 7919),
            queue: 0.0,
            dropped: 0.0,
        };
        let mut c = SelfTuningPool::new(SelfTuningConfig {
            max_threads: 48,
            ..Default::default()
        });
        let (mut n, mut arrived) = (4, 0.0);
        let mut trace = Vec::new();
        for k in 0..24 {
            let rate = if k < 16 { 135.0 } else { 270.0 };
            arrived += rate * 0.5;
            let (y, target, busy) = plant.period(n, rate);
            trace.push(n);
            n = c.update(PeriodSample {
                throughput_per_s: y,
                threads: n,
                target_per_s: target,
                busy_threads: Some(busy),
            });
        }
        runs.push((plant.dropped / arrived, trace));
    }
    let shed = runs.iter().filter(|(d, _)| *d > 0.04).count();
    assert!(
        shed <= 2
            && runs
                .iter()
                .all(|(d, t)| *d <= 0.06 && t.iter().all(|&n| n <= 16)),
        "{shed} seeds shed over 4%: {runs:?}"
    );
}

/// `pool-control`'s contended plant: a saturated pool (every thread busy) on the backend
/// of [`OpenPlant`], each period's reading off by 3%, asked for 1.5 x its peak of 300/s.
/// Every law, judging its moves by the measured capacity, stays near the knee: over 20
/// seeds the last 12 periods average at most 14 threads and at least 90% of the peak.
#[test]
fn every_law_finds_the_knee_of_a_saturated_pool_by_its_capacity() {
    for law in Law::ALL {
        for seed in 1..=20 {
            let mut noise = NoisyPlant(seed * 104_729);
            let read = |n: usize| {
                let n = n as f64;
                let service_s = 0.04 * (n / 12.0).max(1.0).powi(2);
                let y = n / service_s * (1.0 + 0.03 * noise.normal());
                (y, Some(n))
            };
            let trace = drive_measured(law, 48, 8, 30, read, |_| 450.0);
            let last = &trace[18..];
            let threads = last.iter().map(|p| p.0 as f64).sum::<f64>() / last.len() as f64;
            let y = last.iter().map(|p| p.1).sum::<f64>() / last.len() as f64;
            assert!(
                threads <= 14.0 && y >= 270.0,
                "{law:?} seed {seed}: {threads:.1} threads, {y:.0}/s: {trace:?}"
            );
        }
    }
}

/// The same plant read with 1% noise (the lab's contended plant read 299/s in each of six
/// 30 s readings), run 60 periods: the pool holds the knee its readings show. Before it
/// compared the mean readings of the sizes it had visited, the seek judged the addition
/// from 11 to 12 threads by the line and an inflated noise margin, and every law
/// alternated between 11 and 12 (0.949 of the peak
/// over 20 seeds, as in the lab's 0.94-0.95); over 20 seeds it now averages 0.98.
#[test]
fn every_law_holds_the_knee_its_readings_show() {
    for law in Law::ALL {
        let shares: Vec<f64> = (1..=20)
            .map(|seed| {
                let mut noise = NoisyPlant(seed * 104_729);
                let read = |n: usize| {
                    let n = n as f64;
                    let service_s = 0.04 * (n / 12.0).max(1.0).powi(2);
                    (n / service_s * (1.0 + 0.01 * noise.normal()), Some(n))
                };
                let trace = drive_measured(law, 48, 8, 60, read, |_| 450.0);
                trace[20..].iter().map(|p| p.1).sum::<f64>() / 40.0 / 300.0
            })
            .collect();
        let mean = shares.iter().sum::<f64>() / shares.len() as f64;
        assert!(
            mean >= 0.97 && shares.iter().all(|&s| s >= 0.95),
            "{law:?}: mean {mean:.3} of the peak: {shares:.3?}"
        );
    }
}

/// `pool-control`'s quick contended plant as the runtime reads it: its best pool 12
/// threads (600/s; past it every call waits `(threads / 12)^exponent` times as long; the
/// lab's plant squares), every thread busy, each reading off by `noise_sd`, and the period
/// after threads are removed unread (the removed threads still finish their calls, so more
/// are busy than the pool holds: no capacity). From 8 threads, the lab's quick phases: 3
/// periods asking for 0.4 x the peak, 8 for 0.8 x, 12 for 1.5 x. Returns the share of the
/// peak and the mean threads of the last phase's second half, as the lab measures them.
fn quick_contended(law: Law, seed: u64, noise_sd: f64, exponent: f64) -> (f64, f64) {
    let mut noise = NoisyPlant(seed * 15_485_863);
    let mut c = SelfTuningPool::new(SelfTuningConfig {
        law,
        max_threads: 48,
        ..Default::default()
    });
    let (mut n, mut before) = (8, 8);
    let mut trace = Vec::new();
    for k in 0..23 {
        let x = n as f64;
        let service_s = 0.02 * (x / 12.0).max(1.0).powf(exponent);
        let y = x / service_s * (1.0 + noise_sd * noise.normal());
        trace.push((n, y));
        let busy = x.max(before as f64);
        before = n;
        n = c.update(PeriodSample {
            throughput_per_s: y,
            threads: n,
            target_per_s: match k {
                0..3 => 240.0,
                3..11 => 480.0,
                _ => 900.0,
            },
            busy_threads: Some(busy),
        });
    }
    let last = &trace[17..];
    (
        last.iter().map(|p| p.1).sum::<f64>() / 6.0 / 600.0,
        last.iter().map(|p| p.0 as f64).sum::<f64>() / 6.0,
    )
}

/// The lab's contended plant reads about 0.1% of noise from period to period. There, PI ended
/// its last phase at 0.90 of the best fixed pool in a CI run on 2026-12-07 (11.7 threads),
/// and on this replay with 1% noise P, PI and PD ended under 0.95 in 1, 6 and 0 seeds of 100:
/// a jump of four threads from 9 to 13 read a fall at 17, and the pool held 13, the ceiling,
/// never reading 12 (0.92 of the peak); or it went back from 13 to 11 and held that. A pool
/// at its ceiling now reads the sizes one thread either side once, and holds the better: none
/// ends under 0.95. With 3% noise and a gentler fall past the knee (exponent 1.5) some seeds
/// still do: 9, 6 and 10 of 100 (11, 10 and 10 before).
#[test]
fn every_law_returns_to_the_knee_after_overshooting_it() {
    for law in Law::ALL {
        let quiet: Vec<(f64, f64)> = (1..=100)
            .map(|seed| quick_contended(law, seed, 0.01, 2.0))
            .collect();
        let low = quiet.iter().filter(|(share, _)| *share < 0.95).count();
        assert!(low == 0, "{law:?}: {low} of 100 under 0.95: {quiet:.2?}");
        let noisy = (1..=100)
            .map(|seed| quick_contended(law, seed, 0.03, 1.5))
            .filter(|(share, _)| *share < 0.95)
            .count();
        assert!(
            noisy <= 10,
            "{law:?}: {noisy} of 100 under 0.95 with 3% noise"
        );
    }
}

/// `pool-control`'s io plant: a backend with 24 channels, 25/s per channel, every thread
/// busy (waiting for a channel counts), each reading off by 1%, asked for 0.8 x its peak
/// and then for twice it. Past 24 threads an addition leaves the capacity flat; judged
/// only against a fall past the noise, every such addition was kept, and P's last 20
/// periods averaged 40.5 threads on the first seed. Now, over 20 seeds, the median holds
/// at most 1.1 x 24 threads and none more than 1.25 x (an addition from 23 threads to 27
/// that reads within the noise of scaling is kept, and half of the next is undone: 29).
#[test]
fn no_law_runs_past_a_plateau_its_capacity_shows() {
    for law in Law::ALL {
        let mut ends: Vec<f64> = (1..=20)
            .map(|seed| {
                let mut noise = NoisyPlant(seed * 7_919);
                let read = |n: usize| {
                    let y = 25.0 * n.min(24) as f64 * (1.0 + 0.01 * noise.normal());
                    (y, Some(n as f64))
                };
                let target = |k| if k < 20 { 480.0 } else { 1200.0 };
                let last = drive_measured(law, 48, 8, 60, read, target).split_off(40);
                let y = last.iter().map(|p| p.1).sum::<f64>() / last.len() as f64;
                assert!(y >= 0.95 * 600.0, "{law:?} seed {seed}: {y:.0}/s");
                last.iter().map(|p| p.0 as f64).sum::<f64>() / last.len() as f64
            })
            .collect();
        ends.sort_by(f64::total_cmp);
        assert!(
            ends[10] <= 1.1 * 24.0 && ends[19] <= 1.25 * 24.0,
            "{law:?}: {ends:.1?}"
        );
    }
}

#[test]
fn stays_within_bounds_and_step() {
    let (ns, _) = follow(Law::P, 10_000.0);
    assert!(ns.iter().all(|&n| (1..=40).contains(&n)));
    assert!(
        ns.windows(2)
            .all(|w| w[0].abs_diff(w[1]) <= DEFAULT_MAX_STEP)
    );
}

#[test]
fn nonsense_input_does_not_move_out_of_bounds() {
    let mut c = SelfTuningPool::new(SelfTuningConfig::default());
    let n = c.update(PeriodSample {
        throughput_per_s: f64::NAN,
        threads: 1000,
        target_per_s: f64::INFINITY,
        busy_threads: None,
    });
    assert!((1..=64).contains(&n));
}

/// `pool-control`'s full-form PostgreSQL plant as its sweep read it on 2026-12-04 (4
/// threads 705/s, 8 1,442, 12 2,120, 16 2,366, 20 2,651, 24 2,820, 32 2,420, 48 2,376;
/// linear between), every thread busy, each reading off by 3%, run through the lab's
/// phases (20, 30 and 30 periods at 0.4, 0.8 and 1.5 x the best) from 8 threads. Returns
/// the last 15 periods' mean throughput as a share of the best, as the lab measures it.
fn full_postgres(law: Law, seed: u64) -> f64 {
    const SWEEP: [(f64, f64); 8] = [
        (4.0, 705.0),
        (8.0, 1442.0),
        (12.0, 2120.0),
        (16.0, 2366.0),
        (20.0, 2651.0),
        (24.0, 2820.0),
        (32.0, 2420.0),
        (48.0, 2376.0),
    ];
    let curve = |n: f64| {
        let n = n.clamp(4.0, 48.0);
        let i = SWEEP.iter().rposition(|p| p.0 <= n).unwrap_or(0).min(6);
        let ((n0, y0), (n1, y1)) = (SWEEP[i], SWEEP[i + 1]);
        y0 + (y1 - y0) * (n - n0) / (n1 - n0)
    };
    let mut noise = NoisyPlant(seed * 15_485_863);
    let read = |n: usize| {
        let y = curve(n as f64) * (1.0 + 0.03 * noise.normal());
        (y, Some(n as f64))
    };
    let target = |k| 2820.0 * [0.4, 0.8, 1.5][(k >= 20) as usize + (k >= 50) as usize];
    let last = drive_measured(law, 64, 8, 80, read, target).split_off(65);
    last.iter().map(|p| p.1).sum::<f64>() / last.len() as f64 / 2820.0
}

/// On that plant an addition past 12 threads gains a third to a half of its proportional
/// share, and each was read as a plateau: every law stopped at 16 of the best 24 threads
/// (P 0.881 of the best fixed pool in the lab, 0.915 over these 20 seeds). Read again at
/// the midpoint, the size the addition reached reads above it and the pool climbs on,
/// while the contended plant's knee (whose midpoint reads above both ends) still holds.
#[test]
fn every_law_climbs_a_plant_whose_gain_per_thread_shrinks() {
    for law in Law::ALL {
        let shares: Vec<f64> = (1..=20).map(|seed| full_postgres(law, seed)).collect();
        let mean = shares.iter().sum::<f64>() / shares.len() as f64;
        assert!(mean >= 0.95, "{law:?}: mean {mean:.3}: {shares:.2?}");
    }
}
