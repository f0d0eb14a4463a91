//! The official MCP conformance suite (`@modelcontextprotocol/conformance`, from `MTO_CLIENTS`)
//! against the real front end binary: every tasks scenario must pass, and so must every core
//! 2026-07-28 check that a container-tool server can pass (docs/CONFORMANCE.md explains the
//! rest). The fixture tools are the McpTools of `examples/conformance/mcptools.yaml` and
//! `core-mcptools.yaml`, marked Ready and played by the test-side status writer
//! (`tests/tests/e2e_stack.rs` runs the same suite with the real operator and Jobs).

use mcp_task_operator_harness::conformance::{
    EXPLAINED, assert_suite_passes_or_is_explained, run_suite, run_tasks_scenarios,
};
use mcp_task_operator_harness::fixture_tools::{
    CORE_FIXTURE_TOOLS, FIXTURE_TOOLS, apply_core_fixture_tools, serve_fixtures,
    trigger_tool_changes,
};
use mcp_task_operator_harness::frontend::Frontend;
use mcp_task_operator_harness::mcp_client::Mcp;
use mcp_task_operator_harness::with_temp_ns;

#[tokio::test]
async fn every_tasks_scenario_of_the_official_conformance_suite_passes() {
    with_temp_ns("conformance", |client, ns| async move {
        let _writer = serve_fixtures(&client, &ns).await;
        let frontend = Frontend::start(&ns, &[]).await;
        Mcp::new(&frontend.url).wait_for_tools(&FIXTURE_TOOLS).await;
        let out = std::env::temp_dir().join(format!("mto-conformance-{ns}"));

        let failures = run_tasks_scenarios(&frontend.url, &out).await;
        let _ = std::fs::remove_dir_all(&out);
        assert!(failures.is_empty(), "conformance failures: {failures:#?}");
    })
    .await;
}

#[tokio::test]
async fn the_whole_2026_07_28_server_suite_passes_or_is_explained() {
    with_temp_ns("conformance-all", |client, ns| async move {
        let _writer = serve_fixtures(&client, &ns).await;
        apply_core_fixture_tools(&client, &ns).await;
        let _trigger = trigger_tool_changes(&client, &ns);
        let frontend = Frontend::start(&ns, &[]).await;
        let mut tools = FIXTURE_TOOLS.to_vec();
        tools.extend(CORE_FIXTURE_TOOLS);
        Mcp::new(&frontend.url).wait_for_tools(&tools).await;
        let out = std::env::temp_dir().join(format!("mto-conformance-{ns}"));

        let checks = run_suite(&frontend.url, &["--requirements", "2026-07-28"], &out).await;
        let _ = std::fs::remove_dir_all(&out);
        assert_suite_passes_or_is_explained(&checks, EXPLAINED);
    })
    .await;
}
