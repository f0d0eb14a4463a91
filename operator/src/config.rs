//! Operator settings, read once from `MCP_OPERATOR_*` environment variables at startup.
//!
//! Invalid values fail startup with the variable's name; every default is documented on its
//! field. The log filter is `RUST_LOG` and is read by the tracing setup, not here.

use std::net::SocketAddr;
use std::time::Duration;

use crate::policy::ToolPolicy;

mod mcp_server;
mod scale;
pub use mcp_server::{MAX_TOOLS_CEILING, ServerLimits};
pub use scale::{MAX_FOLLOWER_STARTS, Scale};

/// Prefix of every operator environment variable.
pub const ENV_PREFIX: &str = "MCP_OPERATOR_";
/// Most names `MCP_OPERATOR_FORBIDDEN_SERVICE_ACCOUNTS` may list.
pub const MAX_FORBIDDEN_SERVICE_ACCOUNTS: usize = 64;

/// Typed operator configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Namespace to watch (`MCP_OPERATOR_NAMESPACE`); unset or empty watches all namespaces.
    pub namespace: Option<String>,
    /// Address of the /healthz, /readyz and /metrics server (`MCP_OPERATOR_HTTP_ADDR`,
    /// default `0.0.0.0:8080`).
    pub http_addr: SocketAddr,
    /// Shortest time between two status writes of one task within one status
    /// (`MCP_OPERATOR_STATUS_INTERVAL_MS`, default 1000). Status changes are written at once.
    pub status_interval: Duration,
    /// Safety-net requeue after a successful reconcile, before jitter
    /// (`MCP_OPERATOR_RESYNC_SECONDS`, default 300).
    pub resync: Duration,
    /// Deadline for Jobs of tools that set no `activeDeadlineSeconds`: the longest a task's
    /// tool may run (`MCP_OPERATOR_DEFAULT_ACTIVE_DEADLINE_SECONDS`, default 86400, one day;
    /// 0 means no deadline).
    pub default_active_deadline_seconds: Option<i64>,
    /// Name of the leader-election Lease (`MCP_OPERATOR_LEASE_NAME`, default
    /// `mcp-task-operator`).
    pub lease_name: String,
    /// Namespace of the Lease (`MCP_OPERATOR_LEASE_NAMESPACE`, default the pod's namespace from
    /// `POD_NAMESPACE`, else `default`).
    pub lease_namespace: String,
    /// How long a leader's Lease stays valid without renewal
    /// (`MCP_OPERATOR_LEASE_DURATION_SECONDS`, default 15, at most 3600). A standby takes the
    /// Lease over once it has gone this long without a renewal.
    pub lease_duration: Duration,
    /// How long the leader keeps acting without a successful renewal: past it, it stops its
    /// controllers and exits (`MCP_OPERATOR_LEASE_RENEW_DEADLINE_SECONDS`, default two thirds
    /// of the lease duration, 10 s for 15 s). Must be below the lease duration, so the leader
    /// stops before a standby can take the Lease over.
    pub lease_renew_deadline: Duration,
    /// Time between two attempts on the Lease, acquiring or renewing
    /// (`MCP_OPERATOR_LEASE_RETRY_PERIOD_SECONDS`, default a fifth of the renew deadline, 2 s
    /// for 15 s). Must be below the renew deadline.
    pub lease_retry_period: Duration,
    /// Deadline of every Kubernetes API call but watches and followed logs: a call the API
    /// server does not answer in time fails and is retried (`MCP_OPERATOR_API_TIMEOUT_SECONDS`,
    /// default 10, from 1 to 300). Lease calls also end at the renew deadline.
    pub api_timeout: Duration,
    /// How long one reconcile may run before the liveness probe (`/healthz`) fails and the
    /// kubelet restarts the operator (`MCP_OPERATOR_RECONCILE_STALL_SECONDS`, default 120, more
    /// than the API timeout, at most 86400).
    pub reconcile_stall: Duration,
    /// This replica's identity in the Lease (`POD_NAME`, else the host name, else `operator`).
    pub identity: String,
    /// What `McpTool` pod templates may not ask for (`MCP_OPERATOR_FORBIDDEN_SERVICE_ACCOUNTS`,
    /// a comma-separated list of ServiceAccount names, default none; and
    /// `MCP_OPERATOR_TOOL_POLICY_ALLOW_{PRIVILEGED,HOST_NAMESPACES,HOST_PATH}`, `true` or
    /// `false`, default `false`). See [`ToolPolicy`].
    pub tool_policy: ToolPolicy,
    /// How long a tool image pull may keep failing (`ErrImagePull`, `ImagePullBackOff`) before
    /// the task fails `ImagePullFailed`, from when the kubelet took the pod
    /// (`MCP_OPERATOR_IMAGE_PULL_GRACE_SECONDS`, default 120; 0 fails at the first error).
    pub image_pull_grace: Duration,
    /// How long a Secret or ConfigMap the tool container needs may be missing
    /// (`CreateContainerConfigError`) before the task fails `ContainerConfigError`, from when
    /// the kubelet took the pod (`MCP_OPERATOR_CONFIG_ERROR_GRACE_SECONDS`, default 60).
    pub config_error_grace: Duration,
    /// How long a task's pod may stay unschedulable before the task fails `Unschedulable`,
    /// from the pod's creation (`MCP_OPERATOR_UNSCHEDULABLE_SECONDS`, default 300).
    pub unschedulable_after: Duration,
    /// How long the API server may refuse a Job's pods (Pod Security, quota) before the task
    /// fails `PodRefused`, from the Job's first `FailedCreate` Event
    /// (`MCP_OPERATOR_POD_REFUSED_GRACE_SECONDS`, default 30).
    pub pod_refused_grace: Duration,
    /// How long a tool container may wait for its volumes (a Secret or ConfigMap volume that
    /// does not exist: `FailedMount` Events) before the task fails `VolumeMountFailed`, from
    /// when the kubelet took the pod (`MCP_OPERATOR_VOLUME_MOUNT_GRACE_SECONDS`, default 120).
    pub volume_mount_grace: Duration,
    /// How long a task's tool container may take to start at all, from its pod's creation (or
    /// the Job's start while it has no pod), whatever it waits for, before the task fails
    /// `StartTimeout` (`MCP_OPERATOR_START_TIMEOUT_SECONDS`, default 1800, 1 to 86400). Not
    /// counted while the Job waits for its queue's admission.
    pub start_timeout: Duration,
    /// How long a task's Job may stay suspended waiting for its queue's admission (Kueue;
    /// `McpTool.spec.queueName`) before the task fails `NotAdmitted`, from when the Job was
    /// suspended (`MCP_OPERATOR_ADMISSION_TIMEOUT_SECONDS`, default 3600, 1 to 86400).
    pub admission_timeout: Duration,
    /// How long a task may stay `input_required` without an answer before it fails
    /// `InputTimeout` and its Job is deleted, for tools that set no
    /// `McpTool.spec.inputTimeoutSeconds` (`MCP_OPERATOR_INPUT_TIMEOUT_SECONDS`, default 3600,
    /// 1 to 86400).
    pub input_timeout: Duration,
    /// How long a task's pod stays bound to a node that is unreachable or not ready before it
    /// is evicted (the `tolerationSeconds` of the NoExecute tolerations for
    /// `node.kubernetes.io/unreachable` and `node.kubernetes.io/not-ready` the operator adds,
    /// unless the tool's template tolerates that key itself;
    /// `MCP_OPERATOR_NODE_LOST_TOLERATION_SECONDS`, default 60, 0 to 86400). Without it
    /// Kubernetes' default is 300 s.
    pub node_lost_toleration: Duration,
    /// Image holding the static `mcp-bridge` at `/mcp-bridge`, copied into the pods of
    /// `McpServer` tools by an init container (`MCP_OPERATOR_BRIDGE_IMAGE`; unset: McpServers
    /// are not Ready, with reason `BridgeNotConfigured`).
    pub bridge_image: Option<String>,
    /// File holding the warm pools' claim key, shared by every replica so that a new leader
    /// claims the pods the last one started (`MCP_OPERATOR_WARM_KEY_FILE`, 32 to 4096 bytes;
    /// unset: a random key per process, and a new leader replaces the waiting pods).
    pub warm_key_file: Option<std::path::PathBuf>,
    /// Bounds on what one `McpServer`'s image can make the operator store
    /// (`MCP_OPERATOR_MCP_SERVER_MAX_TOOLS`, `..._MAX_TOOL_BYTES`, `..._MAX_BYTES`).
    pub mcp_server: ServerLimits,
    /// Bounds on the operator's work at scale (status writes, finished Jobs, log followers).
    pub scale: Scale,
}

