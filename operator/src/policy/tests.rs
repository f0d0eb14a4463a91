//! Tests for the tool policy: each rule, the field paths in its messages, the allow switches.

use super::*;

/// A pod template from the YAML of its `spec`.
fn template(spec_yaml: &str) -> PodTemplateSpec {
    let spec: PodSpec = serde_yaml::from_str(spec_yaml).expect("pod spec fixture is valid YAML");
    PodTemplateSpec {
        metadata: None,
        spec: Some(spec),
    }
}

fn strict() -> ToolPolicy {
    ToolPolicy {
        forbidden_service_accounts: vec!["mto-operator".into(), "mto-mcp-frontend".into()],
        ..ToolPolicy::default()
    }
}

fn allow_all() -> ToolPolicy {
    ToolPolicy {
        allow_privileged: true,
        allow_host_namespaces: true,
        allow_host_path: true,
        ..strict()
    }
}

/// The violation's message under the strict policy.
fn refused(spec_yaml: &str) -> String {
    check_template(&template(spec_yaml), &strict())
        .expect_err("the template breaks the policy")
        .to_string()
}

const TOOL: &str = "containers: [{name: tool, image: i}]";

#[test]
fn an_ordinary_template_is_allowed() {
    let ordinary = r#"
serviceAccountName: tool-identity
securityContext: {runAsNonRoot: true, seccompProfile: {type: RuntimeDefault}}
volumes: [{name: scratch, emptyDir: {}}]
containers:
  - name: tool
    image: i
    ports: [{containerPort: 8080}, {containerPort: 9090, hostPort: 0}]
    securityContext:
      allowPrivilegeEscalation: false
      privileged: false
      capabilities: {drop: [ALL], add: [NET_BIND_SERVICE, cap_chown, " CAP_KILL "]}
"#;
    assert_eq!(check_template(&template(ordinary), &strict()), Ok(()));
    assert_eq!(check_template(&template(TOOL), &strict()), Ok(()));
    let empty = PodTemplateSpec::default();
    assert_eq!(check_template(&empty, &strict()), Ok(()));
}

#[test]
fn the_projects_service_accounts_are_refused_by_either_field() {
    assert_eq!(
        refused(&format!("serviceAccountName: mto-operator\n{TOOL}")),
        "spec.template.spec.serviceAccountName \"mto-operator\" is not allowed (operator tool \
         policy: the operator's and the front end's ServiceAccounts are reserved)"
    );
    assert!(
        refused(&format!("serviceAccount: mto-mcp-frontend\n{TOOL}"))
            .starts_with("spec.template.spec.serviceAccount \"mto-mcp-frontend\" is not allowed")
    );
    // No switch permits them.
    let named = template(&format!("serviceAccountName: mto-mcp-frontend\n{TOOL}"));
    assert_eq!(
        check_template(&named, &allow_all()).unwrap_err().rule,
        Rule::ServiceAccount
    );
    assert_eq!(
        check_template(&named, &ToolPolicy::default()),
        Ok(()),
        "only the listed names are reserved"
    );
}

#[test]
fn privileged_containers_of_every_kind_are_refused() {
    assert_eq!(
        refused("containers: [{name: tool, image: i, securityContext: {privileged: true}}]"),
        "spec.template.spec.containers[0].securityContext.privileged is not allowed (operator \
         tool policy; MCP_OPERATOR_TOOL_POLICY_ALLOW_PRIVILEGED=true permits it)"
    );
    let init = format!(
        "{TOOL}\ninitContainers: [{{name: a, image: i}}, \
         {{name: b, image: i, securityContext: {{privileged: true}}}}]"
    );
    assert!(
        refused(&init).starts_with(
            "spec.template.spec.initContainers[1].securityContext.privileged is not allowed"
        ),
        "{}",
        refused(&init)
    );
    let ephemeral = format!(
        "{TOOL}\nephemeralContainers: [{{name: e, image: i, securityContext: {{privileged: true}}}}]"
    );
    assert!(refused(&ephemeral).starts_with(
        "spec.template.spec.ephemeralContainers[0].securityContext.privileged is not allowed"
    ));
    let windows = "containers: [{name: tool, image: i, \
                   securityContext: {windowsOptions: {hostProcess: true}}}]";
    assert!(refused(windows).starts_with(
        "spec.template.spec.containers[0].securityContext.windowsOptions.hostProcess is not"
    ));
    let pod_windows = format!("securityContext: {{windowsOptions: {{hostProcess: true}}}}\n{TOOL}");
    assert!(
        refused(&pod_windows)
            .starts_with("spec.template.spec.securityContext.windowsOptions.hostProcess is not")
    );
    let allowed = ToolPolicy {
        allow_privileged: true,
        ..strict()
    };
    for spec in [
        init.as_str(),
        ephemeral.as_str(),
        windows,
        pod_windows.as_str(),
    ] {
        assert_eq!(check_template(&template(spec), &allowed), Ok(()), "{spec}");
    }
}

