//! The task's record of its one Job, in two steps that survive a failover between them.
//!
//! 1. Before the Job is created, `status.jobName` is written, and only if the task is as read
//!    (a conditional patch), so no stale copy of the task ever creates a Job.
//! 2. Once the Job exists, the `JobCreated` condition confirms it, carrying the Job's UID, in
//!    the next status write (at once, never coalesced).
//!
//! A Job that is recorded and confirmed but gone was deleted by someone: the task fails
//! `JobDeleted` and never gets a second Job. A Job that is recorded but not confirmed and does
//! not exist may never have been created (the leader that recorded it ended before its POST):
//! it is created, under the same deterministic name; a Job of the name that appears meanwhile
//! is used only if this task's UID controls it. So exactly one Job of the task exists at any
//! time.
//!
//! A condition, not a new status field: the CRD's schema stays as it is, so an API server whose
//! CRD is older keeps the record instead of pruning it.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;
use mcp_task_operator_crds::McpTaskStatus;

/// Type of the status condition that confirms the task's Job was created. Its message reads
/// `Job <name> created (uid <uid>)`.
pub const JOB_CREATED_CONDITION: &str = "JobCreated";

/// Whether `status` records a Job (`status.jobName`).
pub fn recorded(status: Option<&McpTaskStatus>) -> bool {
    status.is_some_and(|s| s.job_name.is_some())
}

/// The name of the task's Job: the one `status` records (a warm Job the task claimed has a
/// name of its own), else the task's own name (a Job made for the task is named after it).
pub fn job_name<'a>(status: Option<&'a McpTaskStatus>, task_name: &'a str) -> &'a str {
    status
        .and_then(|s| s.job_name.as_deref())
        .unwrap_or(task_name)
}

/// Whether `status` confirms that the task's Job was created (the [`JOB_CREATED_CONDITION`]).
pub fn confirmed(status: Option<&McpTaskStatus>) -> bool {
    status.is_some_and(|s| {
        s.conditions
            .iter()
            .any(|c| c.type_ == JOB_CREATED_CONDITION && c.status == "True")
    })
}

/// What the task's record says of a Job that does not exist (a direct read found none).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Missing {
    /// Never recorded: record it, then create it.
    NotRecorded,
    /// Recorded, never confirmed: it may never have been created, create it.
    Unconfirmed,
    /// Recorded and confirmed: someone deleted it.
    Deleted,
}

/// What `status` says of the task's Job, which does not exist.
pub fn missing(status: Option<&McpTaskStatus>) -> Missing {
    match (recorded(status), confirmed(status)) {
        (false, _) => Missing::NotRecorded,
        (true, false) => Missing::Unconfirmed,
        (true, true) => Missing::Deleted,
    }
}

/// Puts the confirmation of the Job `name` with `uid` into `conditions`; one already there for
/// the same UID is kept as it is (its time stays the first confirmation's).
pub fn confirm(conditions: &mut Vec<Condition>, name: &str, uid: &str, now: Timestamp) {
    let message = format!("Job {name} created (uid {uid})");
    let existing = conditions
        .iter()
        .position(|c| c.type_ == JOB_CREATED_CONDITION);
    if let Some(i) = existing
        && conditions[i].message == message
        && conditions[i].status == "True"
    {
        return;
    }
    let condition = Condition {
        type_: JOB_CREATED_CONDITION.to_owned(),
        status: "True".to_owned(),
        reason: "Created".to_owned(),
        message,
        last_transition_time: Time(now),
        observed_generation: None,
    };
    match existing {
        Some(i) => conditions[i] = condition,
        None => conditions.push(condition),
    }
}

/// Whether `next` confirms the Job where `current` did not: such a write goes out at once.
pub fn newly_confirmed(current: Option<&McpTaskStatus>, next: &McpTaskStatus) -> bool {
    !confirmed(current) && confirmed(Some(next))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    fn status(job_name: Option<&str>, conditions: Vec<Condition>) -> McpTaskStatus {
        McpTaskStatus {
            job_name: job_name.map(Into::into),
            conditions,
            ..McpTaskStatus::default()
        }
    }

    #[test]
    fn a_missing_job_is_created_unless_its_creation_was_confirmed() {
        assert_eq!(missing(None), Missing::NotRecorded);
        assert_eq!(missing(Some(&status(None, vec![]))), Missing::NotRecorded);
        // The half-done record a dying leader leaves: recorded, never confirmed.
        let half = status(Some("t1"), vec![]);
        assert_eq!(missing(Some(&half)), Missing::Unconfirmed);
        let mut conditions = vec![];
        confirm(&mut conditions, "t1", "uid-1", at("2026-08-01T12:00:00Z"));
        let done = status(Some("t1"), conditions);
        assert_eq!(missing(Some(&done)), Missing::Deleted);
        assert!(newly_confirmed(Some(&half), &done));
        assert!(!newly_confirmed(Some(&done), &done));
    }

    #[test]
    fn a_confirmation_is_written_once_per_job_uid() {
        let mut conditions = vec![];
        confirm(&mut conditions, "t1", "uid-1", at("2026-08-01T12:00:00Z"));
        let first = conditions.clone();
        confirm(&mut conditions, "t1", "uid-1", at("2026-08-01T12:05:00Z"));
        assert_eq!(conditions, first, "the same Job changes nothing");
        assert_eq!(conditions[0].message, "Job t1 created (uid uid-1)");
        confirm(&mut conditions, "t1", "uid-2", at("2026-08-01T12:06:00Z"));
        assert_eq!(conditions.len(), 1);
        assert_eq!(conditions[0].message, "Job t1 created (uid uid-2)");
        assert_eq!(
            conditions[0].last_transition_time,
            Time(at("2026-08-01T12:06:00Z"))
        );
    }
}
