//! [`admit`]: the queue order and the slots, from tasks alone.

use std::collections::HashSet;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use mcp_task_operator_crds::{CANCEL_REQUESTED_ANNOTATION, McpTaskStatus, TaskStatus};

use super::*;
use crate::fixtures::task;

/// A task of the fixture's tool named `name`, created at `12:00:<second>`.
fn at(name: &str, second: u32) -> McpTask {
    let mut t = task();
    t.metadata.name = Some(name.to_owned());
    t.metadata.uid = Some(format!("uid-{name}"));
    let created = format!("2026-08-01T12:00:{second:02}Z").parse().unwrap();
    t.metadata.creation_timestamp = Some(Time(created));
    t
}

/// Whether `task` may get its Job among `tasks` (limit `limit`), no task admitted before
/// being pending.
fn admit_among(task: &McpTask, limit: usize, tasks: &[McpTask]) -> Admission {
    admit(task, limit, tasks, &HashSet::new())
}

fn running(mut t: McpTask) -> McpTask {
    t.status = Some(McpTaskStatus {
        job_name: t.metadata.name.clone(),
        ..McpTaskStatus::default()
    });
    t
}

fn ended(mut t: McpTask) -> McpTask {
    t = running(t);
    t.status.as_mut().unwrap().status = TaskStatus::Completed;
    t
}

#[test]
fn the_first_tasks_up_to_the_limit_are_admitted_the_rest_queue_in_creation_order() {
    let (a, b, c) = (at("c-first", 1), at("a-second", 2), at("b-third", 3));
    let all = [a.clone(), b.clone(), c.clone()];
    let cases = [
        (&a, 1, Admission::Admit),
        (&b, 1, Admission::Queued { ahead: 1 }),
        (&c, 1, Admission::Queued { ahead: 2 }),
        (&b, 2, Admission::Admit),
        (&c, 2, Admission::Queued { ahead: 2 }),
    ];
    for (task, limit, expected) in cases {
        let name = task.name_any();
        assert_eq!(
            admit_among(task, limit, &all),
            expected,
            "{name} of {limit}"
        );
    }
}

#[test]
fn the_same_second_orders_by_name() {
    let (x, y) = (at("xx", 5), at("yy", 5));
    let all = [y.clone(), x.clone()];
    assert_eq!(admit_among(&x, 1, &all), Admission::Admit);
    assert_eq!(admit_among(&y, 1, &all), Admission::Queued { ahead: 1 });
}

#[test]
fn a_running_task_holds_its_slot_until_it_ends() {
    let (a, b) = (at("a", 1), at("b", 2));
    let holding = [running(a.clone()), b.clone()];
    assert_eq!(admit_among(&b, 1, &holding), Admission::Queued { ahead: 0 });
    let freed = [ended(a), b.clone()];
    assert_eq!(admit_among(&b, 1, &freed), Admission::Admit);
}

#[test]
fn a_later_running_task_holds_a_slot_too() {
    // Admitted under a larger limit, say: it still counts against the new one.
    let (a, b) = (at("a", 1), at("b", 2));
    let all = [a.clone(), running(b)];
    assert_eq!(admit_among(&a, 1, &all), Admission::Queued { ahead: 0 });
}

#[test]
fn a_cancelled_queued_task_and_other_tools_tasks_take_no_place() {
    let (a, b) = (at("a", 1), at("b", 2));
    let mut cancelled = a.clone();
    cancelled
        .metadata
        .annotations
        .get_or_insert_default()
        .insert(CANCEL_REQUESTED_ANNOTATION.to_owned(), "now".to_owned());
    let mut other_tool = running(at("o", 0));
    other_tool.spec.tool = "other".to_owned();
    let mut other_ns = running(at("n", 0));
    other_ns.metadata.namespace = Some("elsewhere".to_owned());
    let all = [cancelled, other_tool, other_ns, b.clone()];
    assert_eq!(admit_among(&b, 1, &all), Admission::Admit);
}

#[test]
fn the_task_itself_in_any_version_is_not_counted() {
    let a = at("a", 1);
    assert_eq!(admit_among(&a, 1, &[running(a.clone())]), Admission::Admit);
}

#[test]
fn queued_of_tool_lists_the_waiting_tasks_only() {
    let (a, b, c) = (at("a", 1), at("b", 2), at("c", 3));
    let all = [running(a.clone()), b.clone(), ended(c)];
    let names: Vec<String> = queued_of_tool(&a, &all).map(|t| t.name_any()).collect();
    assert_eq!(names, ["b"]);
}

#[test]
fn a_task_admitted_here_holds_its_slot_before_the_cache_shows_its_job() {
    let (a, b, c) = (at("a", 1), at("b", 2), at("c", 3));
    let admitted = Admitted::default();
    // Two reconciles read the same cache, where no Job is recorded yet: one slot, one admitted.
    let cache = [a.clone(), b.clone(), c.clone()];
    assert_eq!(admitted.decide(&a, 1, &cache), Admission::Admit);
    assert_eq!(
        admitted.decide(&b, 1, &cache),
        Admission::Queued { ahead: 0 }
    );
    // Admitted again while its Job is on its way.
    assert_eq!(admitted.decide(&a, 1, &cache), Admission::Admit);
    // The cache shows a's Job: the slot is a's all the same.
    let recorded = [running(a.clone()), b.clone(), c.clone()];
    assert_eq!(
        admitted.decide(&b, 1, &recorded),
        Admission::Queued { ahead: 0 }
    );
    // a ended: b takes the slot, c still waits.
    let freed = [ended(a), b.clone(), c.clone()];
    assert_eq!(admitted.decide(&b, 1, &freed), Admission::Admit);
    assert_eq!(
        admitted.decide(&c, 1, &freed),
        Admission::Queued { ahead: 0 }
    );
}