#[test]
fn capabilities_beyond_the_baseline_list_are_refused() {
    let added = |caps: &str| {
        format!(
            "containers: [{{name: tool, image: i, securityContext: {{capabilities: {{add: {caps}}}}}}}]"
        )
    };
    assert_eq!(
        refused(&added("[CHOWN, SYS_ADMIN]")),
        "spec.template.spec.containers[0].securityContext.capabilities.add[1] \"SYS_ADMIN\" is \
         not allowed (operator tool policy; MCP_OPERATOR_TOOL_POLICY_ALLOW_PRIVILEGED=true \
         permits it)"
    );
    // The runtime's spellings of the same capability, and ALL.
    for caps in ["[cap_sys_admin]", "[net_admin]", "[ALL]", "[\"\"]"] {
        let err = check_template(&template(&added(caps)), &strict()).unwrap_err();
        assert_eq!(err.rule, Rule::Privileged, "{caps}");
    }
    let allowed = ToolPolicy {
        allow_privileged: true,
        ..strict()
    };
    assert_eq!(
        check_template(&template(&added("[SYS_ADMIN]")), &allowed),
        Ok(())
    );
}

#[test]
fn host_namespaces_and_host_ports_are_refused() {
    for field in ["hostNetwork", "hostPID", "hostIPC"] {
        assert_eq!(
            refused(&format!("{field}: true\n{TOOL}")),
            format!(
                "spec.template.spec.{field} is not allowed (operator tool policy; \
                 MCP_OPERATOR_TOOL_POLICY_ALLOW_HOST_NAMESPACES=true permits it)"
            )
        );
        let off = template(&format!("{field}: false\n{TOOL}"));
        assert_eq!(check_template(&off, &strict()), Ok(()));
    }
    let port = "containers: [{name: tool, image: i, \
                ports: [{containerPort: 80}, {containerPort: 8080, hostPort: 8080}]}]";
    assert_eq!(
        refused(port),
        "spec.template.spec.containers[0].ports[1].hostPort \"8080\" is not allowed (operator \
         tool policy; MCP_OPERATOR_TOOL_POLICY_ALLOW_HOST_NAMESPACES=true permits it)"
    );
    let allowed = ToolPolicy {
        allow_host_namespaces: true,
        ..strict()
    };
    let both = format!("hostNetwork: true\nhostPID: true\n{TOOL}");
    for spec in [both.as_str(), port] {
        assert_eq!(check_template(&template(spec), &allowed), Ok(()), "{spec}");
    }
}

#[test]
fn host_path_volumes_are_refused() {
    let host = format!(
        "volumes: [{{name: a, emptyDir: {{}}}}, {{name: root, hostPath: {{path: /}}}}]\n{TOOL}"
    );
    assert_eq!(
        refused(&host),
        "spec.template.spec.volumes[1].hostPath is not allowed (operator tool policy; \
         MCP_OPERATOR_TOOL_POLICY_ALLOW_HOST_PATH=true permits it)"
    );
    let allowed = ToolPolicy {
        allow_host_path: true,
        ..strict()
    };
    assert_eq!(check_template(&template(&host), &allowed), Ok(()));
}

#[test]
fn each_switch_permits_only_its_own_rule() {
    let privileged =
        "containers: [{name: tool, image: i, securityContext: {privileged: true}}]".to_owned();
    let host_path = format!("volumes: [{{name: r, hostPath: {{path: /}}}}]\n{TOOL}");
    let host_net = format!("hostNetwork: true\n{TOOL}");
    let only = |privileged, host_namespaces, host_path| ToolPolicy {
        allow_privileged: privileged,
        allow_host_namespaces: host_namespaces,
        allow_host_path: host_path,
        ..strict()
    };
    for (policy, refused_specs) in [
        (only(true, false, false), [&host_path, &host_net]),
        (only(false, true, false), [&host_path, &privileged]),
        (only(false, false, true), [&host_net, &privileged]),
    ] {
        for spec in refused_specs {
            assert!(
                check_template(&template(spec), &policy).is_err(),
                "{policy:?} let through {spec}"
            );
        }
    }
}

