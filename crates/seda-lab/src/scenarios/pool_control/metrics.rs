//! The figures of FAIR07 Figures 5-2 to 5-6 from a run's periods: steady error, settle
//! periods, thread overshoot, and the share of the best fixed pool's throughput.

use serde::Serialize;

use super::plant::Sample;
use crate::averages::mean;

/// A period's throughput counts as on target within this share (the band a step must enter
/// and stay in to have settled).
pub(crate) const SETTLE_BAND: f64 = 0.1;

/// Figures of one controller on one plant.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub(crate) struct Figures {
    /// `|mean y - target| / target` over the second half of the upward step's phase
    /// (self-tuning only; see [`steady_error`]). The first phase starts every sizer at eight
    /// threads, whatever its target needs; four periods long in the quick form, its error
    /// measured where a pool started (0.25 on the contended plant, 8 threads going down to 3
    /// by a thread or two a period), not how it holds a target.
    pub steady_error: Option<f64>,
    /// The same mean over the target (self-tuning only): `1 +- steady_error`. The figure a run
    /// is compared with others by: an error whose ideal is zero has no spread relative to
    /// itself that means anything (0.006 and 0.042 are both a step held within 5%).
    pub step_throughput_of_target: Option<f64>,
    /// Mean `|y - target| / target` over the same periods, one by one: the steady error and
    /// the plant's noise together (see [`tracking_error`]).
    pub tracking_error: Option<f64>,
    /// Periods after the upward step until the throughput (a mean of [`SETTLE_MEAN`] periods)
    /// enters and stays within [`SETTLE_BAND`] of the target (self-tuning only; `None`: it
    /// never settled).
    pub settle_periods: Option<usize>,
    /// Highest thread count during the upward step over the threads it ended with, minus 1.
    pub thread_overshoot: Option<f64>,
    /// Mean throughput over the second half of the last phase (the search for the most)
    /// over the best fixed pool's.
    pub fraction_of_best_fixed: f64,
    /// That throughput, events/s.
    pub throughput_per_s: f64,
    /// Mean threads over the same periods.
    pub threads: f64,
    /// The ARX model's mean relative one-step error (self-tuning only).
    pub arx_error: Option<f64>,
}

/// The samples of phase `i` (they are in phase order).
pub(crate) fn phase(samples: &[Sample], i: usize) -> &[Sample] {
    let start = samples.partition_point(|s| s.phase < i);
    let end = samples.partition_point(|s| s.phase <= i);
    &samples[start..end]
}

fn second_half(s: &[Sample]) -> &[Sample] {
    &s[s.len() / 2..]
}

/// A phase's second half and its target (`None` without a positive target).
fn targeted_half(p: &[Sample]) -> Option<(&[Sample], f64)> {
    let tail = second_half(p);
    let t = tail.first()?.target_per_s.filter(|t| *t > 0.0)?;
    Some((tail, t))
}

/// Steady error of one target phase: how far the mean throughput of its second half is off the
/// target, as a share of it. This is control theory's steady-state error, the offset a law
/// leaves (P's, which FAIR07 removes with a pre-compensator or an integral term), not the
/// plant's noise from one period to the next, which no sizer removes (see
/// [`tracking_error`]).
pub(crate) fn steady_error(p: &[Sample]) -> Option<f64> {
    step_throughput_of_target(p).map(|r| (r - 1.0).abs())
}

/// The mean throughput of a target phase's second half over its target.
pub(crate) fn step_throughput_of_target(p: &[Sample]) -> Option<f64> {
    let (tail, t) = targeted_half(p)?;
    Some(mean(tail.iter().map(|s| s.throughput_per_s)) / t)
}

/// The mean of `|y - target| / target` over a phase's second half, period by period: the
/// steady error and the plant's noise together. On the PostgreSQL plant, whose 1 s periods
/// move by about 8% at a fixed size, it read 0.055 for P where its mean was 0.014 off.
pub(crate) fn tracking_error(p: &[Sample]) -> Option<f64> {
    let (tail, t) = targeted_half(p)?;
    Some(mean(
        tail.iter().map(|s| (s.throughput_per_s - t).abs() / t),
    ))
}

/// Periods whose throughput, averaged over [`SETTLE_MEAN`] periods, counts toward settling.
pub(crate) const SETTLE_MEAN: usize = 3;

