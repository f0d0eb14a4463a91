//! The operator's scale settings and its optional API Priority and Fairness level: rendered
//! from values, and the APF objects accepted (installed, then removed) by the API server.

use std::io::Write;
use std::process::{Command, Stdio};

use super::{env, named, of_kind, render};

const OPERATOR: &str = "mto-mcp-task-operator-operator";

#[test]
fn the_operators_scale_settings_reach_its_environment() {
    let var = |sets: &[&str], name: &str| {
        let docs = render("tools", sets);
        let operator = named(&docs, "Deployment", OPERATOR);
        let container = &operator["spec"]["template"]["spec"]["containers"][0];
        env(container, name).expect("scale env var")["value"].clone()
    };
    assert_eq!(var(&[], "MCP_OPERATOR_STATUS_WRITES_PER_SECOND"), "100");
    assert_eq!(
        var(&[], "MCP_OPERATOR_FINISHED_JOB_RETENTION_SECONDS"),
        "300"
    );
    assert_eq!(var(&[], "MCP_OPERATOR_MAX_FOLLOWER_STARTS"), "32");
    assert_eq!(var(&[], "MCP_OPERATOR_MAX_RECONCILES"), "32");
    let set = ["operator.config.finishedJobRetentionSeconds=5"];
    assert_eq!(
        var(&set, "MCP_OPERATOR_FINISHED_JOB_RETENTION_SECONDS"),
        "5"
    );
}

#[test]
fn the_apf_level_is_off_by_default_and_installs_when_enabled() {
    assert!(of_kind(&render("tools", &[]), "FlowSchema").is_empty());
    // A release name of its own: the objects are cluster-scoped and tests run in parallel.
    let ns = format!("apf-{}", std::process::id());
    let docs = render(&ns, &["operator.apiPriority.enabled=true"]);
    let schema = named(&docs, "FlowSchema", OPERATOR);
    let level = named(&docs, "PriorityLevelConfiguration", OPERATOR);
    let subject = &schema["spec"]["rules"][0]["subjects"][0]["serviceAccount"];
    assert_eq!(subject["name"], OPERATOR);
    assert_eq!(subject["namespace"], ns.as_str());
    assert_eq!(
        schema["spec"]["priorityLevelConfiguration"]["name"],
        OPERATOR
    );
    assert_eq!(level["spec"]["limited"]["nominalConcurrencyShares"], 30);
    // The API server accepts them (server-side dry run: the names are cluster-wide, and
    // another test's release may hold them).
    let manifest = [schema, level]
        .iter()
        .map(|d| serde_json::to_string(d).expect("json"))
        .collect::<Vec<_>>()
        .join("\n");
    let mut kubectl = Command::new("kubectl")
        .args(["apply", "--dry-run=server", "-f", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kubectl runs");
    kubectl
        .stdin
        .take()
        .expect("stdin")
        .write_all(manifest.as_bytes())
        .expect("write manifest");
    let out = kubectl.wait_with_output().expect("kubectl ends");
    assert!(
        out.status.success(),
        "the API server refused the APF objects:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("flowschema"), "{said}");
    assert!(said.contains("prioritylevelconfiguration"), "{said}");
}
