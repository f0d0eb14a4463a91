//! Prometheus metrics: reconcile runs, failures by category, reconcile duration, task status
//! transitions, failed tasks by reason, time from a cancel request to the end of the work, tasks
//! by status, open log streams, status write latency, tool-output warnings and leadership.
//!
//! Labels are fixed, low-cardinality strings (controller names, error categories, statuses),
//! never object names or `Debug` output.

use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// The MCP task statuses the tasks-by-status gauge always exports.
pub const TASK_STATUSES: [&str; 5] = [
    "working",
    "input_required",
    "completed",
    "failed",
    "cancelled",
];

/// Buckets of the cancel-to-stop histogram, in seconds: a tool that stops on the cancel file
/// takes about a second; one that ignores it runs to the grace period (30 s by default).
const CANCEL_STOP_BUCKETS: [f64; 11] = [
    0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 45.0, 60.0, 120.0, 300.0,
];

/// Labels naming a controller (`mcptask` or `mcptool`).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ControllerLabels {
    /// The controller.
    pub controller: &'static str,
}

/// Labels of a failed reconcile.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct FailureLabels {
    /// The controller.
    pub controller: &'static str,
    /// The error's [`crate::Error::category`].
    pub category: &'static str,
}

/// Labels of a task status transition or tool-output warning.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReasonLabels {
    /// A PascalCase reason (`Completed`, `MalformedMessage`...).
    pub reason: &'static str,
}

/// Labels of the tasks-by-status gauge.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StatusLabels {
    /// An MCP task status (`working`, `completed`...).
    pub status: &'static str,
}

/// Labels of a Kubernetes API request the operator made (`api_count.rs`).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ApiRequestLabels {
    /// `get`, `list`, `watch`, `create`, `patch`, `update`, `delete`...
    pub verb: &'static str,
    /// The resource (`pods`, `pods/log`, `mcptasks/status`...), or `other`.
    pub resource: &'static str,
}

/// Every metric the operator exports.
#[derive(Debug)]
pub struct Metrics {
    reconciliations: Family<ControllerLabels, Counter>,
    failures: Family<FailureLabels, Counter>,
    duration: Family<ControllerLabels, Histogram>,
    transitions: Family<ReasonLabels, Counter>,
    tool_warnings: Family<ReasonLabels, Counter>,
    task_failures: Family<ReasonLabels, Counter>,
    cancel_stop: Histogram,
    tasks: Family<StatusLabels, Gauge>,
    log_streams: Gauge,
    status_writes: Histogram,
    status_deferred: Counter,
    jobs_retired: Counter,
    events_dropped: Counter,
    leader: Gauge,
    api_requests: Family<ApiRequestLabels, Counter>,
}

impl Metrics {
    /// Creates the metrics and registers them in `registry` under the `mcp_operator` prefix.
    pub fn register(registry: &mut Registry) -> Self {
        let metrics = Self {
            reconciliations: Family::default(),
            failures: Family::default(),
            duration: Family::new_with_constructor(|| {
                Histogram::new(exponential_buckets(0.005, 2.0, 12))
            }),
            transitions: Family::default(),
            tool_warnings: Family::default(),
            task_failures: Family::default(),
            cancel_stop: Histogram::new(CANCEL_STOP_BUCKETS.iter().copied()),
            tasks: Family::default(),
            log_streams: Gauge::default(),
            status_writes: Histogram::new(exponential_buckets(0.002, 2.0, 12)),
            status_deferred: Counter::default(),
            jobs_retired: Counter::default(),
            events_dropped: Counter::default(),
            leader: Gauge::default(),
            api_requests: Family::default(),
        };
        let registry = registry.sub_registry_with_prefix("mcp_operator");
        registry.register(
            "reconciliations",
            "Reconciles run",
            metrics.reconciliations.clone(),
        );
        registry.register(
            "reconcile_failures",
            "Reconciles that failed, by error category",
            metrics.failures.clone(),
        );
        registry.register(
            "reconcile_duration_seconds",
            "Time spent in one reconcile",
            metrics.duration.clone(),
        );
        registry.register(
            "task_transitions",
            "Task status transitions, by Event reason",
            metrics.transitions.clone(),
        );
        registry.register(
            "task_failures",
            "Tasks that ended failed, by reason (a FailureReason, or ToolError for the tool's own error)",
            metrics.task_failures.clone(),
        );
        registry.register(
            "cancel_stop_seconds",
            "Time from a task's cancel request to its terminal status, that is until its work stopped",
            metrics.cancel_stop.clone(),
        );
        registry.register(
            "tool_output_warnings",
            "Malformed or misplaced messages in tool output, by reason",
            metrics.tool_warnings.clone(),
        );
        registry.register(
            "tasks",
            "McpTasks in the watched namespaces, by status (from the task cache, every sweep)",
            metrics.tasks.clone(),
        );
        registry.register(
            "log_streams_open",
            "Tool container log streams being followed",
            metrics.log_streams.clone(),
        );
        registry.register(
            "status_write_duration_seconds",
            "Time one McpTask status write (server-side apply) took",
            metrics.status_writes.clone(),
        );
        registry.register(
            "status_writes_deferred",
            "Progress status writes held for a later slot by the status-write budget",
            metrics.status_deferred.clone(),
        );
        registry.register(
            "finished_jobs_deleted",
            "Jobs of ended tasks deleted after the finished-Job retention",
            metrics.jobs_retired.clone(),
        );
        registry.register(
            "events_dropped",
            "Events not published because the queue of Events to send was full",
            metrics.events_dropped.clone(),
        );
        registry.register(
            "leader",
            "1 while this replica holds the leader Lease",
            metrics.leader.clone(),
        );
        registry.register(
            "api_requests",
            "Kubernetes API requests this process made, by verb and resource (watches and log \
             streams counted when opened)",
            metrics.api_requests.clone(),
        );
        metrics
    }