#[test]
fn a_task_admitted_here_that_the_cache_has_not_seen_holds_a_slot() {
    let (a, b) = (at("a", 1), at("b", 2));
    let pending = HashSet::from(["uid-a".to_owned()]);
    let only_b = std::slice::from_ref(&b);
    assert_eq!(
        admit(&b, 1, only_b, &pending),
        Admission::Queued { ahead: 0 }
    );
    assert_eq!(admit(&b, 2, only_b, &pending), Admission::Admit);
    assert_eq!(
        admit(&b, 1, &[a, b.clone()], &pending),
        Admission::Queued { ahead: 0 }
    );
}

/// [`at`], owned by `owner`.
fn owned(name: &str, second: u32, owner: &str) -> McpTask {
    let mut t = at(name, second);
    t.spec.owner = owner.to_owned();
    t
}

#[test]
fn callers_take_turns_however_many_tasks_one_queued_first() {
    // Alice runs one and queued four more before Bob's first; the limit is one.
    let mut all: Vec<McpTask> = (1..=5)
        .map(|i| owned(&format!("alice-{i}"), i, "alice"))
        .collect();
    all[0] = running(all[0].clone());
    let bob = owned("bob-1", 9, "bob");
    all.push(bob.clone());
    // Bob holds no slot, so his first task is the head of the queue.
    assert_eq!(admit_among(&bob, 2, &all), Admission::Admit);
    assert_eq!(admit_among(&bob, 1, &all), Admission::Queued { ahead: 0 });
    for (i, ahead) in [(1, 1), (2, 2), (3, 3), (4, 4)] {
        assert_eq!(
            admit_among(&all[i], 1, &all),
            Admission::Queued { ahead },
            "alice-{}",
            i + 1
        );
    }
    // Once Alice's running task ends, both hold nothing, and Bob, who never had a slot, goes
    // before her second.
    all[0] = ended(all[0].clone());
    assert_eq!(admit_among(&bob, 1, &all), Admission::Admit);
    assert_eq!(
        admit_among(&all[1], 1, &all),
        Admission::Queued { ahead: 1 }
    );
    // With Bob's running, Alice's second is next, before Bob's second: they alternate.
    all[5] = running(bob);
    let bob_2 = owned("bob-2", 10, "bob");
    all.push(bob_2.clone());
    assert_eq!(admit_among(&all[1], 2, &all), Admission::Admit);
    assert_eq!(
        admit_among(&all[4], 2, &all),
        Admission::Queued { ahead: 4 }
    );
    // Once her second runs too, her third and Bob's second share round 1; both callers were
    // served just now (Jobs not confirmed yet), so creation order decides.
    all[1] = running(all[1].clone());
    assert_eq!(admit_among(&all[2], 3, &all), Admission::Admit);
    assert_eq!(admit_among(&bob_2, 3, &all), Admission::Queued { ahead: 1 });
    assert_eq!(
        admit_among(&all[3], 3, &all),
        Admission::Queued { ahead: 2 }
    );
}

#[test]
fn between_callers_holding_nothing_the_one_served_longest_ago_goes_first() {
    let served = |name: &str, owner: &str, at: &str| {
        let mut t = ended(owned(name, 0, owner));
        t.status.as_mut().unwrap().conditions.push(Condition {
            type_: job_record::JOB_CREATED_CONDITION.to_owned(),
            status: "True".to_owned(),
            last_transition_time: Time(at.parse().unwrap()),
            message: String::new(),
            reason: "Created".to_owned(),
            observed_generation: None,
        });
        t
    };
    let (a, b) = (owned("a", 5, "alice"), owned("b", 6, "bob"));
    let all = [
        served("a0", "alice", "2026-08-01T12:00:01Z"),
        served("b0", "bob", "2026-08-01T11:00:00Z"),
        a.clone(),
        b.clone(),
    ];
    assert_eq!(admit_among(&b, 1, &all), Admission::Admit);
    assert_eq!(admit_among(&a, 1, &all), Admission::Queued { ahead: 1 });
}

#[test]
fn one_callers_tasks_keep_their_creation_order() {
    let (a, b, c) = (owned("z", 1, "x"), owned("y", 2, "x"), owned("w", 3, "x"));
    let all = [a.clone(), b.clone(), c.clone()];
    assert_eq!(admit_among(&a, 1, &all), Admission::Admit);
    assert_eq!(admit_among(&b, 1, &all), Admission::Queued { ahead: 1 });
    assert_eq!(admit_among(&c, 1, &all), Admission::Queued { ahead: 2 });
}
