//! Settle time: how long a controller takes to bring the response time back to its target
//! after the load changes. The simulator and the lab measure it on their own windows (sliding
//! windows of virtual-time buckets; the load generator's 1 s intervals) and apply this one rule.

/// How far over the target a window's p90 may be and still count as settled: 1.2 x target.
/// WC03 asks the p90 to stay "near" the target; 20% leaves room for one noisy 1 s window without
/// hiding a controller that never converges.
pub const SETTLE_TOLERANCE: f64 = 1.2;

/// A window shorter than this before the end of a span is not enough to call a run settled.
const MIN_SETTLED_S: f64 = 1.0;

/// Slack for comparing window ends computed in floating point.
const EPS_S: f64 = 1e-6;

/// One measurement window of a run: when it ends and the p90 of the responses completed in it
/// (`None` when nothing completed: such a window is never over the limit).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Window {
    /// Seconds from the start of the run to the window's end.
    pub end_s: f64,
    /// p90 response time of the requests completed in the window, seconds.
    pub p90_s: Option<f64>,
}

/// The time from `onset_s` until the p90 of every window ending in `(onset_s, end_s]` stays at
/// or below [`SETTLE_TOLERANCE`] x `target_s`: the end of the last window over the limit, minus
/// the onset; 0 when none is.
pub fn settle_time(
    windows: impl IntoIterator<Item = Window>,
    onset_s: f64,
    end_s: f64,
    target_s: f64,
) -> f64 {
    let limit_s = SETTLE_TOLERANCE * target_s;
    windows
        .into_iter()
        .filter(|w| w.end_s > onset_s + EPS_S && w.end_s <= end_s + EPS_S)
        .filter(|w| w.p90_s.is_some_and(|p| p > limit_s))
        .map(|w| w.end_s - onset_s)
        .fold(0.0, f64::max)
}

/// Whether a span of `span_s` seconds settled: its settle time leaves at least a second of
/// span at the target.
pub fn settled(settle_s: f64, span_s: f64) -> bool {
    settle_s < span_s - MIN_SETTLED_S
}

/// The share of the windows with completions whose p90 met the target (0 without any).
pub fn within_target_share(windows: impl IntoIterator<Item = Window>, target_s: f64) -> f64 {
    let (mut met, mut all) = (0usize, 0usize);
    for p in windows.into_iter().filter_map(|w| w.p90_s) {
        all += 1;
        met += usize::from(p <= target_s);
    }
    met as f64 / all.max(1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(end_s: f64, p90_s: Option<f64>) -> Window {
        Window { end_s, p90_s }
    }

    #[test]
    fn the_last_window_over_the_limit_ends_the_settling() {
        let ws = [
            w(10.0, Some(5.0)), // at the onset: not after it
            w(11.0, Some(5.0)),
            w(12.0, Some(1.1)), // within 1.2 x target
            w(13.0, Some(1.3)),
            w(14.0, None),
            w(15.0, Some(0.5)),
            w(21.0, Some(9.0)), // after the end
        ];
        assert_eq!(settle_time(ws, 10.0, 20.0, 1.0), 3.0);
        assert_eq!(settle_time(ws, 13.0, 20.0, 1.0), 0.0);
        assert!(settled(3.0, 10.0));
        assert!(!settled(9.5, 10.0));
        assert_eq!(
            within_target_share(ws[1..6].iter().copied(), 1.0),
            1.0 / 4.0
        );
        assert_eq!(within_target_share([], 1.0), 0.0);
    }
}
