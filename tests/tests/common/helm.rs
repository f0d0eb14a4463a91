//! `helm template` of the repository's chart, for the tests that read what it renders.

use std::process::Output;

use mcp_task_operator_harness::{KUBE_VERSION, chart_dir, helm};
use serde::Deserialize;
use serde_json::Value;

/// Runs `helm template <release>` of the chart with the `--set` values `sets`, in namespace
/// `ns` if given.
pub fn template(release: &str, ns: Option<&str>, sets: &[&str]) -> Output {
    let chart = chart_dir();
    let mut args = vec![
        "template",
        release,
        chart.to_str().expect("UTF-8 path"),
        "--kube-version",
        KUBE_VERSION,
    ];
    if let Some(ns) = ns {
        args.extend(["-n", ns]);
    }
    for set in sets {
        args.extend(["--set", set]);
    }
    helm(&args)
}

/// [`template`] as JSON documents; panics with helm's output when it fails.
pub fn render(release: &str, ns: Option<&str>, sets: &[&str]) -> Vec<Value> {
    let out = template(release, ns, sets);
    assert!(
        out.status.success(),
        "helm template {release} {sets:?} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_yaml::Deserializer::from_str(&String::from_utf8_lossy(&out.stdout))
        .map(|doc| Value::deserialize(doc).expect("helm renders YAML"))
        .filter(|v| !v.is_null())
        .collect()
}

/// The documents of `kind`.
pub fn of_kind<'a>(docs: &'a [Value], kind: &str) -> Vec<&'a Value> {
    docs.iter().filter(|d| d["kind"] == kind).collect()
}
