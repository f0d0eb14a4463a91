//! The operator's tool policy: what an `McpTool`'s pod template may not ask for, because the
//! operator (not the tool author) creates the Job that runs it.
//!
//! Pure: a pod template and the policy in, the first violation (with its field path) out. The
//! McpTool controller checks it for `Ready`, the McpTask controller again on every Job it builds.

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ContainerPort, PodSpec, PodTemplateSpec, SecurityContext};

/// Capabilities a container may add: the Pod Security Standards "baseline" list
/// (<https://kubernetes.io/docs/concepts/security/pod-security-standards/>).
pub const BASELINE_CAPABILITIES: [&str; 13] = [
    "AUDIT_WRITE",
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "KILL",
    "MKNOD",
    "NET_BIND_SERVICE",
    "SETFCAP",
    "SETGID",
    "SETPCAP",
    "SETUID",
    "SYS_CHROOT",
];

/// What tool templates may ask for (`MCP_OPERATOR_FORBIDDEN_SERVICE_ACCOUNTS` and
/// `MCP_OPERATOR_TOOL_POLICY_*`); by default no switch allows anything and no name is listed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolPolicy {
    /// ServiceAccount names no tool may run as, in any namespace: the operator's and the front
    /// end's (`MCP_OPERATOR_FORBIDDEN_SERVICE_ACCOUNTS`, default none).
    pub forbidden_service_accounts: Vec<String>,
    /// Allows privileged containers, added capabilities beyond the baseline list, Windows
    /// host-process containers, and the rest the Pod Security "baseline" profile forbids:
    /// seccomp or AppArmor `Unconfined`, SELinux options beyond the container types, a
    /// `procMount` other than `Default`, unsafe sysctls ([`baseline`];
    /// `MCP_OPERATOR_TOOL_POLICY_ALLOW_PRIVILEGED`, default false).
    pub allow_privileged: bool,
    /// Allows `hostNetwork`, `hostPID`, `hostIPC` and container `hostPort`s
    /// (`MCP_OPERATOR_TOOL_POLICY_ALLOW_HOST_NAMESPACES`, default false).
    pub allow_host_namespaces: bool,
    /// Allows `hostPath` volumes (`MCP_OPERATOR_TOOL_POLICY_ALLOW_HOST_PATH`, default false).
    pub allow_host_path: bool,
}

/// Which rule a template breaks; says what, if anything, permits it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// A ServiceAccount of the project (never permitted).
    ServiceAccount,
    /// Privilege: `privileged`, added capabilities, Windows host process, and the rest of the
    /// Pod Security baseline's security context rules.
    Privileged,
    /// Host namespaces and host ports.
    HostNamespaces,
    /// `hostPath` volumes.
    HostPath,
}

impl Rule {
    /// What the message adds after "operator tool policy".
    fn hint(self) -> &'static str {
        match self {
            Self::ServiceAccount => {
                ": the operator's and the front end's ServiceAccounts are reserved"
            }
            Self::Privileged => "; MCP_OPERATOR_TOOL_POLICY_ALLOW_PRIVILEGED=true permits it",
            Self::HostNamespaces => {
                "; MCP_OPERATOR_TOOL_POLICY_ALLOW_HOST_NAMESPACES=true permits it"
            }
            Self::HostPath => "; MCP_OPERATOR_TOOL_POLICY_ALLOW_HOST_PATH=true permits it",
        }
    }
}

/// A field of a pod template that the tool policy does not allow.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}{} is not allowed (operator tool policy{})", value_text(.value), .rule.hint())]
pub struct PolicyViolation {
    /// The field's path from the object (`spec.template.spec.containers[0].securityContext.privileged`);
    /// the same for an `McpTool` and the Job built from it.
    pub path: String,
    /// The offending value when it is not just `true` (a name, a capability, a port).
    pub value: Option<String>,
    /// The rule broken.
    pub rule: Rule,
}

fn value_text(value: &Option<String>) -> String {
    value
        .as_ref()
        .map(|v| format!(" {v:?}"))
        .unwrap_or_default()
}

/// Checks the pod template of a Job the operator is about to create.
pub fn check_job(job: &Job, policy: &ToolPolicy) -> Result<(), PolicyViolation> {
    job.spec
        .as_ref()
        .map_or(Ok(()), |spec| check_template(&spec.template, policy))
}