/// A variable holds a value that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid value {value:?} for {name}: {expected}")]
pub struct ConfigError {
    /// The variable's full name.
    pub name: String,
    /// The value found.
    pub value: String,
    /// What the variable must hold.
    pub expected: &'static str,
}

impl Config {
    /// Reads the configuration from the process environment.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Reads the configuration through `lookup` (a variable's value by full name); for tests.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let var = |suffix: &str| setting(&lookup, suffix);
        let (_, namespace) = var("NAMESPACE");
        let identity = lookup("POD_NAME")
            .or_else(|| lookup("HOSTNAME"))
            .unwrap_or_else(|| "operator".to_owned());
        let lease_namespace = var("LEASE_NAMESPACE")
            .1
            .or_else(|| lookup("POD_NAMESPACE"))
            .unwrap_or_else(|| "default".to_owned());
        let lease_duration = bounded(var("LEASE_DURATION_SECONDS"), 15, 3600)?;
        let lease_renew_deadline = match var("LEASE_RENEW_DEADLINE_SECONDS") {
            (_, None) => lease_duration * 2 / 3,
            set => bounded(set, 1, 3600)?,
        };
        if lease_renew_deadline >= lease_duration {
            return Err(ConfigError {
                name: format!("{ENV_PREFIX}LEASE_RENEW_DEADLINE_SECONDS"),
                value: lease_renew_deadline.as_secs().to_string(),
                expected: "fewer seconds than MCP_OPERATOR_LEASE_DURATION_SECONDS (the leader \
                           must stop before a standby can take the Lease over)",
            });
        }
        let lease_retry_period = match var("LEASE_RETRY_PERIOD_SECONDS") {
            (_, None) => lease_renew_deadline / 5,
            set => bounded(set, 1, 3600)?,
        };
        if lease_retry_period >= lease_renew_deadline {
            return Err(ConfigError {
                name: format!("{ENV_PREFIX}LEASE_RETRY_PERIOD_SECONDS"),
                value: lease_retry_period.as_secs().to_string(),
                expected: "fewer seconds than the renew deadline \
                           (MCP_OPERATOR_LEASE_RENEW_DEADLINE_SECONDS, default two thirds of \
                           MCP_OPERATOR_LEASE_DURATION_SECONDS)",
            });
        }
        let api_timeout = bounded(var("API_TIMEOUT_SECONDS"), 10, 300)?;
        let reconcile_stall = bounded(var("RECONCILE_STALL_SECONDS"), 120, MAX_GRACE_SECONDS)?;
        if reconcile_stall <= api_timeout {
            return Err(ConfigError {
                name: format!("{ENV_PREFIX}RECONCILE_STALL_SECONDS"),
                value: reconcile_stall.as_secs().to_string(),
                expected: "more seconds than MCP_OPERATOR_API_TIMEOUT_SECONDS (a reconcile \
                           makes API calls of up to that long)",
            });
        }
        Ok(Self {
            namespace,
            http_addr: parse(
                var("HTTP_ADDR"),
                "0.0.0.0:8080",
                "a socket address such as 0.0.0.0:8080",
            )?,
            status_interval: Duration::from_millis(parse(
                var("STATUS_INTERVAL_MS"),
                "1000",
                "a number of milliseconds",
            )?),
            resync: Duration::from_secs(positive(var("RESYNC_SECONDS"), 300)?),
            default_active_deadline_seconds: match parse::<u64>(
                var("DEFAULT_ACTIVE_DEADLINE_SECONDS"),
                "86400",
                "a number of seconds (0: no deadline)",
            )? {
                0 => None,
                secs => Some(i64::try_from(secs).unwrap_or(i64::MAX)),
            },
            lease_name: var("LEASE_NAME")
                .1
                .unwrap_or_else(|| crate::NAME.to_owned()),
            lease_namespace,
            lease_duration,
            lease_renew_deadline,
            lease_retry_period,
            api_timeout,
            reconcile_stall,
            identity,
            tool_policy: ToolPolicy {
                forbidden_service_accounts: account_names(var("FORBIDDEN_SERVICE_ACCOUNTS"))?,
                allow_privileged: parse(
                    var("TOOL_POLICY_ALLOW_PRIVILEGED"),
                    "false",
                    BOOL_EXPECTED,
                )?,
                allow_host_namespaces: parse(
                    var("TOOL_POLICY_ALLOW_HOST_NAMESPACES"),
                    "false",
                    BOOL_EXPECTED,
                )?,
                allow_host_path: parse(var("TOOL_POLICY_ALLOW_HOST_PATH"), "false", BOOL_EXPECTED)?,
            },
            image_pull_grace: seconds(var("IMAGE_PULL_GRACE_SECONDS"), "120")?,
            config_error_grace: seconds(var("CONFIG_ERROR_GRACE_SECONDS"), "60")?,
            unschedulable_after: seconds(var("UNSCHEDULABLE_SECONDS"), "300")?,
            pod_refused_grace: seconds(var("POD_REFUSED_GRACE_SECONDS"), "30")?,
            volume_mount_grace: seconds(var("VOLUME_MOUNT_GRACE_SECONDS"), "120")?,
            start_timeout: bounded(var("START_TIMEOUT_SECONDS"), 1800, MAX_GRACE_SECONDS)?,
            admission_timeout: bounded(var("ADMISSION_TIMEOUT_SECONDS"), 3600, MAX_GRACE_SECONDS)?,
            input_timeout: bounded(var("INPUT_TIMEOUT_SECONDS"), 3600, MAX_GRACE_SECONDS)?,
            node_lost_toleration: seconds(var("NODE_LOST_TOLERATION_SECONDS"), "60")?,
            bridge_image: var("BRIDGE_IMAGE").1.filter(|i| !i.trim().is_empty()),
            warm_key_file: var("WARM_KEY_FILE")
                .1
                .filter(|f| !f.trim().is_empty())
                .map(Into::into),
            mcp_server: ServerLimits::from_lookup(&lookup)?,
            scale: Scale::from_lookup(&lookup)?,
        })
    }
}