    /// Counts one Kubernetes API request.
    pub fn api_request(&self, verb: &'static str, resource: &'static str) {
        self.api_requests
            .get_or_create(&ApiRequestLabels { verb, resource })
            .inc();
    }

    /// Counts one reconcile of `controller` that took `elapsed`.
    pub fn reconciled(&self, controller: &'static str, elapsed: Duration) {
        let labels = ControllerLabels { controller };
        self.reconciliations.get_or_create(&labels).inc();
        self.duration
            .get_or_create(&labels)
            .observe(elapsed.as_secs_f64());
    }

    /// Counts one failed reconcile of `controller` with an error of `category`.
    pub fn failed(&self, controller: &'static str, category: &'static str) {
        self.failures
            .get_or_create(&FailureLabels {
                controller,
                category,
            })
            .inc();
    }

    /// Counts one task status transition, by its Event reason.
    pub fn transition(&self, reason: &'static str) {
        self.transitions
            .get_or_create(&ReasonLabels { reason })
            .inc();
    }

    /// Counts one warning about a tool's output, by its reason.
    pub fn tool_warning(&self, reason: &'static str) {
        self.tool_warnings
            .get_or_create(&ReasonLabels { reason })
            .inc();
    }

    /// Counts one task that ended `failed`, by its reason label (see
    /// [`crate::controller::mcp_task::signals::failure_label`]).
    pub fn task_failed(&self, reason: &'static str) {
        self.task_failures
            .get_or_create(&ReasonLabels { reason })
            .inc();
    }

    /// Records how long a cancelled task's work went on after the cancel request.
    pub fn cancel_stopped(&self, elapsed: Duration) {
        self.cancel_stop.observe(elapsed.as_secs_f64());
    }

    /// Sets the number of tasks in each status. Every MCP status is exported, a status absent
    /// from `counts` as 0, so a dashboard sees the series fall to zero instead of vanishing.
    pub fn set_tasks_by_status(&self, counts: &[(&'static str, i64)]) {
        for status in TASK_STATUSES {
            let n = counts
                .iter()
                .find(|(s, _)| *s == status)
                .map_or(0, |(_, n)| *n);
            self.tasks.get_or_create(&StatusLabels { status }).set(n);
        }
    }

    /// Sets the number of log streams being followed.
    pub fn set_log_streams(&self, open: usize) {
        self.log_streams
            .set(i64::try_from(open).unwrap_or(i64::MAX));
    }

    /// Records how long one status write took.
    pub fn status_written(&self, elapsed: Duration) {
        self.status_writes.observe(elapsed.as_secs_f64());
    }

    /// Counts a progress write the status-write budget held for a later slot.
    pub fn status_write_deferred(&self) {
        self.status_deferred.inc();
    }

    /// Counts a finished task's Job deleted after the retention.
    pub fn finished_job_deleted(&self) {
        self.jobs_retired.inc();
    }

    /// Counts an Event dropped because the queue of Events to send was full (`events.rs`).
    pub fn event_dropped(&self) {
        self.events_dropped.inc();
    }

    /// Records whether this replica is the leader.
    pub fn set_leader(&self, leader: bool) {
        self.leader.set(i64::from(leader));
    }
}

/// Renders `registry` in the Prometheus text format.
pub fn render(registry: &Registry) -> Result<String, std::fmt::Error> {
    let mut out = String::new();
    prometheus_client::encoding::text::encode(&mut out, registry)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_render_with_the_prefix_and_fixed_labels() {
        let mut registry = Registry::default();
        let metrics = Metrics::register(&mut registry);
        metrics.reconciled("mcptask", Duration::from_millis(12));
        metrics.failed("mcptask", "kube_apply");
        metrics.transition("Completed");
        metrics.tool_warning("MalformedMessage");
        metrics.set_leader(true);
        metrics.set_tasks_by_status(&[("working", 3), ("completed", 1)]);
        metrics.set_tasks_by_status(&[("working", 2)]);
        metrics.set_log_streams(2);
        metrics.status_written(Duration::from_millis(7));
        metrics.task_failed("ImagePullFailed");
        metrics.cancel_stopped(Duration::from_millis(1500));
        let text = render(&registry).unwrap();
        for expected in [
            "mcp_operator_reconciliations_total{controller=\"mcptask\"} 1",
            "mcp_operator_reconcile_failures_total{controller=\"mcptask\",category=\"kube_apply\"} 1",
            "mcp_operator_reconcile_duration_seconds_count{controller=\"mcptask\"} 1",
            "mcp_operator_task_transitions_total{reason=\"Completed\"} 1",
            "mcp_operator_tool_output_warnings_total{reason=\"MalformedMessage\"} 1",
            "mcp_operator_leader 1",
            "mcp_operator_tasks{status=\"working\"} 2",
            "mcp_operator_log_streams_open 2",
            "mcp_operator_status_write_duration_seconds_count 1",
            "mcp_operator_task_failures_total{reason=\"ImagePullFailed\"} 1",
            "mcp_operator_cancel_stop_seconds_bucket{le=\"1.0\"} 0",
            "mcp_operator_cancel_stop_seconds_bucket{le=\"2.0\"} 1",
            "mcp_operator_cancel_stop_seconds_count 1",
            // A status no task has any more falls to zero instead of vanishing.
            "mcp_operator_tasks{status=\"completed\"} 0",
            "mcp_operator_tasks{status=\"cancelled\"} 0",
        ] {
            assert!(text.contains(expected), "missing {expected:?} in\n{text}");
        }
    }
}
