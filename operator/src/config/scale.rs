//! The settings that bound the operator's work at scale: status writes, finished Jobs kept,
//! log followers started at once, followed logs per connection.

use std::time::Duration;

use super::{ConfigError, MAX_GRACE_SECONDS, parse, setting};
use crate::controller::mcp_task::budget::MAX_WRITES_PER_SECOND;

/// Most log followers [`Scale::max_follower_starts`] may allow at once.
pub const MAX_FOLLOWER_STARTS: usize = 10_000;
/// Most McpTask reconciles [`Scale::max_reconciles`] may allow in flight at once.
pub const MAX_RECONCILES: u16 = 1024;
/// Most followed logs [`Scale::log_streams_per_connection`] may put on one connection.
pub const MAX_LOG_STREAMS_PER_CONNECTION: u16 = 1000;

/// Bounds on the operator's work at scale.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scale {
    /// Ceiling on progress status writes of all tasks together, per second
    /// (`MCP_OPERATOR_STATUS_WRITES_PER_SECOND`, default 100, 1 to 100000). Status changes
    /// (`input_required`, terminal) are never held back but count against it.
    pub status_writes_per_second: u32,
    /// How long a finished task's Job (and so its pod and `kubectl logs job/<task>`) is kept
    /// after the task ended (`MCP_OPERATOR_FINISHED_JOB_RETENTION_SECONDS`, default 300, 0 to
    /// 86400). The task keeps its result until its own TTL.
    pub finished_job_retention: Duration,
    /// Most log followers opening their stream and replaying the log up to the task's
    /// checkpoint at once (`MCP_OPERATOR_MAX_FOLLOWER_STARTS`, default 32, 1 to 10000): after a
    /// failover the new leader catches up with the running tasks' logs this many at a time.
    pub max_follower_starts: usize,
    /// Most McpTask reconciles in flight at once (`MCP_OPERATOR_MAX_RECONCILES`, default 32, 1
    /// to 1024). Each is a few short API calls, so with the API server's latency this bounds
    /// how fast new tasks get their Jobs; each in flight holds its task and a few KiB.
    pub max_reconciles: u16,
    /// Most followed logs on one HTTP/2 connection to the API server
    /// (`MCP_OPERATOR_LOG_STREAMS_PER_CONNECTION`, default 80, 0 to 1000; `log_clients.rs`).
    /// Keep it below the API server's `--http2-max-streams-per-connection` (100 by default):
    /// streams past the server's limit wait for a free one. 0 reads each log over its own
    /// HTTP/1.1 connection, for an API server (or a proxy in front of it) without HTTP/2.
    pub log_streams_per_connection: u16,
}

impl Default for Scale {
    fn default() -> Self {
        Self::from_lookup(|_| None).unwrap_or(Self {
            status_writes_per_second: 100,
            finished_job_retention: Duration::from_secs(300),
            max_follower_starts: 32,
            max_reconciles: 32,
            log_streams_per_connection: 80,
        })
    }
}

impl Scale {
    /// Reads the settings through `lookup` (a variable's value by full name).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let var = |suffix: &str| setting(&lookup, suffix);
        let ranged = |suffix: &str, default: &str, max: u64, expected: &'static str| {
            let (name, value) = var(suffix);
            let n: u64 = parse((name.clone(), value), default, expected)?;
            let min = u64::from(!matches!(
                suffix,
                "FINISHED_JOB_RETENTION_SECONDS" | "LOG_STREAMS_PER_CONNECTION"
            ));
            if n < min || n > max {
                return Err(ConfigError {
                    name,
                    value: n.to_string(),
                    expected,
                });
            }
            Ok(n)
        };
        let writes = ranged(
            "STATUS_WRITES_PER_SECOND",
            "100",
            u64::from(MAX_WRITES_PER_SECOND),
            "a number of writes per second from 1 to 100000",
        )?;
        let retention = ranged(
            "FINISHED_JOB_RETENTION_SECONDS",
            "300",
            MAX_GRACE_SECONDS,
            "a number of seconds from 0 to 86400",
        )?;
        let starts = ranged(
            "MAX_FOLLOWER_STARTS",
            "32",
            MAX_FOLLOWER_STARTS as u64,
            "a number of log followers from 1 to 10000",
        )?;
        let reconciles = ranged(
            "MAX_RECONCILES",
            "32",
            u64::from(MAX_RECONCILES),
            "a number of reconciles from 1 to 1024",
        )?;
        let per_connection = ranged(
            "LOG_STREAMS_PER_CONNECTION",
            "80",
            u64::from(MAX_LOG_STREAMS_PER_CONNECTION),
            "a number of log streams from 0 to 1000",
        )?;
        Ok(Self {
            status_writes_per_second: u32::try_from(writes).unwrap_or(MAX_WRITES_PER_SECOND),
            finished_job_retention: Duration::from_secs(retention),
            max_follower_starts: usize::try_from(starts).unwrap_or(MAX_FOLLOWER_STARTS),
            max_reconciles: u16::try_from(reconciles).unwrap_or(MAX_RECONCILES),
            log_streams_per_connection: u16::try_from(per_connection)
                .unwrap_or(MAX_LOG_STREAMS_PER_CONNECTION),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_limits_named_in_the_error() {
        let d = Scale::from_lookup(|_| None).unwrap();
        assert_eq!(d.status_writes_per_second, 100);
        assert_eq!(d.finished_job_retention, Duration::from_secs(300));
        assert_eq!(d.max_follower_starts, 32);
        assert_eq!(d.max_reconciles, 32);
        assert_eq!(d.log_streams_per_connection, 80);
        let set = |k: &'static str, v: &'static str| {
            Scale::from_lookup(move |n| (n == k).then(|| v.to_owned()))
        };
        let zero = set("MCP_OPERATOR_FINISHED_JOB_RETENTION_SECONDS", "0").unwrap();
        assert_eq!(zero.finished_job_retention, Duration::ZERO);
        let err = set("MCP_OPERATOR_STATUS_WRITES_PER_SECOND", "0").unwrap_err();
        assert_eq!(err.name, "MCP_OPERATOR_STATUS_WRITES_PER_SECOND");
        assert!(err.to_string().contains("from 1 to 100000"), "{err}");
        let err = set("MCP_OPERATOR_MAX_FOLLOWER_STARTS", "100001").unwrap_err();
        assert!(err.to_string().contains("from 1 to 10000"), "{err}");
        let err = set("MCP_OPERATOR_MAX_RECONCILES", "1025").unwrap_err();
        assert!(err.to_string().contains("from 1 to 1024"), "{err}");
        assert_eq!(
            set("MCP_OPERATOR_MAX_RECONCILES", "8")
                .unwrap()
                .max_reconciles,
            8
        );
        let http1 = set("MCP_OPERATOR_LOG_STREAMS_PER_CONNECTION", "0").unwrap();
        assert_eq!(http1.log_streams_per_connection, 0);
        let err = set("MCP_OPERATOR_LOG_STREAMS_PER_CONNECTION", "1001").unwrap_err();
        assert!(err.to_string().contains("from 0 to 1000"), "{err}");
        let err = set("MCP_OPERATOR_FINISHED_JOB_RETENTION_SECONDS", "86401").unwrap_err();
        assert!(err.to_string().contains("0 to 86400"), "{err}");
    }
}
