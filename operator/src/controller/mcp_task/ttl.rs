//! Task expiry. A task that has ended (completed, failed, cancelled) is deleted when its
//! expiry ([`McpTask::expires_at`]: `createdAt + ttlMs`) passes; its Job and pod go with it by
//! garbage collection. A task that still runs is never deleted: while it runs its expiry is
//! kept at least half an extension window ahead of now (`status.expiresAt`, which the front end
//! reports as a longer `ttlMs`, as MCP allows: the TTL "MAY change over the task's life"). So
//! a client can still read the outcome for that long after the task ends. The reconciler
//! requeues for exactly the next moment this asks for something, instead of polling.

use std::time::Duration;

use k8s_openapi::jiff::{SignedDuration, Timestamp};
use mcp_task_operator_crds::McpTask;

/// The longest extension window: a running task's expiry is moved to now + this (at most).
pub const MAX_EXTENSION: Duration = Duration::from_secs(60);
/// The shortest extension window, for tasks with a TTL shorter than this.
pub const MIN_EXTENSION: Duration = Duration::from_secs(10);

/// What TTL asks of a task at a given moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expiry {
    /// The task never expires (`ttlMs: null`), or has no creation time yet.
    Never,
    /// The task has ended and expired: delete it now.
    Now,
    /// The task still runs and its expiry is near: move it to this time.
    Extend(Timestamp),
    /// Nothing to do for this long: requeue for then.
    After(Duration),
}

/// How far ahead a running task's expiry is moved: its own TTL, within
/// [`MIN_EXTENSION`]..=[`MAX_EXTENSION`]. It is moved when less than half of this is left.
pub fn extension_window(task: &McpTask) -> Duration {
    let ttl = task
        .spec
        .ttl_ms
        .map_or(MAX_EXTENSION, |ms| Duration::from_millis(ms.unsigned_abs()));
    ttl.clamp(MIN_EXTENSION, MAX_EXTENSION)
}

