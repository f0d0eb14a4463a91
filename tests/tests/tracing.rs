//! OpenTelemetry traces, read back from a real backend: Jaeger (`harness/src/jaeger.rs`) on
//! loopback, the front end and the operator as child processes exporting to it over OTLP/HTTP,
//! real Jobs on the local cluster. One trace per task: the client's `traceparent` (from
//! `params._meta`, MCP SEP-414) is continued by the front end's `tools/call` span, the
//! operator's reconcile spans are its children, and the tool container gets `TRACEPARENT`
//! naming that span.

mod common;

use common::start_leader_with;
use kube::{Client, ResourceExt};
use mcp_task_operator_crds::{McpTask, TRACEPARENT_ANNOTATION};
use mcp_task_operator_harness::frontend::Frontend;
use mcp_task_operator_harness::jaeger::{Jaeger, Span};
use mcp_task_operator_harness::mcp_client::{Mcp, framed};
use mcp_task_operator_harness::operator::{
    Operator, create_tool, result_text, shell_tool, wait_terminal,
};
use mcp_task_operator_harness::{ensure_crds, with_temp_ns};
use rand::Rng;
use serde_json::{Value, json};

/// The tool: prints the `TRACEPARENT` it was given, which becomes its text result.
const PRINT_TRACEPARENT: &str = r#"echo "TRACEPARENT=${TRACEPARENT:-unset}""#;

/// Export settings of both binaries: Jaeger's receiver, batches sent every 100 ms.
fn otel_env(jaeger: &Jaeger) -> Vec<(&'static str, String)> {
    vec![
        ("OTEL_EXPORTER_OTLP_ENDPOINT", jaeger.otlp_endpoint.clone()),
        ("OTEL_BSP_SCHEDULE_DELAY", "100".to_owned()),
    ]
}

