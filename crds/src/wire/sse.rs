//! The JSON messages of a `text/event-stream` body, as the Streamable HTTP transport frames
//! them: events split by a blank line, each message in the event's `data:` lines.

use serde_json::Value;

/// The JSON messages in the `data:` lines of an SSE text; events without data or whose data is
/// not JSON are skipped.
pub fn sse_messages(text: &str) -> Vec<Value> {
    text.split("\n\n")
        .filter_map(|event| {
            let data: Vec<&str> = event
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(str::trim_start)
                .collect();
            (!data.is_empty())
                .then(|| serde_json::from_str(&data.join("\n")).ok())
                .flatten()
        })
        .collect()
}
