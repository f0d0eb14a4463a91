//! Ordering of `metadata.resourceVersion`s of one resource, as KEP-5504 ("Comparable Resource
//! Version", stable in Kubernetes 1.35) defines it: a resource version is a positive decimal
//! integer without leading zeros, and of two versions of the same resource the larger is the
//! newer. <https://github.com/kubernetes/enhancements/tree/master/keps/sig-api-machinery/5504-comparable-resource-version>
//!
//! A value that is not such an integer (an API server of another storage) compares as unknown,
//! and callers then act as if they could not tell.

use std::cmp::Ordering;

/// How `a` compares with `b`, or `None` when either is not a comparable resource version.
pub fn compare(a: &str, b: &str) -> Option<Ordering> {
    (comparable(a) && comparable(b)).then(|| a.len().cmp(&b.len()).then_with(|| a.cmp(b)))
}

/// Whether `rv` is a positive decimal integer without leading zeros (so the longer of two is
/// the larger, and two of one length compare as strings).
fn comparable(rv: &str) -> bool {
    !rv.is_empty() && !rv.starts_with('0') && rv.bytes().all(|b| b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_compare_as_integers() {
        assert_eq!(compare("9", "10"), Some(Ordering::Less));
        assert_eq!(compare("123", "123"), Some(Ordering::Equal));
        assert_eq!(compare("1000", "999"), Some(Ordering::Greater));
        assert_eq!(compare("20", "19"), Some(Ordering::Greater));
        assert_eq!(
            compare("18446744073709551616", "18446744073709551615"),
            Some(Ordering::Greater),
            "no bound on the length"
        );
    }

    #[test]
    fn anything_else_is_not_comparable() {
        for bad in ["", "0", "012", "12a", "-5", " 1", "1.5"] {
            assert_eq!(compare(bad, "7"), None, "{bad:?}");
            assert_eq!(compare("7", bad), None, "{bad:?}");
        }
    }
}
