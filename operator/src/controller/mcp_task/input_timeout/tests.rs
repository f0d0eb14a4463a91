//! The input timeout: an unanswered input round fails `InputTimeout` and stops the Job; the
//! round's start is kept in the status and starts again with a new round.

use k8s_openapi::jiff::Timestamp;
use serde_json::json;

use super::*;

const HOUR: Duration = Duration::from_secs(3600);

fn at(time: &str) -> Timestamp {
    time.parse().unwrap()
}

fn requests(keys: &[&str]) -> BTreeMap<String, Value> {
    keys.iter()
        .map(|k| {
            let request = json!({"method": "elicitation/create", "params": {"message": k}});
            ((*k).to_owned(), request)
        })
        .collect()
}

fn asking(keys: &[&str]) -> Decision {
    Decision::just(Outcome::InputRequired {
        message: "Waiting for input".to_owned(),
        requests: requests(keys),
    })
}

/// The status of a task that asked `keys` at `since`, as [`record`] writes it.
fn waiting_since_time(keys: &[&str], since: &str) -> McpTaskStatus {
    let mut status = McpTaskStatus {
        status: TaskStatus::InputRequired,
        input_requests: Some(requests(keys)),
        ..Default::default()
    };
    let outcome = asking(keys).outcome;
    record(&mut status.conditions, None, &outcome, at(since));
    status
}

#[test]
fn an_unanswered_round_fails_input_timeout_and_stops_the_job() {
    let status = waiting_since_time(&["confirm"], "2026-08-01T12:00:00Z");
    let (early, wake) = check(
        asking(&["confirm"]),
        Some(&status),
        HOUR,
        at("2026-08-01T12:59:00Z"),
    );
    assert_eq!(early, asking(&["confirm"]));
    assert_eq!(wake, Some(Duration::from_secs(60)));
    let (late, wake) = check(
        asking(&["confirm"]),
        Some(&status),
        HOUR,
        at("2026-08-01T13:00:00Z"),
    );
    assert_eq!(wake, None);
    assert_eq!(late.side_effect, Some(SideEffect::DeleteJob));
    let Outcome::Failed { error, message } = &late.outcome else {
        panic!("{late:?}");
    };
    let data = error.data.as_ref().unwrap();
    assert_eq!(data["reason"], "InputTimeout");
    assert_eq!(data["detail"], "no answer to confirm for 3600s");
    assert!(message.contains("input timeout"), "{message}");
}

#[test]
fn a_new_question_or_a_partial_answer_starts_the_count_again() {
    let status = waiting_since_time(&["a", "b"], "2026-08-01T12:00:00Z");
    let now = at("2026-08-01T14:00:00Z");
    for keys in [&["a", "b", "c"][..], &["b"][..]] {
        let (decision, wake) = check(asking(keys), Some(&status), HOUR, now);
        assert_eq!(decision, asking(keys), "{keys:?}");
        assert_eq!(wake, Some(HOUR), "{keys:?}");
    }
    // A task that was working (or has no status yet) begins to wait now.
    let (_, wake) = check(asking(&["a"]), None, HOUR, now);
    assert_eq!(wake, Some(HOUR));
}

#[test]
fn the_status_keeps_when_the_round_was_asked_and_drops_it_once_answered() {
    let first = waiting_since_time(&["a"], "2026-08-01T12:00:00Z");
    let since = |s: &McpTaskStatus| {
        s.conditions
            .iter()
            .find(|c| c.type_ == AWAITING_INPUT)
            .map(|c| c.last_transition_time.0)
    };
    assert_eq!(since(&first), Some(at("2026-08-01T12:00:00Z")));
    assert_eq!(
        waiting_since(Some(&first), &requests(&["a"])),
        since(&first)
    );
    // Written again later with the same requests: the time stays.
    let mut again = first.clone();
    let outcome = asking(&["a"]).outcome;
    record(
        &mut again.conditions,
        Some(&first),
        &outcome,
        at("2026-08-01T12:30:00Z"),
    );
    assert_eq!(since(&again), Some(at("2026-08-01T12:00:00Z")));
    // Another round: a new time.
    let mut next = first.clone();
    let outcome = asking(&["b"]).outcome;
    record(
        &mut next.conditions,
        Some(&first),
        &outcome,
        at("2026-08-01T12:30:00Z"),
    );
    assert_eq!(since(&next), Some(at("2026-08-01T12:30:00Z")));
    // Answered (working again): the condition goes.
    let mut answered = first.clone();
    let working = Outcome::Working {
        message: "Running".to_owned(),
    };
    record(
        &mut answered.conditions,
        Some(&first),
        &working,
        at("2026-08-01T12:30:00Z"),
    );
    assert_eq!(since(&answered), None);
}

#[test]
fn a_working_decision_is_not_under_the_input_timeout() {
    let working = Decision::just(Outcome::Working {
        message: "Running".to_owned(),
    });
    let status = waiting_since_time(&["a"], "2026-08-01T12:00:00Z");
    let (decision, wake) = check(
        working.clone(),
        Some(&status),
        HOUR,
        at("2026-08-02T12:00:00Z"),
    );
    assert_eq!(decision, working);
    assert_eq!(wake, None);
}