/// `MCP_OPERATOR_<suffix>` through `lookup`: its full name, and its value unless unset or blank.
fn setting(lookup: impl Fn(&str) -> Option<String>, suffix: &str) -> (String, Option<String>) {
    let name = format!("{ENV_PREFIX}{suffix}");
    let value = lookup(&name).filter(|v| !v.trim().is_empty());
    (name, value)
}

fn parse<T: std::str::FromStr>(
    (name, value): (String, Option<String>),
    default: &str,
    expected: &'static str,
) -> Result<T, ConfigError> {
    let raw = value.unwrap_or_else(|| default.to_owned());
    raw.trim().parse().map_err(|_| ConfigError {
        name,
        value: raw.clone(),
        expected,
    })
}

const BOOL_EXPECTED: &str = "true or false";

/// A number of seconds, 0 allowed, at most a day (a longer wait is a typo).
fn seconds(var: (String, Option<String>), default: &str) -> Result<Duration, ConfigError> {
    let name = var.0.clone();
    let value: u64 = parse(var, default, SECONDS_EXPECTED)?;
    if value > MAX_GRACE_SECONDS {
        return Err(ConfigError {
            name,
            value: value.to_string(),
            expected: SECONDS_EXPECTED,
        });
    }
    Ok(Duration::from_secs(value))
}

