//! The `tasks/get` fast path of the real front end binary against the real API server (no
//! operator: the test writes the status itself). A task not yet terminal is answered only
//! after a confirm read, so a state written a moment ago is shown at once even when the
//! replica's watch has not delivered it (status never goes backwards); a terminal task is
//! answered from the cache without reads; concurrent polls share confirm reads. Counts come
//! from `mcp_frontend_task_lookups_total`; nothing is timed.

mod common;

use common::frontend::{lookups, unauthenticated_frontend};
use futures::future::join_all;
use kube::Api;
use kube::api::{Patch, PatchParams};
use mcp_task_operator_crds::McpTask;
use mcp_task_operator_harness::with_temp_ns;
use serde_json::json;

#[tokio::test]
async fn polls_see_a_new_state_at_once_and_terminal_ones_cost_no_reads() {
    with_temp_ns("fe-fastget", |client, ns| async move {
        let (frontend, mcp) = unauthenticated_frontend(&client, &ns, &[]).await;
        let id = mcp
            .start_task("slow_compute", json!({ "seconds": 60 }))
            .await;
        // Concurrent polls of a working task: each is confirmed by a read that began after
        // it arrived; concurrent ones share reads.
        let before = lookups(&frontend, "fresh").await;
        let polls = 32;
        let answers = join_all((0..polls).map(|_| mcp.get_task(&id))).await;
        for answer in &answers {
            assert_eq!(answer.result()["status"], "working", "{}", answer.body);
        }
        let reads = lookups(&frontend, "fresh").await - before;
        assert!(
            (1..=polls).contains(&reads),
            "{reads} confirm reads for {polls} polls"
        );
        eprintln!("{polls} concurrent polls of a working task cost {reads} confirm reads");

        // Completed by a status write; the very next poll shows it, whether or not the watch
        // has delivered it yet.
        let api: Api<McpTask> = Api::namespaced(client.clone(), &ns);
        let status = json!({ "status": { "status": "completed",
            "result": { "content": [{ "type": "text", "text": "done" }] } } });
        api.patch_status(&id, &PatchParams::default(), &Patch::Merge(&status))
            .await
            .expect("status written");
        let answer = mcp.get_task(&id).await;
        assert_eq!(answer.result()["status"], "completed", "{}", answer.body);
        assert_eq!(answer.result()["result"]["content"][0]["text"], "done");

        // Terminal: served from the cache, the same answer each time.
        let before = lookups(&frontend, "fresh").await;
        for _ in 0..20 {
            let again = mcp.get_task(&id).await;
            assert_eq!(again.result(), answer.result());
        }
        assert_eq!(
            lookups(&frontend, "fresh").await,
            before,
            "no reads for a terminal task"
        );
    })
    .await;
}
