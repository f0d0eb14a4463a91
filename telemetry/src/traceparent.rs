//! The W3C `traceparent` value: parsed strictly, re-emitted from the parsed IDs only.
//!
//! A client sends it in `params._meta` (MCP SEP-414,
//! <https://modelcontextprotocol.io/seps/414>); the front end stores it on the task and the
//! operator hands it to the tool container as `TRACEPARENT`. It is caller data, so nothing but
//! a value that passes [`TraceParent::parse`] goes on, and what goes on is [`TraceParent`]'s own
//! rendering, never the caller's text. Format: <https://www.w3.org/TR/trace-context/#traceparent-header>.

use std::fmt;

/// Length of a version-00 `traceparent`: `00-<32 hex>-<16 hex>-<2 hex>`.
pub const TRACEPARENT_LEN: usize = 55;

/// A valid W3C trace context parent: trace ID, parent span ID and the sampled flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TraceParent {
    trace_id: u128,
    span_id: u64,
    sampled: bool,
}

impl TraceParent {
    /// A trace parent from its parts; `None` when either ID is all zeroes (invalid in W3C).
    pub fn new(trace_id: u128, span_id: u64, sampled: bool) -> Option<Self> {
        (trace_id != 0 && span_id != 0).then_some(Self {
            trace_id,
            span_id,
            sampled,
        })
    }

    /// Parses `value` as a W3C `traceparent`: exactly [`TRACEPARENT_LEN`] characters, a
    /// version other than `ff`, lowercase hex fields, IDs not all zeroes. Anything else is
    /// `None`: callers ignore a malformed value (and start a new trace), never fail on it.
    /// A later version's extra fields (a longer value) are refused as well.
    pub fn parse(value: &str) -> Option<Self> {
        let bytes = value.as_bytes();
        // ASCII first: the slices below then never split a character.
        if bytes.len() != TRACEPARENT_LEN || !value.is_ascii() {
            return None;
        }
        if bytes[2] != b'-' || bytes[35] != b'-' || bytes[52] != b'-' {
            return None;
        }
        let version = hex(&value[0..2])?;
        if version == 0xff {
            return None;
        }
        let trace_id = hex(&value[3..35])?;
        let span_id = u64::try_from(hex(&value[36..52])?).ok()?;
        let flags = hex(&value[53..55])?;
        Self::new(trace_id, span_id, flags & 1 == 1)
    }

    /// The trace ID.
    pub fn trace_id(&self) -> u128 {
        self.trace_id
    }

    /// The parent span ID.
    pub fn span_id(&self) -> u64 {
        self.span_id
    }

    /// Whether the caller sampled (records) the trace.
    pub fn sampled(&self) -> bool {
        self.sampled
    }

    /// The trace ID as 32 lowercase hex digits, as tracing backends show it.
    pub fn trace_id_hex(&self) -> String {
        format!("{:032x}", self.trace_id)
    }
}

/// Renders version 00: `00-<trace id>-<span id>-<flags>`, always [`TRACEPARENT_LEN`] long.
impl fmt::Display for TraceParent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let flags = u8::from(self.sampled);
        write!(
            f,
            "00-{:032x}-{:016x}-{flags:02x}",
            self.trace_id, self.span_id
        )
    }
}

/// `digits` as a number when all are lowercase hex (W3C refuses uppercase).
fn hex(digits: &str) -> Option<u128> {
    if !digits
        .bytes()
        .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    {
        return None;
    }
    u128::from_str_radix(digits, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const VALID: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn a_valid_traceparent_parses_and_renders_back_unchanged() {
        let parsed = TraceParent::parse(VALID).expect("valid");
        assert_eq!(parsed.trace_id_hex(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(parsed.span_id(), 0x00f0_67aa_0ba9_02b7);
        assert!(parsed.sampled());
        assert_eq!(parsed.to_string(), VALID);
        let unsampled = VALID.replace("-01", "-00");
        assert!(!TraceParent::parse(&unsampled).expect("valid").sampled());
    }

    #[test]
    fn malformed_traceparents_are_refused() {
        let cases = [
            "",
            "00",
            // Uppercase hex, as W3C refuses.
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            // All-zero trace ID and span ID.
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            // Version ff is invalid.
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            // Wrong separators, a non-hex digit, a short and a long value.
            "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7_01",
            "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            // A sign would pass `from_str_radix`.
            "00-+bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            // Multi-byte characters of the right byte length, one across a field boundary.
            "00-4bf92f3577b34da6a3ce929d0e0e47é-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473é00f067aa0ba902b7-01",
        ];
        for case in cases {
            assert_eq!(TraceParent::parse(case), None, "{case:?}");
        }
    }

    #[test]
    fn a_later_version_of_55_characters_is_read_and_rendered_as_version_00() {
        let later = VALID.replacen("00", "01", 1);
        let parsed = TraceParent::parse(&later).expect("version 01");
        assert_eq!(parsed.to_string(), VALID);
    }

    #[test]
    fn only_the_sampled_flag_is_kept() {
        let flags = VALID.replace("-01", "-ff");
        assert_eq!(
            TraceParent::parse(&flags).expect("valid").to_string(),
            VALID
        );
    }
}
