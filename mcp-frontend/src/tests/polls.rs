//! `tasks/get` limits: per task at the advertised `pollIntervalMs`, per caller for IDs that
//! are not the caller's tasks.

use std::time::Duration;

use super::*;

/// A per-caller budget of 10 polls a second (bursts of 20) and 3 polls at once per task.
const LIMITS: &[(&str, &str)] = &[("POLL_RATE_PER_SECOND", "10"), ("POLL_BURST_PER_TASK", "3")];

#[tokio::test(start_paused = true)]
async fn a_caller_polling_200_tasks_at_their_interval_is_never_refused() {
    let (state, store) = test_state_with(LIMITS);
    let ids: Vec<String> = (0..200)
        .map(|_| stored_task(&store, anonymous(), working()))
        .collect();
    for round in 0..5 {
        for id in &ids {
            let (_, body) = get_task(&state, id).await;
            assert_eq!(
                body["result"]["pollIntervalMs"], 2000,
                "round {round}: {body}"
            );
        }
        tokio::time::advance(Duration::from_millis(2000)).await;
    }
}

#[tokio::test(start_paused = true)]
async fn a_caller_hammering_one_task_is_refused_until_its_interval_passes() {
    let (state, store) = test_state_with(LIMITS);
    let id = stored_task(&store, anonymous(), working());
    for _ in 0..3 {
        let (_, body) = get_task(&state, &id).await;
        assert_eq!(body["result"]["taskId"], id.as_str(), "{body}");
    }
    let (_, body) = get_task(&state, &id).await;
    assert_eq!(body["error"]["code"], -31001, "{body}");
    assert_eq!(body["error"]["data"]["retryAfterMs"], 2000);
    assert_eq!(body["error"]["data"]["pollIntervalMs"], 2000);
    assert_eq!(
        body["error"]["message"],
        format!(
            "rate limited: task {id} is polled faster than its pollIntervalMs of 2000 ms allows (bursts of 3); retry in 2000 ms"
        )
    );
    // Another task of the same caller has its own budget.
    let other = stored_task(&store, anonymous(), working());
    assert_eq!(
        get_task(&state, &other).await.1["result"]["status"],
        "working"
    );
    tokio::time::advance(Duration::from_millis(2000)).await;
    assert_eq!(
        get_task(&state, &id).await.1["result"]["taskId"],
        id.as_str()
    );
}

#[tokio::test(start_paused = true)]
async fn unknown_ids_spend_the_callers_budget_and_then_cost_no_lookup() {
    let (state, store) = test_state_with(&[("POLL_RATE_PER_SECOND", "1")]);
    let mine = stored_task(&store, anonymous(), working());
    // Bursts of twice the rate: two lookups of unknown IDs, each an API read.
    for _ in 0..2 {
        let (_, body) = get_task(&state, &task_id::generate()).await;
        assert_eq!(body["error"]["code"], -32602, "{body}");
    }
    assert_eq!(store.api_reads(), 2);
    let (_, body) = get_task(&state, &task_id::generate()).await;
    assert_eq!(body["error"]["code"], -31001, "{body}");
    assert_eq!(body["error"]["data"]["retryAfterMs"], 1000);
    assert_eq!(store.api_reads(), 2, "refused before any lookup");
    // Polls of the caller's own tasks do not spend it.
    tokio::time::advance(Duration::from_millis(1000)).await;
    for _ in 0..5 {
        assert_eq!(
            get_task(&state, &mine).await.1["result"]["status"],
            "working"
        );
    }
}
