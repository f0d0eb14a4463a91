//! `helm test`: the chart's test pod is an MCP client (sh and curl) that calls a tool through the
//! front end Service in the chart's default auth (token review with an audience, RBAC on tools),
//! and fails when the tool is not its to call; a second pod proves the admission policies refuse
//! a pod claiming a Job as its controller and a Job with the operator's labels.

mod common;

use common::{CONFORMANCE_TOOLS, prepare_examples_blocking};
use mcp_task_operator_harness::stack::{Release, apply_examples, install, output_text};
use mcp_task_operator_harness::{helm, with_temp_ns};
use tokio::task::block_in_place;

const RELEASE: &str = "ht";

/// `helm test` of the release with the test pod calling `slow_compute`; its output.
fn helm_test(ns: &str) -> (bool, String) {
    let out = helm(&["test", RELEASE, "-n", ns, "--logs", "--timeout", "4m"]);
    (out.status.success(), output_text(&out))
}

#[tokio::test(flavor = "multi_thread")]
async fn helm_test_calls_a_tool_through_the_service_and_fails_when_the_caller_may_not() {
    with_temp_ns("helm-test", |client, ns| async move {
        prepare_examples_blocking(&client).await;
        let _release = Release::new(&ns, RELEASE);
        let test_pod = [
            "operator.replicaCount=1",
            "frontend.replicaCount=1",
            "test.image=localhost/toolbox:v1",
            "test.imagePullPolicy=Never",
            "test.tool=slow_compute",
            r#"test.arguments=\{"seconds":1\,"label":"helm"\}"#,
            "test.timeoutSeconds=90",
        ];
        block_in_place(|| install(&ns, RELEASE, &test_pod));
        apply_examples(&client, &ns, &[CONFORMANCE_TOOLS]).await;

        let (passed, text) = block_in_place(|| helm_test(&ns));
        println!("{text}");
        assert!(passed, "helm test failed:\n{text}");
        assert!(text.contains("tools/list: HTTP 200"), "{text}");
        assert!(
            text.contains("\"resultType\":\"task\""),
            "not a task: {text}"
        );
        assert!(text.contains("PASS: slow_compute completed"), "{text}");
        assert!(text.contains("helm"), "the result names the label: {text}");
        // The admission policies' test pod: a plain pod admitted, the forged ones refused.
        assert!(text.contains("a plain pod: HTTP 201"), "{text}");
        assert!(
            text.contains("PASS: the admission policies refuse pods and Jobs"),
            "{text}"
        );

        // The caller role allows only greet: the same test now fails, said why.
        let only_greet = [
            &test_pod[..],
            &["frontend.authorization.callerRole.resourceNames={conformance-greet}"],
        ]
        .concat();
        block_in_place(|| install(&ns, RELEASE, &only_greet));
        let (passed, text) = block_in_place(|| helm_test(&ns));
        println!("{text}");
        assert!(
            !passed,
            "helm test passed for a tool the caller may not call:\n{text}"
        );
        assert!(
            text.contains("FAIL: slow_compute is not listed to this caller"),
            "{text}"
        );
    })
    .await;
}
