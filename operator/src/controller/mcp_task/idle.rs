//! The idle timeout (`McpTool.spec.idleTimeoutSeconds`): a running tool that prints nothing for
//! that long fails with reason `IdleTimeout`, and its Job is stopped.
//!
//! Pure: how long the tool has been silent (the log follower's count) in, a decision out.

use std::time::Duration;

use super::observe::{FailureReason, Workload};
use super::outcome::{Decision, Outcome, SideEffect};

/// The decision for a task whose tool has printed nothing for `idle` (`None`: no follower
/// yet), under the tool's `limit` in seconds: a failure once `idle` reaches it, else `None`
/// and how long until it would (to look again then).
pub fn check(
    workload: &Workload,
    idle: Option<Duration>,
    limit: Option<i64>,
) -> Result<Option<Duration>, Decision> {
    let (Workload::Running, Some(idle), Some(limit)) = (workload, idle, limit) else {
        return Ok(None);
    };
    let limit = Duration::from_secs(u64::try_from(limit).unwrap_or(0));
    match limit.checked_sub(idle).filter(|left| !left.is_zero()) {
        Some(left) => Ok(Some(left)),
        None => {
            let detail = format!("no output for {}s", limit.as_secs());
            let failed = Outcome::failure(FailureReason::IdleTimeout, Some(detail));
            Err(Decision::with(failed, SideEffect::DeleteJob))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_silent_running_tool_fails_at_its_limit_and_its_job_is_stopped() {
        let quiet = Duration::from_secs(5);
        let Err(decision) = check(&Workload::Running, Some(quiet), Some(5)) else {
            panic!("not timed out");
        };
        assert_eq!(decision.side_effect, Some(SideEffect::DeleteJob));
        let Outcome::Failed { error, .. } = &decision.outcome else {
            panic!("{decision:?}");
        };
        assert_eq!(error.data.as_ref().unwrap()["reason"], "IdleTimeout");
    }

    #[test]
    fn before_the_limit_it_says_when_to_look_again() {
        let left = check(&Workload::Running, Some(Duration::from_secs(2)), Some(5));
        assert_eq!(left.unwrap(), Some(Duration::from_secs(3)));
    }

    #[test]
    fn no_limit_no_follower_or_no_running_tool_never_times_out() {
        let long = Some(Duration::from_secs(1000));
        assert_eq!(check(&Workload::Running, long, None).unwrap(), None);
        assert_eq!(check(&Workload::Running, None, Some(1)).unwrap(), None);
        let exited = Workload::Exited { exit_code: 0 };
        assert_eq!(check(&exited, long, Some(1)).unwrap(), None);
    }
}
