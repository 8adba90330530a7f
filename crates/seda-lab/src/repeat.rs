//! `seda lab repeat`: a scenario run N times, and how far each of its headline figures
//! ([`Scenario::headline`](crate::Scenario::headline)) moved between runs.

use serde::Serialize;
use serde_json::{Map, Value};

/// The spread (largest distance from the median, relative to it) above which a figure is not
/// repeatable: issue 51 asks each headline figure to stay within +-10% of its median over
/// five quick runs (issue 15 had asked +-15%).
pub const MAX_SPREAD: f64 = 0.10;

/// One figure over the runs.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Spread {
    /// Its path in the summary.
    pub figure: String,
    /// Its value in each run (`None`: absent or not a number in that run).
    pub values: Vec<Option<f64>>,
    /// Runs left out of the median, min, max and spread: a loaded machine's (see
    /// [`crate::health`]), whose figures measure the machine.
    pub left_out: Vec<usize>,
    /// Median, min and max of the quiet runs that have it.
    pub median: Option<f64>,
    /// See `median`.
    pub min: Option<f64>,
    /// See `median`.
    pub max: Option<f64>,
    /// `max(max - median, median - min) / |median|`: how far from its median the figure
    /// strayed, as a fraction of it.
    pub spread: Option<f64>,
    /// Whether the spread exceeds [`MAX_SPREAD`] (or the figure is missing from some quiet
    /// run, or no run was quiet).
    pub flagged: bool,
}

/// The figure at `path` (keys joined by `/`, array indices as numbers) in `summary`. A key may
/// hold `/` itself (`sert-threshold` names its points `ranking/adaptive/80%`): at each level the
/// shortest run of segments that names a key is taken.
pub fn figure(summary: &Map<String, Value>, path: &str) -> Option<f64> {
    let segments: Vec<&str> = path.split('/').collect();
    let v = child(|k| summary.get(k), &segments)?;
    match v {
        Value::Bool(b) => Some(f64::from(u8::from(*b))),
        _ => v.as_f64(),
    }
}

/// The value at `segments` below the object whose keys `get` reads: the shortest run of
/// segments that names a key, then the rest below it.
fn child<'a>(get: impl Fn(&str) -> Option<&'a Value>, segments: &[&str]) -> Option<&'a Value> {
    (1..=segments.len()).find_map(|n| lookup(get(&segments[..n].join("/"))?, &segments[n..]))
}

/// The value at `segments` below `v` (array indices as numbers).
fn lookup<'a>(v: &'a Value, segments: &[&str]) -> Option<&'a Value> {
    match (v, segments.first()) {
        (_, None) => Some(v),
        (Value::Array(a), Some(i)) => lookup(a.get(i.parse::<usize>().ok()?)?, &segments[1..]),
        _ => child(|k| v.get(k), segments),
    }
}

/// The median of `xs` (not empty).
pub fn median(xs: &[f64]) -> Option<f64> {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(v[n / 2]),
        _ => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
    }
}

/// `figure`'s spread over `values`, one per run, leaving out the runs `loaded` marks. A loaded
/// run's figures are kept in `values` but do not count: in one `controllers` repeat, the run
/// whose server got 71% of its core read ours at 0.768 x capacity against 0.970 and 0.983 in
/// the quiet runs, and made a spread under 1% read 21%.
pub fn spread(figure: &str, values: Vec<Option<f64>>, loaded: &[bool]) -> Spread {
    let is_loaded = |i: usize| loaded.get(i).copied().unwrap_or(false);
    let quiet: Vec<Option<f64>> = values
        .iter()
        .enumerate()
        .filter(|(i, _)| !is_loaded(*i))
        .map(|(_, v)| *v)
        .collect();
    let have: Vec<f64> = quiet.iter().flatten().copied().collect();
    let median = median(&have);
    let min = have.iter().copied().reduce(f64::min);
    let max = have.iter().copied().reduce(f64::max);
    let spread = match (median, min, max) {
        (Some(m), Some(lo), Some(hi)) if m != 0.0 => Some((hi - m).max(m - lo) / m.abs()),
        (Some(_), Some(lo), Some(hi)) => Some(if hi == lo { 0.0 } else { f64::INFINITY }),
        _ => None,
    };
    let missing = have.len() < quiet.len();
    Spread {
        figure: figure.to_string(),
        flagged: missing || spread.is_none_or(|s| s > MAX_SPREAD),
        left_out: (0..values.len())
            .filter(|&i| is_loaded(i))
            .map(|i| i + 1)
            .collect(),
        values,
        median,
        min,
        max,
        spread,
    }
}