#[test]
fn the_job_check_reads_the_jobs_pod_template() {
    let job: Job = serde_yaml::from_str(
        r#"
metadata: {name: t}
spec:
  template:
    spec:
      hostPID: true
      containers: [{name: tool, image: i}]
"#,
    )
    .expect("job fixture");
    assert_eq!(
        check_job(&job, &strict()).unwrap_err().path,
        "spec.template.spec.hostPID"
    );
    assert_eq!(check_job(&Job::default(), &strict()), Ok(()));
}

/// The rest of the Pod Security baseline (`policy/baseline.rs`): each field that breaks it,
/// at the pod and in any container, is refused with its path and value; what the profile
/// allows passes; the privileged switch permits them all.
#[test]
fn the_rest_of_the_pod_security_baseline_is_refused() {
    let cases = [
        (
            "securityContext: {seccompProfile: {type: Unconfined}}\ncontainers: [{name: tool, image: i}]",
            "spec.template.spec.securityContext.seccompProfile.type \"Unconfined\"",
        ),
        (
            "securityContext: {appArmorProfile: {type: Unconfined}}\ncontainers: [{name: tool, image: i}]",
            "spec.template.spec.securityContext.appArmorProfile.type \"Unconfined\"",
        ),
        (
            "securityContext: {seLinuxOptions: {type: spc_t}}\ncontainers: [{name: tool, image: i}]",
            "spec.template.spec.securityContext.seLinuxOptions.type \"spc_t\"",
        ),
        (
            "securityContext: {seLinuxOptions: {user: system_u}}\ncontainers: [{name: tool, image: i}]",
            "spec.template.spec.securityContext.seLinuxOptions.user \"system_u\"",
        ),
        (
            "securityContext: {sysctls: [{name: net.ipv4.tcp_syncookies, value: '1'}, {name: kernel.msgmax, value: '1'}]}\ncontainers: [{name: tool, image: i}]",
            "spec.template.spec.securityContext.sysctls[1].name \"kernel.msgmax\"",
        ),
        (
            "containers: [{name: tool, image: i, securityContext: {seccompProfile: {type: Unconfined}}}]",
            "spec.template.spec.containers[0].securityContext.seccompProfile.type \"Unconfined\"",
        ),
        (
            "containers: [{name: tool, image: i, securityContext: {appArmorProfile: {type: Unconfined}}}]",
            "spec.template.spec.containers[0].securityContext.appArmorProfile.type \"Unconfined\"",
        ),
        (
            "containers: [{name: tool, image: i}]\ninitContainers: [{name: init, image: i, securityContext: {seLinuxOptions: {role: sysadm_r}}}]",
            "spec.template.spec.initContainers[0].securityContext.seLinuxOptions.role \"sysadm_r\"",
        ),
        (
            "containers: [{name: tool, image: i, securityContext: {procMount: Unmasked}}]",
            "spec.template.spec.containers[0].securityContext.procMount \"Unmasked\"",
        ),
    ];
    for (spec, path) in cases {
        let message = refused(spec);
        assert_eq!(
            message,
            format!(
                "{path} is not allowed (operator tool policy; MCP_OPERATOR_TOOL_POLICY_ALLOW_PRIVILEGED=true permits it)"
            )
        );
        assert_eq!(
            check_template(&template(spec), &allow_all()),
            Ok(()),
            "{spec}"
        );
    }
    let allowed = r#"
securityContext:
  seccompProfile: {type: Localhost, localhostProfile: p.json}
  appArmorProfile: {type: RuntimeDefault}
  seLinuxOptions: {type: container_t, level: "s0:c1,c2"}
  sysctls: [{name: net.ipv4.ip_unprivileged_port_start, value: "0"}]
containers:
  - name: tool
    image: i
    securityContext: {procMount: Default, appArmorProfile: {type: Localhost, localhostProfile: p}}
"#;
    assert_eq!(check_template(&template(allowed), &strict()), Ok(()));

    // The AppArmor annotation from before the field.
    let mut annotated = template(TOOL);
    let key = "container.apparmor.security.beta.kubernetes.io/tool";
    for (value, ok) in [
        ("runtime/default", true),
        ("localhost/p", true),
        ("unconfined", false),
    ] {
        annotated.metadata = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            annotations: Some([(key.to_owned(), value.to_owned())].into()),
            ..Default::default()
        });
        let checked = check_template(&annotated, &strict());
        assert_eq!(checked.is_ok(), ok, "{value}: {checked:?}");
    }
}