/// A front end without authentication plus `extra` settings.
async fn frontend(ns: &str, extra: &[(&'static str, String)]) -> Frontend {
    let mut env = vec![
        ("AUTH_MODE", "none".to_owned()),
        ("ALLOW_UNAUTHENTICATED", "true".to_owned()),
    ];
    env.extend_from_slice(extra);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    Frontend::start(ns, &env).await
}

/// The leader operator of `ns` with `extra` settings.
async fn operator(ns: &str, extra: &[(&'static str, String)]) -> Operator {
    let env: Vec<(&str, &str)> = extra.iter().map(|(k, v)| (*k, v.as_str())).collect();
    start_leader_with(ns, &env).await
}

/// The CRDs, Jaeger, and an operator and a front end of `ns` exporting to it.
async fn traced_stack(client: &Client, ns: &str) -> (Jaeger, Operator, Frontend) {
    ensure_crds(client).await;
    let jaeger = Jaeger::start().await;
    let operator = operator(ns, &otel_env(&jaeger)).await;
    let frontend = frontend(ns, &otel_env(&jaeger)).await;
    (jaeger, operator, frontend)
}

/// A random sampled client traceparent: (value, trace ID, span ID).
fn client_traceparent() -> (String, String, String) {
    let mut rng = rand::rng();
    let trace = format!("{:032x}", rng.random::<u128>() | 1);
    let span = format!("{:016x}", rng.random::<u64>() | 1);
    (format!("00-{trace}-{span}-01"), trace, span)
}

/// `tools/call` of `tool` as a task, with `traceparent` in `params._meta` when given; returns
/// the task ID.
async fn call_with_traceparent(mcp: &Mcp, tool: &str, traceparent: Option<&str>) -> String {
    let (headers, mut body) = framed("tools/call", json!({"name": tool, "arguments": {}}), true);
    if let Some(value) = traceparent {
        body["params"]["_meta"]["traceparent"] = json!(value);
    }
    let reply = mcp.send(&headers, &body).await;
    let result = reply.result();
    assert_eq!(result["resultType"], "task", "{}", reply.body);
    result["taskId"].as_str().expect("taskId").to_owned()
}

/// Makes the tool, waits until the front end lists it, calls it and waits for the task to
/// end; returns the finished task.
async fn run_traced_call(
    client: &Client,
    ns: &str,
    frontend: &Frontend,
    traceparent: Option<&str>,
) -> McpTask {
    create_tool(
        client,
        ns,
        &shell_tool("traced", PRINT_TRACEPARENT, json!({})),
    )
    .await;
    let mcp = Mcp::new(&frontend.url);
    mcp.wait_for_tools(&["traced"]).await;
    let id = call_with_traceparent(&mcp, "traced", traceparent).await;
    mcp.wait_status(&id, "completed").await;
    wait_terminal(client, ns, &id).await
}

/// The one span named `name` from `service`.
fn only<'a>(spans: &'a [Span], service: &str, name: &str) -> &'a Span {
    let found: Vec<_> = spans
        .iter()
        .filter(|s| s.service == service && s.name == name)
        .collect();
    assert_eq!(found.len(), 1, "one {service} {name} span: {spans:#?}");
    found[0]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_is_one_trace_from_the_clients_span_through_the_operator_to_the_tool() {
    with_temp_ns("trace", |client, ns| async move {
        let (jaeger, _operator, frontend) = traced_stack(&client, &ns).await;
        let (traceparent, trace_id, client_span) = client_traceparent();

        let task = run_traced_call(&client, &ns, &frontend, Some(&traceparent)).await;

        // The tool saw the front end's tools/call span in the client's trace.
        let printed = result_text(&task);
        let seen = printed
            .trim()
            .strip_prefix("TRACEPARENT=")
            .unwrap_or_default();
        let parts: Vec<&str> = seen.split('-').collect();
        assert_eq!(parts.len(), 4, "{printed:?}");
        assert_eq!(
            (parts[0], parts[1], parts[3]),
            ("00", trace_id.as_str(), "01")
        );
        let call_span = parts[2];
        assert_ne!(
            call_span, client_span,
            "the tool's parent is the front end's span"
        );
        assert_eq!(
            task.annotations().get(TRACEPARENT_ANNOTATION),
            Some(&seen.to_owned())
        );

        // Both services' spans are in the client's trace, with the right parents.
        let spans = jaeger
            .wait_trace(&trace_id, |spans| {
                spans.iter().any(|s| s.service == "mcp-task-frontend")
                    && spans.iter().any(|s| s.service == "mcp-task-operator")
            })
            .await;
        // The trace as Jaeger's query API gives it (shown with `--nocapture`).
        for span in &spans {
            eprintln!(
                "trace {trace_id}: {} {} span {} parent {}",
                span.service,
                span.name,
                span.span_id,
                span.parent.as_deref().unwrap_or("-")
            );
        }
        let call = only(&spans, "mcp-task-frontend", "tools/call");
        assert_eq!(call.span_id, call_span);
        assert_eq!(
            call.parent.as_deref(),
            Some(client_span.as_str()),
            "{call:#?}"
        );
        assert_eq!(call.tags.get("mcp.task.id"), Some(&json!(task.name_any())));
        assert_eq!(call.tags.get("gen_ai.tool.name"), Some(&json!("traced")));
        let reconciles: Vec<_> = spans
            .iter()
            .filter(|s| s.service == "mcp-task-operator")
            .collect();
        for reconcile in &reconciles {
            assert_eq!(reconcile.name, "reconcile", "{reconcile:#?}");
            assert_eq!(
                reconcile.parent.as_deref(),
                Some(call_span),
                "{reconcile:#?}"
            );
            assert_eq!(reconcile.tags.get("name"), Some(&json!(task.name_any())));
        }
        // Nothing else: no per-request or library spans in the task's trace.
        assert_eq!(spans.len(), 1 + reconciles.len(), "{spans:#?}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_client_traceparent_is_ignored_and_the_call_starts_a_new_trace() {
    with_temp_ns("trace-bad", |client, ns| async move {
        let (jaeger, _operator, frontend) = traced_stack(&client, &ns).await;
        let (valid, bad_trace, _) = client_traceparent();
        // Uppercase hex, as W3C forbids; the call must still work.
        let malformed = valid.to_uppercase();

        let task = run_traced_call(&client, &ns, &frontend, Some(&malformed)).await;

        let stored = task
            .annotations()
            .get(TRACEPARENT_ANNOTATION)
            .cloned()
            .expect("a new trace's context");
        assert_eq!(stored.len(), 55, "{stored}");
        let trace_id = stored.split('-').nth(1).expect("trace ID").to_owned();
        assert_ne!(trace_id, bad_trace);
        assert_eq!(result_text(&task).trim(), format!("TRACEPARENT={stored}"));
        let spans = jaeger
            .wait_trace(&trace_id, |spans| {
                spans.iter().any(|s| s.service == "mcp-task-operator")
            })
            .await;
        let call = only(&spans, "mcp-task-frontend", "tools/call");
        assert_eq!(
            call.parent, None,
            "a new trace starts at tools/call: {call:#?}"
        );
        assert!(jaeger.trace(&bad_trace).await.is_empty());
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_export_the_clients_traceparent_reaches_the_tool_and_without_one_nothing_does() {
    with_temp_ns("trace-off", |client, ns| async move {
        ensure_crds(&client).await;
        let _operator = operator(&ns, &[]).await;
        let frontend = frontend(&ns, &[]).await;
        let (traceparent, _, _) = client_traceparent();

        let task = run_traced_call(&client, &ns, &frontend, Some(&traceparent)).await;
        assert_eq!(
            result_text(&task).trim(),
            format!("TRACEPARENT={traceparent}")
        );

        let mcp = Mcp::new(&frontend.url);
        let id = call_with_traceparent(&mcp, "traced", None).await;
        let untraced = wait_terminal(&client, &ns, &id).await;
        assert_eq!(result_text(&untraced).trim(), "TRACEPARENT=unset");
        assert_eq!(untraced.annotations().get(TRACEPARENT_ANNOTATION), None);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_front_end_sends_its_buffered_spans_when_it_stops() {
    with_temp_ns("trace-flush", |client, ns| async move {
        ensure_crds(&client).await;
        let jaeger = Jaeger::start().await;
        // Batches every 10 minutes: only the flush at shutdown can send the span in time.
        let env = [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", jaeger.otlp_endpoint.clone()),
            ("OTEL_BSP_SCHEDULE_DELAY", "600000".to_owned()),
        ];
        let mut frontend = frontend(&ns, &env).await;
        let (traceparent, trace_id, client_span) = client_traceparent();
        // A call of an unknown tool: refused at once, its span marked as an error.
        let (headers, mut body) =
            framed("tools/call", json!({"name": "nope", "arguments": {}}), true);
        body["params"]["_meta"]["traceparent"] = json!(traceparent);
        let reply = Mcp::new(&frontend.url).send(&headers, &body).await;
        assert_eq!(reply.error_code(), Some(-32602), "{}", reply.body);

        let status = frontend.terminate().await;
        assert!(status.success(), "{status}\n{}", frontend.log());
        let spans = jaeger
            .wait_trace(&trace_id, |spans| !spans.is_empty())
            .await;
        let call = only(&spans, "mcp-task-frontend", "tools/call");
        assert_eq!(call.parent.as_deref(), Some(client_span.as_str()));
        assert_eq!(
            call.tags.get("otel.status_code"),
            Some(&Value::from("ERROR"))
        );
    })
    .await;
}

/// The chart's Deployments rendered with `sets`: each one's `name=value` env.
fn rendered_env(sets: &[&str]) -> Vec<std::collections::BTreeMap<String, String>> {
    common::helm::render("mto", None, sets)
        .into_iter()
        .filter(|d| d["kind"] == "Deployment")
        .map(|d| {
            d["spec"]["template"]["spec"]["containers"][0]["env"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|e| {
                    Some((
                        e["name"].as_str()?.to_owned(),
                        e["value"].as_str()?.to_owned(),
                    ))
                })
                .collect()
        })
        .collect()
}

#[test]
fn the_chart_exports_traces_from_both_components_only_when_an_endpoint_is_set() {
    let off = rendered_env(&[]);
    assert_eq!(off.len(), 2);
    assert!(
        off.iter()
            .all(|env| env.keys().all(|k| !k.starts_with("OTEL_"))),
        "{off:?}"
    );
    let on = rendered_env(&[
        "tracing.otlpEndpoint=http://collector.monitoring:4318",
        "tracing.sampler=parentbased_traceidratio",
        "tracing.samplerArg=0.25",
    ]);
    assert_eq!(on.len(), 2);
    for env in on {
        assert_eq!(
            env["OTEL_EXPORTER_OTLP_ENDPOINT"],
            "http://collector.monitoring:4318"
        );
        assert_eq!(env["OTEL_TRACES_SAMPLER"], "parentbased_traceidratio");
        assert_eq!(env["OTEL_TRACES_SAMPLER_ARG"], "0.25");
    }
    // The binaries send OTLP/HTTP without TLS: the schema refuses anything else.
    let https = common::helm::template(
        "mto",
        None,
        &["tracing.otlpEndpoint=https://collector:4318"],
    );
    assert!(!https.status.success());
    assert!(String::from_utf8_lossy(&https.stderr).contains("/tracing/otlpEndpoint"));
}
