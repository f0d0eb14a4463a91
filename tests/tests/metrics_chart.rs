//! The chart's optional monitoring objects: the PrometheusRule's groups pass `promtool check
//! rules` and the unit tests in `tests/promtool/alerts_test.yaml` (each alert fires on its
//! synthetic series and stays silent otherwise), and the Grafana dashboard is valid JSON whose
//! every query names only metrics that the real operator and front end export (read from their
//! live /metrics). Both objects are absent by default.

mod common;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;

use common::helm::of_kind;
use mcp_task_operator_harness::frontend::Frontend;
use mcp_task_operator_harness::operator::Operator;
use mcp_task_operator_harness::{chart_dir, ensure_crds, with_temp_ns};
use serde_json::Value;

/// The namespace the promtool unit tests expect the rules rendered for.
const RULES_NS: &str = "mto";

/// `helm template` of the chart in `ns` with `--set` values, as JSON documents.
fn render(ns: &str, sets: &[&str]) -> Vec<Value> {
    common::helm::render("r", Some(ns), sets)
}

/// Both monitoring objects, rendered on.
const MONITORING_ON: &[&str] = &[
    "monitoring.dashboard.enabled=true",
    "monitoring.prometheusRule.enabled=true",
];

/// promtool: `$MTO_PROMTOOL`, or built (once, then cached) by hack/build-promtool.sh.
fn promtool() -> PathBuf {
    if let Ok(path) = std::env::var("MTO_PROMTOOL")
        && !path.is_empty()
    {
        return PathBuf::from(path);
    }
    let script = chart_dir().join("../../hack/build-promtool.sh");
    let out = Command::new(&script)
        .output()
        .expect("run hack/build-promtool.sh");
    assert!(
        out.status.success(),
        "hack/build-promtool.sh failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    PathBuf::from(
        stdout
            .lines()
            .last()
            .expect("the script prints promtool's path")
            .trim(),
    )
}

fn run_ok(command: &mut Command) -> String {
    let out = command.output().expect("the command runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{command:?} failed:\n{text}");
    text
}

#[test]
fn monitoring_objects_are_off_by_default() {
    let docs = render("default", &[]);
    assert!(of_kind(&docs, "PrometheusRule").is_empty());
    assert!(
        of_kind(&docs, "ConfigMap")
            .iter()
            .all(|c| c["metadata"]["labels"]["grafana_dashboard"].is_null()),
        "no dashboard ConfigMap by default"
    );
}