/// The table `seda lab repeat` prints.
pub fn table(spreads: &[Spread]) -> String {
    let f = |x: Option<f64>| x.map_or("-".into(), |v| format!("{v:.3}"));
    let width = spreads
        .iter()
        .map(|s| s.figure.len())
        .max()
        .unwrap_or(6)
        .max(6);
    let mut s = format!(
        "{:<width$}  {:>9}  {:>9}  {:>9}  {:>7}\n",
        "figure", "median", "min", "max", "spread"
    );
    for r in spreads {
        s += &format!(
            "{:<width$}  {:>9}  {:>9}  {:>9}  {:>6}{}\n",
            r.figure,
            f(r.median),
            f(r.min),
            f(r.max),
            r.spread
                .map_or("-".into(), |v| format!("{:.0}%", v * 100.0)),
            match r.values.iter().filter(|v| v.is_none()).count() {
                _ if r.left_out.len() == r.values.len() => "  no quiet run".to_string(),
                0 if r.flagged => format!("  > +-{:.0}%", MAX_SPREAD * 100.0),
                0 => String::new(),
                n => format!("  missing in {n} run(s)"),
            },
        );
    }
    if let Some(r) = spreads.first().filter(|r| !r.left_out.is_empty()) {
        let runs: Vec<String> = r.left_out.iter().map(|i| i.to_string()).collect();
        s += &format!(
            "left out of the medians and spreads, as loaded: run(s) {}\n",
            runs.join(", ")
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn figures_are_found_by_path() {
        let s = json!({"ours": {"goodput_per_s": 5.0, "ok": true}, "points": [{"x": 2}]});
        let s = s.as_object().unwrap();
        assert_eq!(figure(s, "ours/goodput_per_s"), Some(5.0));
        assert_eq!(figure(s, "ours/ok"), Some(1.0));
        assert_eq!(figure(s, "points/0/x"), Some(2.0));
        assert_eq!(figure(s, "ours/missing"), None);
        let s = json!({"ranking/adaptive/80%": {"mean_response_s": 0.06}});
        let s = s.as_object().unwrap();
        assert_eq!(
            figure(s, "ranking/adaptive/80%/mean_response_s"),
            Some(0.06)
        );
    }

    #[test]
    fn spread_is_the_farthest_run_from_the_median() {
        let r = spread(
            "g",
            vec![Some(10.0), Some(9.5), Some(11.5), Some(10.0), Some(10.5)],
            &[],
        );
        assert_eq!(r.median, Some(10.0));
        assert_eq!((r.min, r.max), (Some(9.5), Some(11.5)));
        assert!((r.spread.unwrap() - 0.15).abs() < 1e-12);
        assert!(r.flagged);
        let r = spread("g", vec![Some(10.0), Some(9.5), Some(11.0)], &[]);
        assert!(!r.flagged);
        assert!(spread("g", vec![Some(10.0), None], &[]).flagged);
    }

    #[test]
    fn loaded_runs_are_left_out_of_the_spread() {
        let values = vec![Some(0.768), Some(0.970), Some(0.983)];
        let r = spread("g", values.clone(), &[true, false, false]);
        assert_eq!(r.min, Some(0.970));
        assert_eq!(r.left_out, vec![1]);
        assert!(!r.flagged);
        assert_eq!(r.values, values);
        assert!(table(&[r]).contains("as loaded: run(s) 1"));
        // A loaded run that lacks the figure is not "missing"; no quiet run at all is flagged.
        assert!(!spread("g", vec![None, Some(1.0)], &[true, false]).flagged);
        let none = spread("g", vec![Some(1.0)], &[true]);
        assert!(none.flagged && none.median.is_none());
        assert!(table(&[none]).contains("no quiet run"));
    }
}