/// Periods until the phase's throughput, averaged over the last [`SETTLE_MEAN`] periods (fewer
/// at its start), enters [`SETTLE_BAND`] of its target and stays. Judged period by period, one
/// period of the PostgreSQL plant's noise outside the band (835/s and 1,139/s against a target
/// of 1,016/s, the pool steady at 6 and 7 threads) put P's settling at 15 periods.
pub(crate) fn settle_periods(p: &[Sample]) -> Option<usize> {
    let t = p.first()?.target_per_s.filter(|t| *t > 0.0)?;
    let inside = |k: usize| {
        let recent = &p[(k + 1).saturating_sub(SETTLE_MEAN)..=k];
        (mean(recent.iter().map(|s| s.throughput_per_s)) - t).abs() <= SETTLE_BAND * t
    };
    let last_outside = (0..p.len()).rposition(|k| !inside(k));
    match last_outside {
        None => Some(0),
        Some(i) if i + 1 < p.len() => Some(i + 1),
        Some(_) => None,
    }
}

/// Highest threads in the phase over the mean of its second half, minus 1.
pub(crate) fn thread_overshoot(p: &[Sample]) -> Option<f64> {
    let end = mean(second_half(p).iter().map(|s| s.threads as f64));
    let peak = p.iter().map(|s| s.threads).max()? as f64;
    (end > 0.0).then(|| (peak / end - 1.0).max(0.0))
}

/// Mean throughput and threads over the second half of a phase. The mean, not the median: a
/// pool of threads started together completes in bursts, one per backend wait, so per-period
/// counts alternate between two values and their median is biased by a whole burst.
pub(crate) fn plateau(p: &[Sample]) -> (f64, f64) {
    let tail = second_half(p);
    (
        mean(tail.iter().map(|s| s.throughput_per_s)),
        mean(tail.iter().map(|s| s.threads as f64)),
    )
}

/// The plant's own noise at a fixed size: the mean of `|y - mean| / mean` over a fixed pool's
/// periods after its first (the start-up), averaged `group` at a time into the sizers' control
/// period. A predictor that knew the plant's mean would err this much a period; the ARX
/// model, which predicts from threads, can do better only where the noise of one period carries
/// into the next. `None` with fewer than two such periods.
pub(crate) fn noise(p: &[Sample], group: usize) -> Option<f64> {
    let periods: Vec<f64> = p
        .get(1..)?
        .chunks_exact(group.max(1))
        .map(|c| mean(c.iter().map(|s| s.throughput_per_s)))
        .collect();
    let m = mean(periods.iter().copied());
    (periods.len() >= 2 && m > 0.0).then(|| mean(periods.iter().map(|y| (y - m).abs())) / m)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(y: f64, threads: usize, target: f64) -> Sample {
        Sample {
            t_s: 0.0,
            phase: 0,
            threads,
            throughput_per_s: y,
            target_per_s: Some(target),
            busy_threads: None,
        }
    }

    #[test]
    fn a_step_settles_after_its_last_period_outside_the_band() {
        let p = [
            s(100.0, 2, 400.0),
            s(300.0, 4, 400.0),
            s(395.0, 5, 400.0),
            s(410.0, 4, 400.0),
            s(400.0, 4, 400.0),
        ];
        // The means of the first three periods: 100, 200, 265; then 368 and 402.
        assert_eq!(settle_periods(&p), Some(3));
        // Peak 5 over the second half's mean of 13 / 3.
        assert!((thread_overshoot(&p).unwrap() - 2.0 / 13.0).abs() < 1e-9);
        let e = steady_error(&p).unwrap();
        assert!((e - 5.0 / 3.0 / 400.0).abs() < 1e-9, "{e}");
        let r = step_throughput_of_target(&p).unwrap();
        assert!((r - 1.0 - 5.0 / 3.0 / 400.0).abs() < 1e-9, "{r}");
        let e = tracking_error(&p).unwrap();
        assert!((e - (10.0 + 0.0 + 5.0) / 3.0 / 400.0).abs() < 1e-9, "{e}");
        // One noisy period inside a settled phase does not unsettle it.
        let noisy = [
            s(920.0, 7, 1000.0),
            s(1140.0, 7, 1000.0),
            s(960.0, 6, 1000.0),
        ];
        assert_eq!(settle_periods(&noisy), Some(0));
        assert_eq!(settle_periods(&[s(100.0, 1, 400.0)]), None);
        // Bursts of 16 and 24 completions a period average to 20.
        let bursts = [
            s(16.0, 8, 0.0),
            s(24.0, 8, 0.0),
            s(16.0, 8, 0.0),
            s(24.0, 8, 0.0),
        ];
        assert_eq!(plateau(&bursts), (20.0, 8.0));
        // After a start-up period, 16 and 24 a period: 4 from their mean of 20, 0.2 of it;
        // averaged two at a time they read 20 each, no noise at that period.
        let fixed = [&[s(5.0, 8, 0.0)][..], &bursts[..]].concat();
        assert_eq!(noise(&fixed, 1), Some(0.2));
        assert_eq!(noise(&fixed, 2), Some(0.0));
        assert_eq!(noise(&fixed[..2], 1), None);
    }
}
