//! Prometheus metrics of the front end: MCP requests by method and HTTP status, and their
//! duration; `tasks/*` answers by outcome (a `tasks/get` for an unknown task is
//! `task_not_found`, the -32602 answer); `tools/call` answers by tool and outcome. Labels come
//! from fixed lists or the tool catalog, never from client-chosen strings.

use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use rmcp::model::CallToolResponse;

use crate::error::Error;

/// JSON-RPC methods counted under their own name; anything else is `other`.
const KNOWN_METHODS: &[&str] = &[
    "server/discover",
    "tools/list",
    "tools/call",
    "tasks/get",
    "tasks/update",
    "tasks/cancel",
    "subscriptions/listen",
    "initialize",
];

/// Labels of one answered request.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    /// The JSON-RPC method, or `other`.
    pub method: &'static str,
    /// The HTTP status code.
    pub status: u16,
}

/// Labels naming a method.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct MethodLabels {
    /// The JSON-RPC method, or `other`.
    pub method: &'static str,
}

/// Labels of one answered `tasks/*` request.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TaskRequestLabels {
    /// `tasks/get`, `tasks/update` or `tasks/cancel`.
    pub method: &'static str,
    /// `ok`, or the error's category ([`crate::error::Error::category`]).
    pub outcome: &'static str,
}

/// Labels of one answered `tools/call`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ToolCallLabels {
    /// The tool's name when the catalog has it, else `other`.
    pub tool: String,
    /// `task` (a task was created), `completed`, `tool_error` (`isError: true`),
    /// `input_required`, or the error's category.
    pub outcome: &'static str,
}

/// The `tasks/*` methods counted by outcome.
pub const TASK_METHODS: [&str; 3] = ["tasks/get", "tasks/update", "tasks/cancel"];

/// The outcome of a successful answer.
pub const OK: &str = "ok";

/// The tool label of a call to a tool the catalog does not have.
pub const OTHER_TOOL: &str = "other";

/// Every metric the front end exports.
#[derive(Debug)]
pub struct Metrics {
    requests: Family<RequestLabels, Counter>,
    duration: Family<MethodLabels, Histogram>,
    task_requests: Family<TaskRequestLabels, Counter>,
    tool_calls: Family<ToolCallLabels, Counter>,
    /// The series a `tasks/get` answered by the fast path counts into, resolved once.
    served_poll: (Counter, Counter, Histogram),
}

impl Metrics {
    /// Creates the metrics and registers them under the `mcp_frontend` prefix.
    pub fn register(registry: &mut Registry) -> Self {
        let requests: Family<RequestLabels, Counter> = Family::default();
        let duration: Family<MethodLabels, Histogram> =
            Family::new_with_constructor(|| Histogram::new(exponential_buckets(0.001, 2.0, 16)));
        let task_requests: Family<TaskRequestLabels, Counter> = Family::default();
        let method = "tasks/get";
        let served_poll = (
            requests
                .get_or_create(&RequestLabels {
                    method,
                    status: 200,
                })
                .clone(),
            task_requests
                .get_or_create(&TaskRequestLabels {
                    method,
                    outcome: OK,
                })
                .clone(),
            duration.get_or_create(&MethodLabels { method }).clone(),
        );
        let metrics = Self {
            requests,
            duration,
            task_requests,
            tool_calls: Family::default(),
            served_poll,
        };
        // The series a dashboard divides by exist from the start, at 0, in every replica.
        for method in TASK_METHODS {
            for outcome in [OK, "task_not_found"] {
                let labels = TaskRequestLabels { method, outcome };
                drop(metrics.task_requests.get_or_create(&labels));
            }
        }
        let registry = registry.sub_registry_with_prefix("mcp_frontend");
        registry.register(
            "requests",
            "MCP requests answered, by JSON-RPC method and HTTP status",
            metrics.requests.clone(),
        );
        registry.register(
            "request_duration_seconds",
            "Time to the first byte of an MCP answer, by JSON-RPC method",
            metrics.duration.clone(),
        );
        registry.register(
            "task_requests",
            "tasks/get, tasks/update and tasks/cancel answers, by method and outcome (ok or an error category; task_not_found is the -32602 answer)",
            metrics.task_requests.clone(),
        );
        registry.register(
            "tool_calls",
            "tools/call answers, by tool and outcome (task, completed, tool_error, input_required or an error category)",
            metrics.tool_calls.clone(),
        );
        metrics
    }