#[test]
fn alert_rules_pass_promtool_check_and_unit_tests() {
    let docs = render(RULES_NS, MONITORING_ON);
    let rules = of_kind(&docs, "PrometheusRule");
    assert_eq!(rules.len(), 1, "one PrometheusRule");
    let groups = &rules[0]["spec"]["groups"];
    let alerts: BTreeSet<&str> = groups
        .as_array()
        .expect("groups")
        .iter()
        .flat_map(|g| g["rules"].as_array().expect("rules"))
        .filter_map(|r| r["alert"].as_str())
        .collect();
    let dir = std::env::temp_dir().join(format!("mto-promtool-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let rules_file = dir.join("rules.yaml");
    let text = serde_yaml::to_string(&serde_json::json!({ "groups": groups })).expect("YAML");
    std::fs::write(&rules_file, text).expect("write rules.yaml");
    let tests_src = chart_dir().join("../../tests/promtool/alerts_test.yaml");
    let tests_text = std::fs::read_to_string(&tests_src).expect("read alerts_test.yaml");
    // Every alert has a unit test that expects it to fire.
    for alert in &alerts {
        assert!(
            tests_text.contains(&format!(
                "alertname: {alert}\n        exp_alerts:\n          - "
            )),
            "no promtool test where {alert} fires"
        );
        assert!(
            tests_text.contains(&format!("alertname: {alert}\n        exp_alerts: []")),
            "no promtool test where {alert} stays silent"
        );
    }
    let tests_file = dir.join("alerts_test.yaml");
    std::fs::write(&tests_file, &tests_text).expect("write alerts_test.yaml");
    let promtool = promtool();
    let checked = run_ok(
        Command::new(&promtool)
            .args(["check", "rules"])
            .arg(&rules_file),
    );
    assert!(
        checked.contains(&format!("SUCCESS: {} rules found", alerts.len())),
        "{checked}"
    );
    let tested = run_ok(
        Command::new(&promtool)
            .args(["test", "rules"])
            .arg(&tests_file),
    );
    assert!(tested.contains("SUCCESS"), "{tested}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The metric names a query refers to (`mcp_…` identifiers).
fn metric_names(expr: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut rest = expr;
    while let Some(at) = rest.find("mcp_") {
        let tail = &rest[at..];
        let end = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(tail.len());
        // A name, not the tail of a longer identifier.
        let boundary = rest[..at]
            .chars()
            .last()
            .is_none_or(|c| !(c.is_ascii_alphanumeric() || c == '_'));
        if boundary {
            names.insert(tail[..end].to_owned());
        }
        rest = &tail[end..];
    }
    names
}

/// Every sample name `/metrics` text can hold: from each `# TYPE` line, the name with the
/// suffixes its type gives samples.
fn exported_names(metrics: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for line in metrics.lines() {
        let Some(rest) = line.strip_prefix("# TYPE ") else {
            continue;
        };
        let mut parts = rest.split_whitespace();
        let (Some(name), Some(kind)) = (parts.next(), parts.next()) else {
            continue;
        };
        let suffixes: &[&str] = match kind {
            "counter" => &["_total", "_created"],
            "histogram" => &["_bucket", "_sum", "_count", "_created"],
            _ => &[""],
        };
        names.extend(suffixes.iter().map(|s| format!("{name}{s}")));
    }
    names
}

#[tokio::test]
async fn dashboard_and_alerts_query_only_metrics_the_binaries_export() {
    with_temp_ns("metrics-dash", |client, ns| async move {
        ensure_crds(&client).await;
        let docs = render(&ns, MONITORING_ON);
        let maps: Vec<_> = of_kind(&docs, "ConfigMap")
            .into_iter()
            .filter(|c| c["metadata"]["labels"]["grafana_dashboard"] == "1")
            .collect();
        assert_eq!(
            maps.len(),
            1,
            "one dashboard ConfigMap, labelled for Grafana"
        );
        let json = maps[0]["data"]["mcp-task-operator.json"]
            .as_str()
            .expect("the dashboard JSON");
        let dashboard: Value = serde_json::from_str(json).expect("the dashboard is JSON");
        assert!(dashboard["title"].as_str().is_some_and(|t| t.contains(&ns)));
        let mut exprs = Vec::new();
        for panel in dashboard["panels"].as_array().expect("panels") {
            for target in panel["targets"].as_array().into_iter().flatten() {
                exprs.push(target["expr"].as_str().expect("a target's expr").to_owned());
            }
        }
        let rules = of_kind(&docs, "PrometheusRule");
        for group in rules[0]["spec"]["groups"].as_array().expect("groups") {
            for rule in group["rules"].as_array().expect("rules") {
                exprs.push(rule["expr"].as_str().expect("a rule's expr").to_owned());
            }
        }
        assert!(exprs.len() > 10, "{exprs:?}");
        let operator = Operator::start_leader(&ns).await;
        let frontend = Frontend::start(&ns, &[]).await;
        let (_, operator_metrics) = operator.get("/metrics").await.expect("operator /metrics");
        let frontend_metrics = frontend.metrics().await;
        let exported: BTreeSet<String> = exported_names(&operator_metrics)
            .into_iter()
            .chain(exported_names(&frontend_metrics))
            .collect();
        for expr in &exprs {
            assert!(
                expr.contains(&format!("namespace=\"{ns}\"")),
                "every query is scoped to the release's namespace: {expr}"
            );
            let names = metric_names(expr);
            assert!(!names.is_empty(), "{expr}");
            for name in names {
                assert!(
                    exported.contains(&name),
                    "{name} (in {expr}) is not exported; exported: {exported:?}"
                );
            }
        }
    })
    .await;
}
