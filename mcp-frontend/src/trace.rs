//! The `tools/call` span: the task's trace starts here. It continues the client's W3C
//! `traceparent` from `params._meta` (MCP SEP-414, <https://modelcontextprotocol.io/seps/414>),
//! or starts a new trace, and its own context is what the task stores for the operator.

use mcp_task_operator_telemetry::{self as telemetry, SPAN_TARGET, TraceParent};
use rmcp::model::RequestMetaObject;
use tracing::Span;

/// The span of one `tools/call`, and the trace context to store on its task: the span's own
/// when spans are exported, else the client's (so the tool still joins the client's trace).
/// A `traceparent` that is not valid W3C is ignored (a new trace), never an error; `tracestate`
/// and `baggage` are not carried.
pub fn call_span(meta: &RequestMetaObject) -> (Span, Option<TraceParent>) {
    let span = tracing::info_span!(
        target: SPAN_TARGET,
        "tools/call",
        mcp.method.name = "tools/call",
        gen_ai.tool.name = tracing::field::Empty,
        mcp.task.id = tracing::field::Empty,
        otel.status_code = tracing::field::Empty,
    );
    let client = meta.get_traceparent().and_then(TraceParent::parse);
    if let Some(parent) = &client {
        telemetry::set_parent(&span, parent);
    }
    let stored = telemetry::traceparent_of(&span).or(client);
    (span, stored)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_export_the_clients_valid_traceparent_is_what_the_task_stores() {
        let valid = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let mut meta = RequestMetaObject::new();
        meta.set_traceparent(valid);
        let (_, stored) = call_span(&meta);
        assert_eq!(stored.map(|t| t.to_string()).as_deref(), Some(valid));

        for malformed in ["", "00-zz", &valid.to_uppercase(), &format!("{valid}-x")] {
            let mut meta = RequestMetaObject::new();
            meta.set_traceparent(malformed);
            assert_eq!(call_span(&meta).1, None, "{malformed:?}");
        }
        assert_eq!(call_span(&RequestMetaObject::new()).1, None);
    }
}