/// Checks a pod template (`spec.template` of an `McpTool` or a Job) against `policy`; the first
/// violation in field order is reported.
pub fn check_template(
    template: &PodTemplateSpec,
    policy: &ToolPolicy,
) -> Result<(), PolicyViolation> {
    let Some(spec) = &template.spec else {
        return Ok(());
    };
    let base = "spec.template.spec";
    let violation = |field: String, value: Option<String>, rule| {
        Err(PolicyViolation {
            path: format!("{base}.{field}"),
            value,
            rule,
        })
    };
    // `serviceAccount` is the deprecated alias the API server still honours when
    // `serviceAccountName` is empty.
    for (field, account) in [
        ("serviceAccountName", &spec.service_account_name),
        ("serviceAccount", &spec.service_account),
    ] {
        if let Some(account) = account
            && policy
                .forbidden_service_accounts
                .iter()
                .any(|f| f == account.trim())
        {
            return violation(field.into(), Some(account.clone()), Rule::ServiceAccount);
        }
    }
    if !policy.allow_host_namespaces {
        for (field, set) in [
            ("hostNetwork", spec.host_network),
            ("hostPID", spec.host_pid),
            ("hostIPC", spec.host_ipc),
        ] {
            if set == Some(true) {
                return violation(field.into(), None, Rule::HostNamespaces);
            }
        }
    }
    if !policy.allow_host_path {
        for (i, volume) in spec.volumes.iter().flatten().enumerate() {
            if volume.host_path.is_some() {
                return violation(format!("volumes[{i}].hostPath"), None, Rule::HostPath);
            }
        }
    }
    if !policy.allow_privileged
        && let Some(windows) = spec
            .security_context
            .as_ref()
            .and_then(|s| s.windows_options.as_ref())
        && windows.host_process == Some(true)
    {
        return violation(
            "securityContext.windowsOptions.hostProcess".into(),
            None,
            Rule::Privileged,
        );
    }
    if !policy.allow_privileged
        && let Some((path, value)) = baseline::pod(
            spec.security_context.as_ref(),
            template
                .metadata
                .as_ref()
                .and_then(|m| m.annotations.as_ref()),
        )
    {
        return Err(PolicyViolation {
            path,
            value,
            rule: Rule::Privileged,
        });
    }
    for (list, i, context, ports) in containers(spec) {
        let at = |field: &str| format!("{list}[{i}].{field}");
        if !policy.allow_privileged
            && let Some((field, value)) = privilege(context)
        {
            return violation(at(&field), value, Rule::Privileged);
        }
        if !policy.allow_host_namespaces
            && let Some((j, port)) = ports
                .iter()
                .enumerate()
                .find_map(|(j, p)| p.host_port.filter(|&h| h != 0).map(|h| (j, h)))
        {
            return violation(
                at(&format!("ports[{j}].hostPort")),
                Some(port.to_string()),
                Rule::HostNamespaces,
            );
        }
    }
    Ok(())
}

/// A container as the rules see it: (list field, index, security context, ports).
type ContainerView<'a> = (
    &'static str,
    usize,
    Option<&'a SecurityContext>,
    &'a [ContainerPort],
);

/// Every container of the pod (regular, init, ephemeral).
fn containers(spec: &PodSpec) -> Vec<ContainerView<'_>> {
    let regular = spec.containers.iter();
    let init = spec.init_containers.iter().flatten();
    let ephemeral = spec.ephemeral_containers.iter().flatten();
    numbered(
        "containers",
        regular.map(|c| (&c.security_context, &c.ports)),
    )
    .chain(numbered(
        "initContainers",
        init.map(|c| (&c.security_context, &c.ports)),
    ))
    .chain(numbered(
        "ephemeralContainers",
        ephemeral.map(|c| (&c.security_context, &c.ports)),
    ))
    .collect()
}

/// The (security context, ports) of one list of containers, numbered under its field name.
fn numbered<'a>(
    field: &'static str,
    list: impl Iterator<Item = (&'a Option<SecurityContext>, &'a Option<Vec<ContainerPort>>)>,
) -> impl Iterator<Item = ContainerView<'a>> {
    list.enumerate().map(move |(i, (context, ports))| {
        let ports = ports.as_deref().unwrap_or_default();
        (field, i, context.as_ref(), ports)
    })
}

/// The first privilege a container's security context asks for: (field under the container,
/// offending value when not `true`).
fn privilege(context: Option<&SecurityContext>) -> Option<(String, Option<String>)> {
    let context = context?;
    if context.privileged == Some(true) {
        return Some(("securityContext.privileged".into(), None));
    }
    if context
        .windows_options
        .as_ref()
        .is_some_and(|w| w.host_process == Some(true))
    {
        return Some(("securityContext.windowsOptions.hostProcess".into(), None));
    }
    let added = context.capabilities.as_ref().and_then(|c| c.add.as_ref());
    added
        .into_iter()
        .flatten()
        .enumerate()
        .find_map(|(k, cap)| {
            (!is_baseline_capability(cap)).then(|| {
                (
                    format!("securityContext.capabilities.add[{k}]"),
                    Some(cap.clone()),
                )
            })
        })
        .or_else(|| baseline::container(context))
}

/// Whether `cap` is on the baseline list. Container runtimes upper-case a capability and add
/// the `CAP_` prefix when it is missing, so `net_bind_service` and `CAP_NET_BIND_SERVICE` are
/// the same capability as `NET_BIND_SERVICE`.
fn is_baseline_capability(cap: &str) -> bool {
    let upper = cap.trim().to_ascii_uppercase();
    let name = upper.strip_prefix("CAP_").unwrap_or(&upper);
    BASELINE_CAPABILITIES.contains(&name)
}

mod baseline;
#[cfg(test)]
mod tests;
