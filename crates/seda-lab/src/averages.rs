//! The mean of a scenario's readings, and how far one run's mean can be trusted.

/// The mean of `xs`; NaN when there are none.
pub(crate) fn mean(xs: impl Iterator<Item = f64>) -> f64 {
    let (sum, n) = xs.fold((0.0, 0usize), |(s, n), x| (s + x, n + 1));
    if n == 0 { f64::NAN } else { sum / n as f64 }
}

/// The standard error of `xs`'s mean (the sample's standard deviation over the root of its
/// size); `None` under two values.
pub(crate) fn standard_error(xs: &[f64]) -> Option<f64> {
    let n = xs.len();
    if n < 2 {
        return None;
    }
    let m = mean(xs.iter().copied());
    let var = xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1) as f64;
    Some((var / n as f64).sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mean_and_its_standard_error() {
        assert_eq!(mean([1.0, 2.0, 3.0].into_iter()), 2.0);
        assert!(mean(std::iter::empty()).is_nan());
        // Sample variance 2 / 3 over four values: sqrt(2 / 3) / 2.
        let se = standard_error(&[1.0, 2.0, 3.0, 2.0]).unwrap();
        assert!((se - (2.0f64 / 3.0).sqrt() / 2.0).abs() < 1e-12, "{se}");
        assert_eq!(standard_error(&[5.0]), None);
    }
}