/// Longest start grace period or deadline the operator accepts: one day.
pub const MAX_GRACE_SECONDS: u64 = 86_400;
const SECONDS_EXPECTED: &str = "a number of seconds from 0 to 86400";

/// A comma-separated list of ServiceAccount names (blank entries skipped), each a DNS-1123
/// subdomain as the API server requires, at most [`MAX_FORBIDDEN_SERVICE_ACCOUNTS`] of them.
fn account_names((name, value): (String, Option<String>)) -> Result<Vec<String>, ConfigError> {
    let raw = value.unwrap_or_default();
    let names: Vec<String> = raw
        .split(',')
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(str::to_owned)
        .collect();
    let invalid = |expected| ConfigError {
        name: name.clone(),
        value: raw.clone(),
        expected,
    };
    if names.len() > MAX_FORBIDDEN_SERVICE_ACCOUNTS {
        return Err(invalid("at most 64 comma-separated ServiceAccount names"));
    }
    if !names.iter().all(|n| is_dns_subdomain(n)) {
        return Err(invalid(
            "comma-separated ServiceAccount names (lowercase letters, digits, '-' and '.', \
             starting and ending with a letter or digit, at most 253 characters)",
        ));
    }
    Ok(names)
}

fn is_dns_subdomain(name: &str) -> bool {
    let alnum = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    let bytes = name.as_bytes();
    name.len() <= 253
        && bytes.first().copied().is_some_and(alnum)
        && bytes.last().copied().is_some_and(alnum)
        && bytes.iter().all(|&b| alnum(b) || b == b'-' || b == b'.')
}

