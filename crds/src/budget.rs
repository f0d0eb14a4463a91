//! One size budget for a whole `McpTask` object, shared by the front end (which writes the
//! spec) and the operator (which writes the status).
//!
//! etcd refuses a request over 1.5 MiB (its default `--max-request-bytes`), and the API server
//! then refuses the write: a task that grows past it can never be written again. So the whole
//! object (metadata and managed fields, spec, status) is kept under [`MAX_TASK_BYTES`], with
//! the margin for what the API server adds. The client's inputs get [`MAX_SPEC_INPUT_BYTES`] of
//! it at most (arguments, start-input answers, answers, capabilities); the status gets what is
//! left, and a result that would not fit fails the task instead (`ResultTooLarge`). A tool's
//! `error.data` is cut to [`MAX_ERROR_DATA_BYTES`].

use serde::Serialize;

use crate::{McpTask, McpTaskSpec, McpTaskStatus};

/// etcd's default request limit (`--max-request-bytes`, 1.5 MiB).
pub const ETCD_REQUEST_LIMIT_BYTES: usize = 1_572_864;
/// Largest serialized `McpTask` (JSON, metadata included) the front end and the operator write:
/// 1 MiB, a third below [`ETCD_REQUEST_LIMIT_BYTES`] for what the API server adds.
pub const MAX_TASK_BYTES: usize = 1_048_576;
/// Most bytes of client inputs in a task's spec ([`spec_input_bytes`]).
pub const MAX_SPEC_INPUT_BYTES: usize = 384 * 1024;
/// Largest serialized `error.data` of a tool's error message kept; a larger one is replaced by
/// a string holding its start and a marker saying how large it was.
pub const MAX_ERROR_DATA_BYTES: usize = 16 * 1024;

fn json_len(value: &impl Serialize) -> usize {
    // Serializing these types cannot fail: every map key is a string.
    serde_json::to_vec(value).map_or(usize::MAX, |v| v.len())
}

/// Bytes of client inputs in `spec`: its arguments, start-input answers, answers and declared
/// capabilities, serialized.
pub fn spec_input_bytes(spec: &McpTaskSpec) -> usize {
    [
        spec.arguments.as_ref().map_or(0, json_len),
        spec.start_input_responses.as_ref().map_or(0, json_len),
        spec.input_responses.as_ref().map_or(0, json_len),
        spec.client_capabilities.as_ref().map_or(0, json_len),
    ]
    .iter()
    .fold(0usize, |sum, n| sum.saturating_add(*n))
}

/// Bytes of what a caller made `task` hold: its client inputs (arguments, start-input answers,
/// answers) and its result, as stored. Counted from the kept text, without serializing.
pub fn caller_bytes(task: &McpTask) -> usize {
    let answers = |map: Option<&std::collections::BTreeMap<String, crate::RawJson>>| {
        map.into_iter()
            .flatten()
            .map(|(key, answer)| key.len().saturating_add(answer.len()))
            .fold(0usize, usize::saturating_add)
    };
    let spec = &task.spec;
    let result = task.status.as_ref().and_then(|s| s.result.as_ref());
    [
        spec.arguments.as_ref().map_or(0, crate::RawJson::len),
        answers(spec.start_input_responses.as_ref()),
        answers(spec.input_responses.as_ref()),
        result.map_or(0, crate::RawJson::len),
    ]
    .iter()
    .fold(0usize, |sum, n| sum.saturating_add(*n))
}

/// Bytes `task` would take with `status` in place of its own, serialized as JSON.
pub fn task_bytes_with_status(task: &McpTask, status: &McpTaskStatus) -> usize {
    let without = McpTask {
        metadata: task.metadata.clone(),
        spec: task.spec.clone(),
        status: None,
    };
    json_len(&without)
        .saturating_add(json_len(status))
        .saturating_add(r#","status":"#.len())
}

/// `data` if it serializes to at most [`MAX_ERROR_DATA_BYTES`]; otherwise a string holding the
/// start of its JSON and a marker `[… error.data cut: N bytes, at most M are kept]`.
pub fn bound_error_data(data: serde_json::Value) -> serde_json::Value {
    let text = data.to_string();
    if text.len() <= MAX_ERROR_DATA_BYTES {
        return data;
    }
    let marker = format!(
        "[… error.data cut: {} bytes, at most {MAX_ERROR_DATA_BYTES} are kept]",
        text.len()
    );
    // Escaping can grow the kept start (quotes, control characters): shrink until it fits.
    let mut end = MAX_ERROR_DATA_BYTES.saturating_sub(marker.len() + 2);
    loop {
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        let cut = serde_json::Value::String(format!("{}{marker}", &text[..end]));
        if cut.to_string().len() <= MAX_ERROR_DATA_BYTES || end == 0 {
            return cut;
        }
        end = end * 3 / 4;
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Map, json};

    use super::*;
    use crate::RawJson;

    #[test]
    fn small_error_data_is_kept_as_it_is() {
        let data = json!({"reason": "x", "list": [1, 2, 3]});
        assert_eq!(bound_error_data(data.clone()), data);
    }

    #[test]
    fn large_error_data_is_cut_with_a_marker_within_the_bound() {
        let data = json!({"blob": "é".repeat(40_000)});
        let cut = bound_error_data(data);
        let text = cut.as_str().expect("a string");
        assert!(text.starts_with("{\"blob\":\"éé"), "{}", &text[..20]);
        assert!(
            text.ends_with("[… error.data cut: 80011 bytes, at most 16384 are kept]"),
            "{}",
            &text[text.len() - 80..]
        );
        assert!(cut.to_string().len() <= MAX_ERROR_DATA_BYTES);
        let quotes = bound_error_data(json!(["\"".repeat(20_000)]));
        assert!(quotes.to_string().len() <= MAX_ERROR_DATA_BYTES);
    }

    #[test]
    fn the_task_size_counts_the_new_status_not_the_old() {
        let mut task = McpTask::new(
            "t",
            McpTaskSpec {
                tool: "x".into(),
                tool_uid: None,
                tool_generation: None,
                arguments: Some(RawJson::from(Map::from_iter([(
                    "a".into(),
                    json!("b".repeat(1000)),
                )]))),
                owner: "o".into(),
                ttl_ms: None,
                poll_interval_ms: None,
                client_capabilities: None,
                start_input_responses: None,
                input_responses: None,
            },
        );
        let big = McpTaskStatus {
            status_message: Some("m".repeat(5000)),
            ..McpTaskStatus::default()
        };
        task.status = Some(big.clone());
        let small = McpTaskStatus::default();
        let with_small = task_bytes_with_status(&task, &small);
        assert!(with_small < 2000, "{with_small}");
        assert!(task_bytes_with_status(&task, &big) > with_small + 5000);
        assert_eq!(spec_input_bytes(&task.spec), 1008);
    }
}