/// Where `task` stands with respect to its TTL at `now`.
pub fn expiry(task: &McpTask, now: Timestamp) -> Expiry {
    let Some(at) = task.expires_at() else {
        return Expiry::Never;
    };
    let until = |t: Timestamp| Duration::try_from(t.duration_since(now)).ok();
    if task.is_terminal() {
        return match until(at) {
            Some(left) if !left.is_zero() => Expiry::After(left),
            // Negative or zero: the moment has passed.
            _ => Expiry::Now,
        };
    }
    let window = extension_window(task);
    let half = SignedDuration::try_from(window / 2).unwrap_or(SignedDuration::ZERO);
    let extend_at = at.checked_sub(half).unwrap_or(at);
    match until(extend_at) {
        Some(left) if !left.is_zero() => Expiry::After(left),
        _ => {
            let window = SignedDuration::try_from(window).unwrap_or(SignedDuration::ZERO);
            Expiry::Extend(now.checked_add(window).unwrap_or(now).max(at))
        }
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use mcp_task_operator_crds::{McpTaskStatus, TaskStatus};

    use super::*;
    use crate::fixtures::task;

    fn at(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    fn with_status(mut task: McpTask, status: TaskStatus, expires: Option<&str>) -> McpTask {
        task.status = Some(McpTaskStatus {
            status,
            expires_at: expires.map(|e| Time(at(e))),
            ..Default::default()
        });
        task
    }

    #[test]
    fn an_ended_task_expires_exactly_at_created_plus_ttl() {
        // created 12:00:00, ttlMs 3600000
        let task = with_status(task(), TaskStatus::Completed, None);
        assert_eq!(
            expiry(&task, at("2026-08-01T12:59:59.5Z")),
            Expiry::After(Duration::from_millis(500))
        );
        assert_eq!(expiry(&task, at("2026-08-01T13:00:00Z")), Expiry::Now);
        assert_eq!(expiry(&task, at("2026-08-02T00:00:00Z")), Expiry::Now);
    }

    #[test]
    fn an_ended_task_expires_at_its_extended_expiry() {
        let task = with_status(task(), TaskStatus::Failed, Some("2026-08-01T13:00:40Z"));
        assert_eq!(
            expiry(&task, at("2026-08-01T13:00:30Z")),
            Expiry::After(Duration::from_secs(10))
        );
        assert_eq!(expiry(&task, at("2026-08-01T13:00:40Z")), Expiry::Now);
    }

    #[test]
    fn a_running_task_is_extended_instead_of_deleted() {
        for status in [TaskStatus::Working, TaskStatus::InputRequired] {
            let running = with_status(task(), status, None);
            // One hour TTL: a 60 s window, moved when 30 s are left.
            assert_eq!(
                expiry(&running, at("2026-08-01T12:59:00Z")),
                Expiry::After(Duration::from_secs(30))
            );
            assert_eq!(
                expiry(&running, at("2026-08-01T12:59:30Z")),
                Expiry::Extend(at("2026-08-01T13:00:30Z"))
            );
            // Long past (the operator was away): still extended, never deleted.
            assert_eq!(
                expiry(&running, at("2026-08-01T15:00:00Z")),
                Expiry::Extend(at("2026-08-01T15:01:00Z"))
            );
        }
        // Before the operator's first status write, too.
        assert_eq!(
            expiry(&task(), at("2026-08-01T13:00:00Z")),
            Expiry::Extend(at("2026-08-01T13:01:00Z"))
        );
        // Once extended, the next move is due half a window before the new expiry.
        let extended = with_status(task(), TaskStatus::Working, Some("2026-08-01T13:00:30Z"));
        assert_eq!(
            expiry(&extended, at("2026-08-01T12:59:31Z")),
            Expiry::After(Duration::from_secs(29))
        );
    }

    #[test]
    fn a_short_ttl_has_a_window_of_its_own_length_but_at_least_ten_seconds() {
        let mut short = task();
        short.spec.ttl_ms = Some(15_000);
        assert_eq!(extension_window(&short), Duration::from_secs(15));
        // Expires 12:00:15; moved at 12:00:07.5 to now + 15 s.
        assert_eq!(
            expiry(&short, at("2026-08-01T12:00:07.5Z")),
            Expiry::Extend(at("2026-08-01T12:00:22.5Z"))
        );
        short.spec.ttl_ms = Some(1);
        assert_eq!(extension_window(&short), MIN_EXTENSION);
        assert_eq!(extension_window(&task()), MAX_EXTENSION);
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
        task.status = Some(McpTaskStatus {
            status: TaskStatus::Completed,
            created_at: Some(Time(at("2026-08-01T12:30:00Z"))),
            ..Default::default()
        });
        assert_eq!(
            expiry(&task, at("2026-08-01T13:00:00Z")),
            Expiry::After(Duration::from_secs(1800))
        );
    }

    /// A client that follows the advised `pollIntervalMs` (as the front end computes it)
    /// reads the outcome whenever a task with the default one-hour TTL ends: the operator
    /// extends the expiry while the task runs, writes the terminal status at the end, and
    /// neither it nor a front end counts the task expired before the client's next look
    /// plus the margin. Before retention followed the advice, a task ending at 59:59 expired
    /// at 60:00 and the client, told at 55:xx to wait 5.5 minutes, got "Task has expired".
    #[test]
    fn a_client_following_the_advice_reads_the_outcome_whenever_the_task_ends() {
        use mcp_task_operator_crds::wire::poll::{RETENTION_MARGIN_MS, advised_poll_interval_ms};

        use super::super::outcome::Outcome;
        use super::super::status::{StatusContext, next_status};

        let base = Some(2_000);
        let created = at("2026-08-01T12:00:00Z");
        let ms = |t: i64| Timestamp::from_millisecond(created.as_millisecond() + t).unwrap();
        for end in [
            5_000, 61_000, 600_000, 3_000_000, 3_540_000, 3_599_999, 3_601_000, 86_400_000,
        ] {
            let mut task = with_status(task(), TaskStatus::Working, None);
            task.spec.poll_interval_ms = base;
            // The operator keeps a running task's expiry ahead, looking each second.
            for second in 0..end / 1_000 {
                if let Expiry::Extend(to) = expiry(&task, ms(second * 1_000)) {
                    task.status.as_mut().unwrap().expires_at = Some(Time(to));
                }
            }
            // The client's last look while it ran, and the next one the advice asked for.
            let mut look = 0;
            let next_look = loop {
                let next = look + advised_poll_interval_ms(base, created, ms(look)).unwrap();
                if next >= end {
                    break next;
                }
                look = next;
            };
            let outcome = Outcome::Completed {
                message: None,
                result: serde_json::Map::new(),
            };
            let ctx = StatusContext {
                job_name: None,
                job_uid: None,
                created_at: Some(created),
                expires_at: task.expires_at(),
                poll_interval_ms: base,
                generation: Some(1),
                checkpoint: None,
                now: ms(end),
            };
            let status = next_status(task.status.as_ref(), &outcome, &ctx).expect("a write");
            task.status = Some(status);
            let late_look = ms(next_look + RETENTION_MARGIN_MS - 1);
            assert!(
                !task.is_expired(late_look),
                "ended at {end} ms, looked again at {next_look} ms: expired at {:?}",
                task.expires_at()
            );
            assert_ne!(expiry(&task, late_look), Expiry::Now, "ended at {end} ms");
            // And it does go: no later than the longest advice plus the margin past its end
            // (or its TTL).
            let bound = ms(end + 600_000 + RETENTION_MARGIN_MS).max(ms(3_600_000));
            assert_eq!(expiry(&task, bound), Expiry::Now, "ended at {end} ms");
        }
    }
}