/// A whole number of seconds from 1 to `max`.
fn bounded(var: (String, Option<String>), default: u64, max: u64) -> Result<Duration, ConfigError> {
    let name = var.0.clone();
    let value = parse::<u64>(var, &default.to_string(), "a positive integer")?;
    if value == 0 || value > max {
        return Err(ConfigError {
            name,
            value: value.to_string(),
            expected: match max {
                300 => "a number of seconds from 1 to 300",
                3600 => "a number of seconds from 1 to 3600",
                _ => "a number of seconds from 1 to 86400",
            },
        });
    }
    Ok(Duration::from_secs(value))
}

fn positive(var: (String, Option<String>), default: u64) -> Result<u64, ConfigError> {
    let name = var.0.clone();
    let value = parse::<u64>(var, &default.to_string(), "a positive integer")?;
    if value == 0 {
        return Err(ConfigError {
            name,
            value: "0".into(),
            expected: "a positive integer",
        });
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn config(vars: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let vars: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        Config::from_lookup(|name| vars.get(name).cloned())
    }

    #[test]
    fn defaults_apply_when_nothing_is_set() {
        let c = config(&[]).unwrap();
        assert_eq!(c.namespace, None);
        assert_eq!(c.http_addr, "0.0.0.0:8080".parse().unwrap());
        assert_eq!(c.status_interval, Duration::from_secs(1));
        assert_eq!(c.resync, Duration::from_secs(300));
        assert_eq!(c.default_active_deadline_seconds, Some(86_400));
        assert_eq!(c.lease_name, "mcp-task-operator");
        assert_eq!(c.lease_namespace, "default");
        assert_eq!(c.lease_duration, Duration::from_secs(15));
        assert_eq!(c.lease_renew_deadline, Duration::from_secs(10));
        assert_eq!(c.lease_retry_period, Duration::from_secs(2));
        assert_eq!(c.api_timeout, Duration::from_secs(10));
        assert_eq!(c.reconcile_stall, Duration::from_secs(120));
        assert_eq!(c.identity, "operator");
        assert_eq!(c.tool_policy, ToolPolicy::default());
        assert_eq!(c.image_pull_grace, Duration::from_secs(120));
        assert_eq!(c.config_error_grace, Duration::from_secs(60));
        assert_eq!(c.unschedulable_after, Duration::from_secs(300));
        assert_eq!(c.pod_refused_grace, Duration::from_secs(30));
        assert_eq!(c.volume_mount_grace, Duration::from_secs(120));
        assert_eq!(c.start_timeout, Duration::from_secs(1800));
        assert_eq!(c.admission_timeout, Duration::from_secs(3600));
        assert_eq!(c.input_timeout, Duration::from_secs(3600));
    }

    #[test]
    fn every_wait_of_a_task_is_bounded_by_default_and_a_run_unbounded_only_on_request() {
        let c = config(&[
            ("MCP_OPERATOR_DEFAULT_ACTIVE_DEADLINE_SECONDS", "0"),
            ("MCP_OPERATOR_VOLUME_MOUNT_GRACE_SECONDS", "0"),
            ("MCP_OPERATOR_START_TIMEOUT_SECONDS", "60"),
            ("MCP_OPERATOR_ADMISSION_TIMEOUT_SECONDS", "86400"),
            ("MCP_OPERATOR_INPUT_TIMEOUT_SECONDS", "5"),
        ])
        .unwrap();
        assert_eq!(c.default_active_deadline_seconds, None);
        assert_eq!(c.volume_mount_grace, Duration::ZERO);
        assert_eq!(c.start_timeout, Duration::from_secs(60));
        assert_eq!(c.admission_timeout, Duration::from_secs(86_400));
        assert_eq!(c.input_timeout, Duration::from_secs(5));
        for name in [
            "MCP_OPERATOR_START_TIMEOUT_SECONDS",
            "MCP_OPERATOR_ADMISSION_TIMEOUT_SECONDS",
            "MCP_OPERATOR_INPUT_TIMEOUT_SECONDS",
        ] {
            assert_eq!(config(&[(name, "0")]).unwrap_err().name, name);
            assert_eq!(config(&[(name, "86401")]).unwrap_err().name, name);
        }
        let err = config(&[("MCP_OPERATOR_DEFAULT_ACTIVE_DEADLINE_SECONDS", "-1")]).unwrap_err();
        assert_eq!(err.name, "MCP_OPERATOR_DEFAULT_ACTIVE_DEADLINE_SECONDS");
    }

    #[test]
    fn start_limits_are_seconds_up_to_a_day() {
        let c = config(&[
            ("MCP_OPERATOR_IMAGE_PULL_GRACE_SECONDS", "0"),
            ("MCP_OPERATOR_CONFIG_ERROR_GRACE_SECONDS", "5"),
            ("MCP_OPERATOR_UNSCHEDULABLE_SECONDS", "86400"),
            ("MCP_OPERATOR_POD_REFUSED_GRACE_SECONDS", "1"),
        ])
        .unwrap();
        assert_eq!(c.image_pull_grace, Duration::ZERO);
        assert_eq!(c.config_error_grace, Duration::from_secs(5));
        assert_eq!(c.unschedulable_after, Duration::from_secs(86_400));
        assert_eq!(c.pod_refused_grace, Duration::from_secs(1));
        let err = config(&[("MCP_OPERATOR_UNSCHEDULABLE_SECONDS", "86401")]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid value \"86401\" for MCP_OPERATOR_UNSCHEDULABLE_SECONDS: \
             a number of seconds from 0 to 86400"
        );
        assert!(config(&[("MCP_OPERATOR_IMAGE_PULL_GRACE_SECONDS", "-1")]).is_err());
    }

    #[test]
    fn reads_every_variable() {
        let c = config(&[
            ("MCP_OPERATOR_NAMESPACE", "tools"),
            ("MCP_OPERATOR_HTTP_ADDR", "127.0.0.1:9000"),
            ("MCP_OPERATOR_STATUS_INTERVAL_MS", "250"),
            ("MCP_OPERATOR_RESYNC_SECONDS", "60"),
            ("MCP_OPERATOR_DEFAULT_ACTIVE_DEADLINE_SECONDS", "3600"),
            ("MCP_OPERATOR_LEASE_NAME", "lease"),
            ("POD_NAMESPACE", "mcp-system"),
            ("POD_NAME", "operator-0"),
            (
                "MCP_OPERATOR_FORBIDDEN_SERVICE_ACCOUNTS",
                " mto-operator, ,mto-mcp-frontend ",
            ),
            ("MCP_OPERATOR_TOOL_POLICY_ALLOW_PRIVILEGED", "true"),
            ("MCP_OPERATOR_TOOL_POLICY_ALLOW_HOST_NAMESPACES", "false"),
            ("MCP_OPERATOR_TOOL_POLICY_ALLOW_HOST_PATH", "true"),
        ])
        .unwrap();
        assert_eq!(c.namespace.as_deref(), Some("tools"));
        assert_eq!(c.http_addr.port(), 9000);
        assert_eq!(c.status_interval, Duration::from_millis(250));
        assert_eq!(c.resync, Duration::from_secs(60));
        assert_eq!(c.default_active_deadline_seconds, Some(3600));
        assert_eq!(c.lease_name, "lease");
        assert_eq!(c.lease_namespace, "mcp-system");
        assert_eq!(c.identity, "operator-0");
        assert_eq!(
            c.tool_policy,
            ToolPolicy {
                forbidden_service_accounts: vec!["mto-operator".into(), "mto-mcp-frontend".into()],
                allow_privileged: true,
                allow_host_namespaces: false,
                allow_host_path: true,
            }
        );
    }

    #[test]
    fn tool_policy_values_are_checked() {
        let err = config(&[("MCP_OPERATOR_TOOL_POLICY_ALLOW_HOST_PATH", "yes")]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid value \"yes\" for MCP_OPERATOR_TOOL_POLICY_ALLOW_HOST_PATH: true or false"
        );
        let long = "a".repeat(254);
        for bad in ["Operator", "a/b", "-a", "a b,c", long.as_str()] {
            let err = config(&[("MCP_OPERATOR_FORBIDDEN_SERVICE_ACCOUNTS", bad)]).unwrap_err();
            assert_eq!(err.name, "MCP_OPERATOR_FORBIDDEN_SERVICE_ACCOUNTS", "{bad}");
        }
        let many = vec!["sa"; MAX_FORBIDDEN_SERVICE_ACCOUNTS + 1].join(",");
        let err =
            config(&[("MCP_OPERATOR_FORBIDDEN_SERVICE_ACCOUNTS", many.as_str())]).unwrap_err();
        assert!(
            err.to_string()
                .ends_with("at most 64 comma-separated ServiceAccount names")
        );
        let most = vec!["sa"; MAX_FORBIDDEN_SERVICE_ACCOUNTS].join(",");
        assert!(config(&[("MCP_OPERATOR_FORBIDDEN_SERVICE_ACCOUNTS", most.as_str())]).is_ok());
    }

    #[test]
    fn invalid_values_name_the_variable() {
        let err = config(&[("MCP_OPERATOR_RESYNC_SECONDS", "soon")]).unwrap_err();
        assert_eq!(err.name, "MCP_OPERATOR_RESYNC_SECONDS");
        assert_eq!(
            err.to_string(),
            "invalid value \"soon\" for MCP_OPERATOR_RESYNC_SECONDS: a positive integer"
        );
        assert!(config(&[("MCP_OPERATOR_LEASE_DURATION_SECONDS", "0")]).is_err());
        assert!(config(&[("MCP_OPERATOR_HTTP_ADDR", "localhost")]).is_err());
    }

    #[test]
    fn the_leader_stops_before_its_lease_can_be_taken_over() {
        let c = config(&[("MCP_OPERATOR_LEASE_DURATION_SECONDS", "4")]).unwrap();
        assert!(c.lease_retry_period < c.lease_renew_deadline);
        assert!(c.lease_renew_deadline < c.lease_duration);
        let c = config(&[
            ("MCP_OPERATOR_LEASE_DURATION_SECONDS", "30"),
            ("MCP_OPERATOR_LEASE_RENEW_DEADLINE_SECONDS", "20"),
            ("MCP_OPERATOR_LEASE_RETRY_PERIOD_SECONDS", "5"),
            ("MCP_OPERATOR_API_TIMEOUT_SECONDS", "300"),
            ("MCP_OPERATOR_RECONCILE_STALL_SECONDS", "301"),
        ])
        .unwrap();
        assert_eq!(c.lease_renew_deadline, Duration::from_secs(20));
        assert_eq!(c.lease_retry_period, Duration::from_secs(5));
        assert_eq!(c.api_timeout, Duration::from_secs(300));
        assert_eq!(c.reconcile_stall, Duration::from_secs(301));
        let err = config(&[("MCP_OPERATOR_LEASE_RENEW_DEADLINE_SECONDS", "15")]).unwrap_err();
        assert_eq!(err.name, "MCP_OPERATOR_LEASE_RENEW_DEADLINE_SECONDS");
        assert!(
            err.to_string()
                .contains("fewer seconds than MCP_OPERATOR_LEASE_DURATION")
        );
        let err = config(&[("MCP_OPERATOR_LEASE_RETRY_PERIOD_SECONDS", "10")]).unwrap_err();
        assert_eq!(err.name, "MCP_OPERATOR_LEASE_RETRY_PERIOD_SECONDS");
        let err = config(&[("MCP_OPERATOR_API_TIMEOUT_SECONDS", "301")]).unwrap_err();
        assert!(
            err.to_string()
                .ends_with("a number of seconds from 1 to 300"),
            "{err}"
        );
        let err = config(&[("MCP_OPERATOR_RECONCILE_STALL_SECONDS", "10")]).unwrap_err();
        assert_eq!(err.name, "MCP_OPERATOR_RECONCILE_STALL_SECONDS");
        let err = config(&[("MCP_OPERATOR_LEASE_DURATION_SECONDS", "3601")]).unwrap_err();
        assert_eq!(err.name, "MCP_OPERATOR_LEASE_DURATION_SECONDS");
    }

    #[test]
    fn blank_values_count_as_unset() {
        let c = config(&[("MCP_OPERATOR_NAMESPACE", " ")]).unwrap();
        assert_eq!(c.namespace, None);
    }
}
