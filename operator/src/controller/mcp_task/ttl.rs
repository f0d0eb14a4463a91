//! Task expiry: when `createdAt + ttlMs` passes, the task is deleted (its Job and pod go with
//! it by garbage collection). The reconciler requeues for exactly that moment instead of polling.

use std::time::Duration;

use k8s_openapi::jiff::Timestamp;
use mcp_task_operator_crds::McpTask;

/// What TTL asks of a task at a given moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expiry {
    /// The task never expires (`ttlMs: null`), or has no creation time yet.
    Never,
    /// The task has expired: delete it now.
    Now,
    /// The task expires after this long: requeue for then.
    After(Duration),
}

/// Where `task` stands with respect to its TTL at `now`.
pub fn expiry(task: &McpTask, now: Timestamp) -> Expiry {
    let Some(at) = task.expires_at() else {
        return Expiry::Never;
    };
    match Duration::try_from(at.duration_since(now)) {
        Ok(left) if !left.is_zero() => Expiry::After(left),
        // Negative or zero: the moment has passed.
        _ => Expiry::Now,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::task;

    fn at(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    #[test]
    fn task_expires_exactly_at_created_plus_ttl() {
        let task = task(); // created 12:00:00, ttlMs 3600000
        assert_eq!(
            expiry(&task, at("2026-08-01T12:59:59.5Z")),
            Expiry::After(Duration::from_millis(500))
        );
        assert_eq!(expiry(&task, at("2026-08-01T13:00:00Z")), Expiry::Now);
        assert_eq!(expiry(&task, at("2026-08-02T00:00:00Z")), Expiry::Now);
    }

    #[test]
    fn null_ttl_never_expires() {
        let mut task = task();
        task.spec.ttl_ms = None;
        assert_eq!(expiry(&task, at("2100-01-01T00:00:00Z")), Expiry::Never);
    }

    #[test]
    fn status_created_at_is_the_reference_when_set() {
        let mut task = task();
        task.status = Some(mcp_task_operator_crds::McpTaskStatus {
            created_at: Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(at(
                "2026-08-01T12:30:00Z",
            ))),
            ..Default::default()
        });
        assert_eq!(
            expiry(&task, at("2026-08-01T13:00:00Z")),
            Expiry::After(Duration::from_secs(1800))
        );
    }
}
