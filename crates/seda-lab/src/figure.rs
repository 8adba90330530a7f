//! How reports print a figure that may be missing: one way for every scenario's tables.

/// An optional figure with three decimals, or `-`.
pub fn fmt(x: Option<f64>) -> String {
    x.map_or("-".into(), |v| format!("{v:.3}"))
}

/// An optional share as a percentage with one decimal, or `-`.
pub fn pct(x: Option<f64>) -> String {
    x.map_or("-".into(), |v| format!("{:.1}%", 100.0 * v))
}
