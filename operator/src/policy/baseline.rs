//! The parts of the Pod Security Standards "baseline" profile that the rest of the tool policy
//! does not cover: seccomp and AppArmor `Unconfined`, SELinux options other than the container
//! types, an unmasked `/proc`, and sysctls outside the safe set
//! (<https://kubernetes.io/docs/concepts/security/pod-security-standards/#baseline>). The
//! policy's privileged switch permits them all, as it does privileged containers.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    AppArmorProfile, PodSecurityContext, SELinuxOptions, SeccompProfile, SecurityContext,
};

/// The sysctls the baseline profile allows (the kubelet's safe set).
pub const SAFE_SYSCTLS: [&str; 10] = [
    "kernel.shm_rmid_forced",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.tcp_syncookies",
    "net.ipv4.ping_group_range",
    "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.tcp_keepalive_time",
    "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
];

/// The SELinux types the baseline profile allows (besides none).
const SELINUX_TYPES: [&str; 4] = [
    "container_t",
    "container_init_t",
    "container_kvm_t",
    "container_engine_t",
];

/// The annotation prefix of a container's AppArmor profile (before the `appArmorProfile` field).
const APPARMOR_ANNOTATION: &str = "container.apparmor.security.beta.kubernetes.io/";

/// A field that breaks the profile: (path under the checked object, offending value).
pub type Finding = (String, Option<String>);

/// The first field of the pod's security context or annotations that breaks the profile.
pub fn pod(
    context: Option<&PodSecurityContext>,
    annotations: Option<&BTreeMap<String, String>>,
) -> Option<Finding> {
    let in_pod = |field: &str| format!("spec.template.spec.securityContext.{field}");
    if let Some(context) = context {
        let confinement = seccomp(context.seccomp_profile.as_ref())
            .or_else(|| app_armor(context.app_armor_profile.as_ref()))
            .or_else(|| se_linux(context.se_linux_options.as_ref()));
        if let Some((field, value)) = confinement {
            return Some((in_pod(&field), value));
        }
        for (i, sysctl) in context.sysctls.iter().flatten().enumerate() {
            if !SAFE_SYSCTLS.contains(&sysctl.name.as_str()) {
                return Some((
                    in_pod(&format!("sysctls[{i}].name")),
                    Some(sysctl.name.clone()),
                ));
            }
        }
    }
    annotations?.iter().find_map(|(key, value)| {
        let unconfined = key.starts_with(APPARMOR_ANNOTATION)
            && !(value == "runtime/default" || value.starts_with("localhost/"));
        unconfined.then(|| {
            (
                format!("spec.template.metadata.annotations[{key:?}]"),
                Some(value.clone()),
            )
        })
    })
}

/// The first field of a container's security context that breaks the profile: (field under
/// the container, offending value).
pub fn container(context: &SecurityContext) -> Option<Finding> {
    let found = seccomp(context.seccomp_profile.as_ref())
        .or_else(|| app_armor(context.app_armor_profile.as_ref()))
        .or_else(|| se_linux(context.se_linux_options.as_ref()))
        .or_else(|| {
            let mount = context.proc_mount.as_deref()?;
            (mount != "Default").then(|| ("procMount".to_owned(), Some(mount.to_owned())))
        })?;
    Some((format!("securityContext.{}", found.0), found.1))
}

fn seccomp(profile: Option<&SeccompProfile>) -> Option<Finding> {
    let kind = &profile?.type_;
    (kind == "Unconfined").then(|| ("seccompProfile.type".to_owned(), Some(kind.clone())))
}

fn app_armor(profile: Option<&AppArmorProfile>) -> Option<Finding> {
    let kind = &profile?.type_;
    (kind == "Unconfined").then(|| ("appArmorProfile.type".to_owned(), Some(kind.clone())))
}

fn se_linux(options: Option<&SELinuxOptions>) -> Option<Finding> {
    let options = options?;
    if let Some(kind) = options.type_.as_deref().filter(|t| !t.is_empty())
        && !SELINUX_TYPES.contains(&kind)
    {
        return Some(("seLinuxOptions.type".into(), Some(kind.to_owned())));
    }
    for (field, value) in [("user", &options.user), ("role", &options.role)] {
        if let Some(value) = value.as_deref().filter(|v| !v.is_empty()) {
            return Some((format!("seLinuxOptions.{field}"), Some(value.to_owned())));
        }
    }
    None
}
