//! Percentiles, medians and ratios of measured samples, and how the report prints them.

use std::time::Duration;

/// The `q`-quantile (0.0..=1.0) of the sorted `values` by the nearest-rank method; `None` when
/// empty.
pub fn nearest_rank<T: Copy>(sorted: &[T], q: f64) -> Option<T> {
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted.get(rank.clamp(1, sorted.len().max(1)) - 1).copied()
}

/// The `q`-quantile (0.0..=1.0) of `samples` by the nearest-rank method; zero when empty.
pub fn quantile(samples: &mut [Duration], q: f64) -> Duration {
    samples.sort_unstable();
    nearest_rank(samples, q).unwrap_or_default()
}

/// Median and worst of `samples`.
pub fn median_worst(samples: &mut [Duration]) -> (Duration, Duration) {
    let median = quantile(samples, 0.5);
    (median, samples.last().copied().unwrap_or_default())
}

/// Milliseconds with a precision that suits the size: `0.123`, `12.3`, `1234`.
pub fn ms(d: Duration) -> String {
    let ms = d.as_secs_f64() * 1000.0;
    if ms < 1.0 {
        format!("{ms:.3} ms")
    } else if ms < 100.0 {
        format!("{ms:.1} ms")
    } else {
        format!("{ms:.0} ms")
    }
}

/// `a / b` as `1.23×`, or `n/a` when `b` is zero.
pub fn ratio(a: f64, b: f64) -> String {
    if b == 0.0 {
        "n/a".to_owned()
    } else {
        format!("{:.2}×", a / b)
    }
}

/// The median and the range of a figure measured once per round.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Spread {
    /// Median (nearest rank).
    pub median: f64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
}

impl Spread {
    /// The spread of `values`; zero when empty. NaN values (a ratio over a zero) are left out.
    pub fn of(values: impl IntoIterator<Item = f64>) -> Self {
        let mut values: Vec<f64> = values.into_iter().filter(|v| !v.is_nan()).collect();
        if values.is_empty() {
            return Self::default();
        }
        values.sort_by(f64::total_cmp);
        Self {
            median: nearest_rank(&values, 0.5).unwrap_or_default(),
            min: values[0],
            max: values[values.len() - 1],
        }
    }

    /// The spread of the per-round ratios `a[r] / b[r]` (paired: both from the same round).
    pub fn of_ratios(a: &[f64], b: &[f64]) -> Self {
        Self::of(
            a.iter()
                .zip(b)
                .map(|(a, b)| if *b == 0.0 { f64::NAN } else { a / b }),
        )
    }

    /// As a ratio: `1.52× (1.40–1.61)`.
    pub fn ratio(&self) -> String {
        format!("{:.2}× ({:.2}–{:.2})", self.median, self.min, self.max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spreads_take_the_median_and_range_of_paired_ratios() {
        let a = [2.0, 3.0, 4.0, 10.0];
        let b = [1.0, 1.0, 2.0, 0.0];
        // Ratios 2, 3, 2 (the zero baseline is left out): median 2, range 2–3.
        let spread = Spread::of_ratios(&a, &b);
        assert_eq!(
            spread,
            Spread {
                median: 2.0,
                min: 2.0,
                max: 3.0
            }
        );
        assert_eq!(spread.ratio(), "2.00× (2.00–3.00)");
        assert_eq!(Spread::of([]), Spread::default());
        assert_eq!(Spread::of([5.0, 1.0, 3.0]).ratio(), "3.00× (1.00–5.00)");
    }

    #[test]
    fn quantiles_use_the_nearest_rank() {
        let mut samples: Vec<Duration> = (1..=100).map(Duration::from_millis).collect();
        assert_eq!(quantile(&mut samples, 0.5), Duration::from_millis(50));
        assert_eq!(quantile(&mut samples, 0.99), Duration::from_millis(99));
        assert_eq!(quantile(&mut samples, 1.0), Duration::from_millis(100));
        assert_eq!(quantile(&mut [], 0.5), Duration::ZERO);
    }

    #[test]
    fn ratios_guard_against_a_zero_baseline() {
        assert_eq!(ratio(3.0, 2.0), "1.50×");
        assert_eq!(ratio(1.0, 0.0), "n/a");
    }
}