    /// Counts one answered `tasks/*` request of `method` (one of [`TASK_METHODS`]) by its
    /// outcome: [`OK`] or an error category.
    pub fn task_request(&self, method: &'static str, outcome: &'static str) {
        self.task_requests
            .get_or_create(&TaskRequestLabels { method, outcome })
            .inc();
    }

    /// Counts one answered `tools/call` of `tool` (a catalog name, or [`OTHER_TOOL`]).
    pub fn tool_call(&self, tool: &str, outcome: &'static str) {
        self.tool_calls
            .get_or_create(&ToolCallLabels {
                tool: tool.to_owned(),
                outcome,
            })
            .inc();
    }

    /// Records one `tasks/get` the fast path answered: as [`Self::observe`] with HTTP 200 and
    /// [`Self::task_request`] with [`OK`] together, on series resolved at start.
    pub fn served_poll(&self, elapsed: Duration) {
        let (requests, task_requests, duration) = &self.served_poll;
        requests.inc();
        task_requests.inc();
        duration.observe(elapsed.as_secs_f64());
    }

    /// Records one answered request.
    pub fn observe(&self, method: Option<&str>, status: u16, elapsed: Duration) {
        let method = method_label(method);
        self.requests
            .get_or_create(&RequestLabels { method, status })
            .inc();
        self.duration
            .get_or_create(&MethodLabels { method })
            .observe(elapsed.as_secs_f64());
    }
}

/// The `outcome` label of a `tools/call` answer.
pub fn call_outcome(answer: &Result<CallToolResponse, Error>) -> &'static str {
    match answer {
        Ok(CallToolResponse::Task(_)) => "task",
        Ok(CallToolResponse::InputRequired(_)) => "input_required",
        Ok(CallToolResponse::Complete(result)) if result.is_error == Some(true) => "tool_error",
        Ok(CallToolResponse::Complete(_)) => "completed",
        // The enum is non-exhaustive; we answer with none of its other kinds.
        Ok(_) => "other",
        Err(error) => error.category(),
    }
}

fn method_label(method: Option<&str>) -> &'static str {
    method
        .and_then(|m| KNOWN_METHODS.iter().find(|known| **known == m))
        .copied()
        .unwrap_or("other")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_methods_share_one_label() {
        assert_eq!(method_label(Some("tasks/get")), "tasks/get");
        assert_eq!(method_label(Some("x/../../etc")), "other");
        assert_eq!(method_label(None), "other");
    }

    #[test]
    fn task_outcomes_exist_at_zero_and_count_by_outcome() {
        let mut registry = Registry::default();
        let metrics = Metrics::register(&mut registry);
        let render = |registry: &Registry| {
            let mut out = String::new();
            prometheus_client::encoding::text::encode(&mut out, registry).unwrap();
            out
        };
        let text = render(&registry);
        for expected in [
            r#"mcp_frontend_task_requests_total{method="tasks/get",outcome="ok"} 0"#,
            r#"mcp_frontend_task_requests_total{method="tasks/get",outcome="task_not_found"} 0"#,
        ] {
            assert!(text.contains(expected), "missing {expected:?} in\n{text}");
        }
        metrics.task_request("tasks/get", "task_not_found");
        metrics.tool_call("echo", "task");
        metrics.tool_call(OTHER_TOOL, "unknown_tool");
        let text = render(&registry);
        for expected in [
            r#"mcp_frontend_task_requests_total{method="tasks/get",outcome="task_not_found"} 1"#,
            r#"mcp_frontend_tool_calls_total{tool="echo",outcome="task"} 1"#,
            r#"mcp_frontend_tool_calls_total{tool="other",outcome="unknown_tool"} 1"#,
        ] {
            assert!(text.contains(expected), "missing {expected:?} in\n{text}");
        }
    }
}
