//! Prometheus metrics of the front end: MCP requests by method and HTTP status, and their
//! duration. Labels come from fixed lists, never from client-chosen strings.

use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

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

/// Every metric the front end exports.
#[derive(Debug)]
pub struct Metrics {
    requests: Family<RequestLabels, Counter>,
    duration: Family<MethodLabels, Histogram>,
}

impl Metrics {
    /// Creates the metrics and registers them under the `mcp_frontend` prefix.
    pub fn register(registry: &mut Registry) -> Self {
        let metrics = Self {
            requests: Family::default(),
            duration: Family::new_with_constructor(|| {
                Histogram::new(exponential_buckets(0.001, 2.0, 16))
            }),
        };
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
        metrics
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
}
