//! Percentiles, medians and ratios of measured samples, and how the report prints them.

use std::time::Duration;

/// The `q`-quantile (0.0..=1.0) of `samples` by the nearest-rank method; zero when empty.
pub fn quantile(samples: &mut [Duration], q: f64) -> Duration {
    if samples.is_empty() {
        return Duration::ZERO;
    }
    samples.sort_unstable();
    let rank = (q * samples.len() as f64).ceil() as usize;
    samples[rank.clamp(1, samples.len()) - 1]
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

#[cfg(test)]
mod tests {
    use super::*;

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
