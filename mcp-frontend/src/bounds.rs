//! Size limits on what a caller makes the cluster store, measured the way the operator will
//! write it: call arguments and start-input answers each go into ONE environment variable of
//! the tool container, mid-task answers into ONE pod annotation. Also the part of the client
//! capabilities a task keeps.

use std::io;

use serde::Serialize;
use serde_json::{Map, Value};

/// Largest value of one environment variable a container can be started with: Linux caps one
/// `NAME=value` string at 131072 bytes (`MAX_ARG_STRLEN`, counting its NUL), and the longest
/// name the operator uses is `MCP_TOOL_ARGUMENTS` (18 bytes, plus `=` and the NUL).
pub const ENV_VALUE_CEILING: usize = 131_072 - 20;
/// Highest `MAX_INPUT_RESPONSES_BYTES`: all annotations of one object must fit in 256 KiB,
/// and the pod also carries the tool template's own annotations and the cancel annotation.
pub const ANNOTATION_VALUE_CEILING: usize = 192 * 1024;
/// Highest `MAX_LISTEN_TASK_IDS`.
pub const LISTEN_TASK_IDS_CEILING: usize = 1000;

/// Bytes `value` takes as the operator writes it into an environment variable: compact JSON,
/// with each character the API server refuses in an apply patch written as a 6-byte `\uXXXX`
/// escape, and each `$` doubled (`$$`, so that Kubernetes does not expand `$(VAR)`).
pub fn env_value_bytes(value: &impl Serialize) -> usize {
    measure(value, true)
}

/// Bytes `value` takes as the operator writes it into a pod annotation: compact JSON with
/// refused characters escaped (no `$` doubling: annotations are not expanded).
pub fn annotation_value_bytes(value: &impl Serialize) -> usize {
    measure(value, false)
}

fn measure(value: &impl Serialize, double_dollars: bool) -> usize {
    let mut counter = Counter {
        bytes: 0,
        double_dollars,
        pending: Vec::new(),
    };
    // Writing into a counter cannot fail, and our values always serialize; a failure counts
    // as too large rather than as empty.
    if serde_json::to_writer(&mut counter, value).is_err() {
        return usize::MAX;
    }
    counter.bytes
}

/// Counts bytes written, plus the escaping the operator adds. serde_json writes whole UTF-8
/// characters per call only inside one string fragment, so a character split across two
/// writes is completed from `pending`.
struct Counter {
    bytes: usize,
    double_dollars: bool,
    pending: Vec<u8>,
}

impl io::Write for Counter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.bytes += buf.len();
        self.pending.extend_from_slice(buf);
        let valid = match std::str::from_utf8(&self.pending) {
            Ok(text) => text.len(),
            Err(error) => error.valid_up_to(),
        };
        let text = std::str::from_utf8(&self.pending[..valid]).unwrap_or_default();
        for c in text.chars() {
            if is_refused(c) {
                self.bytes += 6 - c.len_utf8();
            } else if c == '$' && self.double_dollars {
                self.bytes += 1;
            }
        }
        self.pending.drain(..valid);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Characters the API server refuses in an apply patch, which the operator therefore writes as
/// `\uXXXX` escapes.
///
/// NB: the same set as `is_refused` in `operator/src/contract/yaml_safe.rs`; keep them equal.
fn is_refused(c: char) -> bool {
    matches!(c, '\u{7f}'..='\u{84}' | '\u{86}'..='\u{9f}' | '\u{fffe}' | '\u{ffff}')
}

/// The part of a request's client capabilities a task keeps: what deciding which input
/// requests the client may be shown reads (`input_request_allowed` in `crds/src/wire.rs`),
/// and nothing else. `sampling` and `roots` become `{}`; `elicitation` keeps only its `form`
/// and `url` members, as `{}`; an `elicitation` naming neither but not empty (which declares
/// no mode we ask) is dropped, since an empty one would declare form mode. So the stored
/// object is at most `{"elicitation":{"form":{},"url":{}},"roots":{},"sampling":{}}`.
pub fn stored_capabilities(declared: &Map<String, Value>) -> Map<String, Value> {
    let empty = || Value::Object(Map::new());
    let mut kept = Map::new();
    for key in ["sampling", "roots"] {
        if declared.contains_key(key) {
            kept.insert(key.to_owned(), empty());
        }
    }
    if let Some(elicitation) = declared.get("elicitation").and_then(Value::as_object) {
        let modes: Map<String, Value> = ["form", "url"]
            .into_iter()
            .filter(|mode| elicitation.contains_key(*mode))
            .map(|mode| (mode.to_owned(), empty()))
            .collect();
        if elicitation.is_empty() || !modes.is_empty() {
            kept.insert("elicitation".to_owned(), Value::Object(modes));
        }
    }
    kept
}

#[cfg(test)]
mod tests {
    use mcp_task_operator_crds::wire::input_request_allowed;
    use serde_json::json;

    use super::*;

    #[test]
    fn dollars_and_refused_characters_count_as_the_operator_writes_them() {
        assert_eq!(env_value_bytes(&json!({"a": "b"})), 9);
        assert_eq!(env_value_bytes(&json!({"a": "$$"})), 10 + 2);
        assert_eq!(annotation_value_bytes(&json!({"a": "$$"})), 10);
        // DEL (1 byte), U+0080 (2 bytes) and U+FFFF (3 bytes) each become a 6-byte escape.
        let refused = json!({"a": "\u{7f}\u{80}\u{ffff}"});
        let plain = serde_json::to_string(&refused).unwrap().len();
        assert_eq!(env_value_bytes(&refused), plain + 5 + 4 + 3);
        // Non-refused multibyte characters count as their UTF-8 bytes.
        assert_eq!(env_value_bytes(&json!("é😀")), 2 + 2 + 4);
    }

    #[test]
    fn long_values_split_across_writes_are_counted_exactly() {
        let text = "é$\u{80}x".repeat(10_000);
        let bytes = env_value_bytes(&json!({ "t": text }));
        assert_eq!(bytes, 8 + text.len() + 10_000 + 10_000 * 4);
    }

    #[test]
    fn stored_capabilities_decide_input_requests_exactly_like_the_declared_ones() {
        let declared = [
            json!({}),
            json!({"elicitation": {}}),
            json!({"elicitation": {"form": {"x": 1}}}),
            json!({"elicitation": {"url": {}}}),
            json!({"elicitation": {"future": {}}}),
            json!({"elicitation": {"form": {}, "url": {}, "future": {}}}),
            json!({"sampling": {"tools": {}}, "roots": {"listChanged": true}, "experimental": {"big": "x".repeat(10_000)}}),
            json!({"elicitation": "not an object"}),
        ];
        let requests = [
            json!({"method": "elicitation/create", "params": {"message": "m"}}),
            json!({"method": "elicitation/create", "params": {"mode": "url"}}),
            json!({"method": "elicitation/create", "params": {"mode": "form"}}),
            json!({"method": "sampling/createMessage"}),
            json!({"method": "roots/list"}),
            json!({"method": "other"}),
        ];
        for caps in &declared {
            let caps = caps.as_object().unwrap();
            let kept = stored_capabilities(caps);
            assert!(
                serde_json::to_string(&kept).unwrap().len() <= 64,
                "{kept:?}"
            );
            for request in &requests {
                assert_eq!(
                    input_request_allowed(Some(&kept), request),
                    input_request_allowed(Some(caps), request),
                    "{caps:?} {request}"
                );
            }
        }
    }
}
