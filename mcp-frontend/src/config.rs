//! Front-end settings, read once from `MCP_FRONTEND_*` environment variables.
//!
//! Every default is documented on its field; an invalid value fails startup with the variable's
//! name. Parsing goes through a lookup function so tests need not touch the process environment.

use std::net::SocketAddr;
use std::time::Duration;

use crate::bounds::{ANNOTATION_VALUE_CEILING, ENV_VALUE_CEILING, LISTEN_TASK_IDS_CEILING};
use crate::quota::QuotaLimits;

/// Prefix of every environment variable the front end reads.
pub const ENV_PREFIX: &str = "MCP_FRONTEND_";

/// How callers are authenticated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthMode {
    /// No authentication: every caller is anonymous. Refused unless `ALLOW_UNAUTHENTICATED=true`.
    None,
    /// Static bearer tokens from a file mounted from a Secret.
    StaticTokens,
    /// Kubernetes TokenReview with configured audiences.
    TokenReview,
}

/// How tool calls are authorized once the caller is known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthorizationMode {
    /// Every authenticated caller may list and call every tool.
    None,
    /// Kubernetes RBAC: a SubjectAccessReview per caller and tool (see [`crate::authz`]).
    Rbac,
}

/// Typed configuration of the MCP front end.
#[derive(Debug, Clone)]
pub struct Config {
    /// `BIND_ADDR`: listen address. Default `127.0.0.1:8080` (localhost only, as MCP asks of
    /// local servers); the chart sets `0.0.0.0:8080`.
    pub bind_addr: SocketAddr,
    /// `NAMESPACE`: namespace whose `McpTool`s are served and where `McpTask`s are created.
    /// Default `default`.
    pub namespace: String,
    /// `ALLOWED_HOSTS`: comma-separated `Host` values accepted on `/mcp` (`name` matches any
    /// port, `name:port` only that port). Default `localhost,127.0.0.1,[::1]`.
    pub allowed_hosts: Vec<String>,
    /// `ALLOWED_ORIGINS`: comma-separated browser origins (`scheme://host[:port]`, port `*` =
    /// any) accepted on `/mcp`; when set, only these. Default empty: an `Origin` is accepted
    /// when it is `http(s)://` on a host `ALLOWED_HOSTS` accepts (by default this machine), so
    /// DNS-rebinding and foreign pages get 403 (see [`crate::origin`]).
    pub allowed_origins: Vec<String>,
    /// `MAX_BODY_BYTES`: largest accepted request body. Default 1 MiB.
    pub max_body_bytes: usize,
    /// `REQUEST_TIMEOUT_SECONDS`: limit on one non-streaming request, including synchronous
    /// tool calls (which also stop at their tool's `syncTimeoutSeconds`). Default 120.
    pub request_timeout: Duration,
    /// `API_TIMEOUT_SECONDS`: limit on each call to the Kubernetes API server a request makes
    /// (create, read on a cache miss, patch); past it the request gets a -32603 saying the API
    /// server is unreachable, instead of hanging on a dead connection. Default 10.
    pub api_timeout: Duration,
    /// `MAX_CONCURRENT_REQUESTS`: requests served at once before new ones wait. Default 512.
    pub max_concurrent_requests: usize,
    /// `MAX_SUBSCRIPTIONS`: open `subscriptions/listen` streams per replica; more are refused
    /// with -32603 "Subscription limit reached". Default 1000.
    pub max_subscriptions: usize,
    /// `POLL_RATE_PER_SECOND`: `tasks/get` calls per caller and second for IDs that are not
    /// the caller's live tasks (unknown, someone else's, expired), with bursts of twice that;
    /// past it the caller's next `tasks/get` gets -31001 with `data.retryAfterMs` before any
    /// lookup. Polls of the caller's own tasks are limited per task instead
    /// ([`Limits::poll_burst_per_task`]). Default 0: no limit.
    pub poll_rate_per_second: f64,
    /// `AUTH_MODE`: `none`, `static` or `tokenreview`. Default `tokenreview`.
    pub auth_mode: AuthMode,
    /// `ALLOW_UNAUTHENTICATED`: must be `true` for `AUTH_MODE=none`. Default `false`.
    pub allow_unauthenticated: bool,
    /// `STATIC_TOKENS_FILE`: for `AUTH_MODE=static`, a CSV file of `token,user` lines (the
    /// kube-apiserver token file format), usually mounted from a Secret. Required in that mode.
    pub static_tokens_file: Option<String>,
    /// `TOKEN_AUDIENCES`: for `AUTH_MODE=tokenreview`, comma-separated audiences a token must be
    /// issued for (`kubectl create token <sa> --audience <aud>`). Required in that mode: a
    /// token for the API server's own audience is never accepted (MCP forbids token
    /// passthrough). The chart sets `mcp-task-operator`.
    pub token_audiences: Vec<String>,
    /// `AUTHORIZATION_MODE`: `rbac` or `none`. Default `rbac`: a caller lists and calls only
    /// the tools RBAC lets it `call` (`mcptools.mcptasks.io`, by object name). With
    /// `AUTH_MODE=none` RBAC is asked about `system:anonymous` in group
    /// `system:unauthenticated`, as kube-apiserver treats anonymous requests.
    pub authorization_mode: AuthorizationMode,
    /// `RESOURCE_URL`: the public URL of `/mcp`, named in the OAuth protected resource metadata
    /// and in `WWW-Authenticate`. Default unset (no metadata document).
    pub resource_url: Option<String>,
    /// `AUTHORIZATION_SERVERS`: comma-separated OAuth authorization server URLs listed in the
    /// protected resource metadata. Default empty.
    pub authorization_servers: Vec<String>,
    /// `DISCOVER_TTL_MS`: cache lifetime clients may give `server/discover`. Default 60000.
    pub discover_ttl_ms: u64,
    /// `TOOLS_LIST_TTL_MS`: cache lifetime clients may give `tools/list`. Default 5000.
    pub tools_list_ttl_ms: u64,
    /// `FAST_GET`: answer well-formed `tasks/get` polls of known tasks from answers serialized
    /// once per task state (`crate::fastget`); anything unusual takes the full path either
    /// way. Default `true`.
    pub fast_get: bool,
    /// `FAST_CALL`: serve well-formed `tools/call` requests of tasks clients without rmcp's
    /// per-request service (`crate::fastcall`), by the same code; anything unusual takes the
    /// full path either way. Default `true`.
    pub fast_call: bool,
    /// `ANSWER_CACHE_BYTES`: the most serialized `tasks/get` answers the fast path keeps, in
    /// bytes (an answer larger than a quarter of it is never kept). Default 67108864 (64 MiB).
    pub answer_cache_bytes: usize,
    /// `GZIP_MIN_BYTES`: the fast path sends a `tasks/get` answer of at least this many bytes
    /// gzip-coded to a client that accepts it (`Accept-Encoding`), compressed once per task
    /// state; 0 turns it off. Default 8192.
    pub gzip_min_bytes: usize,
    /// `TRUST_FORWARDED_FOR`: take a request's source (for the per-source caps) from the last
    /// address of its `X-Forwarded-For` instead of the connection's peer. Set it only behind a
    /// proxy that appends the client's address (an ingress controller); otherwise a client
    /// could name any source. Default `false`.
    pub trust_forwarded_for: bool,
    /// Per-caller quotas and input bounds (see [`Limits`]).
    pub limits: Limits,
}

/// Per-caller quotas and bounds on what one request may make the cluster store. Each refusal
/// names its limit; see the error codes in [`crate::error`].
#[derive(Debug, Clone, PartialEq)]
pub struct Limits {
    /// `CALL_RATE_PER_SECOND`: `tools/call` requests per caller and second, refilling a bucket
    /// of `CALL_BURST`; faster calls get -31001 with `data.retryAfterMs`. Default 10; 0: no
    /// limit.
    pub call_rate_per_second: f64,
    /// `CALL_BURST`: `tools/call` requests a caller may make at once. Default 50.
    pub call_burst: f64,
    /// `MAX_ACTIVE_TASKS_PER_CALLER`: tasks (`spec.owner`) not yet completed, failed or
    /// cancelled; a `tools/call` beyond it gets -31002 and creates nothing. Default 100; 0: no
    /// limit.
    pub max_active_tasks_per_caller: usize,
    /// `MAX_STORED_TASKS_PER_CALLER`: tasks (`spec.owner`) stored, finished ones included until
    /// their TTL deletes them; a `tools/call` beyond it gets -31002 and creates nothing. Every
    /// replica and the operator cache every stored task. Default 1000; 0: no limit.
    pub max_stored_tasks_per_caller: usize,
    /// `MAX_STORED_BYTES_PER_CALLER`: bytes of the arguments, answers and results of a caller's
    /// stored tasks, as stored ([`mcp_task_operator_crds::budget::caller_bytes`]); a
    /// `tools/call` once they reach it gets -31002. Default 67108864 (64 MiB); 0: no limit.
    pub max_stored_bytes_per_caller: usize,
    /// `MAX_ARGUMENT_BYTES`: serialized `tools/call` arguments, each `$` counted twice (as the
    /// tool container receives them, in one environment variable). Default 65536, at most
    /// [`ENV_VALUE_CEILING`].
    pub max_argument_bytes: usize,
    /// `MAX_START_INPUT_BYTES`: serialized `inputResponses` of a `tools/call` (answers to a
    /// tool's `startInputs`, also one environment variable), counted likewise. Default 65536,
    /// at most [`ENV_VALUE_CEILING`].
    pub max_start_input_bytes: usize,
    /// `MAX_INPUT_RESPONSES_BYTES`: serialized `inputResponses` a task holds after a
    /// `tasks/update` (they travel in one pod annotation). Default 65536, at most
    /// [`ANNOTATION_VALUE_CEILING`].
    pub max_input_responses_bytes: usize,
    /// `MAX_LISTEN_TASK_IDS`: task IDs one `subscriptions/listen` may name, checked before any
    /// lookup. Default 100, at most [`LISTEN_TASK_IDS_CEILING`].
    pub max_listen_task_ids: usize,
    /// `POLL_BURST_PER_TASK`: polls (`tasks/get`) of one of the caller's tasks allowed at once,
    /// refilled at one per the `pollIntervalMs` its answers advertise; a faster poll gets
    /// -31001 with `data.retryAfterMs`. A client polling each of its tasks at the advertised
    /// interval is never refused, however many tasks it has. Default 0: no limit; at most
    /// [`POLL_BURST_CEILING`].
    pub poll_burst_per_task: usize,
    /// `MAX_REQUESTS_PER_SOURCE`: `/mcp` requests one client address (see
    /// `TRUST_FORWARDED_FOR`) may have in flight, counted from before authentication; past it
    /// HTTP 429 with -31002 naming the setting. Default 256; 0: no cap.
    pub max_requests_per_source: usize,
    /// `MAX_REQUESTS_PER_CALLER`: `/mcp` requests one authenticated caller may have in flight
    /// (a synchronous `tools/call` holds one until its result); past it HTTP 429 with -31002
    /// naming the setting. Not applied with `AUTH_MODE=none`, where every caller is one.
    /// Default 128; 0: no cap.
    pub max_requests_per_caller: usize,
    /// `MAX_SUBSCRIPTIONS_PER_SOURCE`: open `subscriptions/listen` streams per client address;
    /// past it -31002 naming the setting. Default 500; 0: no cap.
    pub max_subscriptions_per_source: usize,
    /// `MAX_SUBSCRIPTIONS_PER_CALLER`: open `subscriptions/listen` streams per caller; past it
    /// -31002 naming the setting. Not applied with `AUTH_MODE=none`. Default 100; 0: no cap.
    pub max_subscriptions_per_caller: usize,
}

impl Limits {
    /// The per-caller quota of `tools/call`.
    pub fn quota(&self) -> QuotaLimits {
        QuotaLimits {
            active: self.max_active_tasks_per_caller,
            stored: self.max_stored_tasks_per_caller,
            bytes: self.max_stored_bytes_per_caller,
        }
    }
}

/// Largest `POLL_BURST_PER_TASK`: beyond it the limit would stop nothing.
pub const POLL_BURST_CEILING: usize = 1000;

impl Limits {
    fn from_get(get: &impl Fn(&'static str) -> Option<String>) -> Result<Self, ConfigError> {
        let at_most = |name: &'static str, default: usize, ceiling: usize| {
            let value: usize = parse(get, name, Some(default))?;
            if value > ceiling {
                return Err(ConfigError::Invalid {
                    name,
                    value: value.to_string(),
                    reason: format!("at most {ceiling}"),
                });
            }
            Ok(value)
        };
        Ok(Self {
            call_rate_per_second: parse(get, "CALL_RATE_PER_SECOND", Some(10.0))?,
            call_burst: parse(get, "CALL_BURST", Some(50.0))?,
            max_active_tasks_per_caller: parse(get, "MAX_ACTIVE_TASKS_PER_CALLER", Some(100))?,
            max_stored_tasks_per_caller: parse(get, "MAX_STORED_TASKS_PER_CALLER", Some(1000))?,
            max_stored_bytes_per_caller: parse(
                get,
                "MAX_STORED_BYTES_PER_CALLER",
                Some(64 * 1024 * 1024),
            )?,
            max_argument_bytes: at_most("MAX_ARGUMENT_BYTES", 64 * 1024, ENV_VALUE_CEILING)?,
            max_start_input_bytes: at_most("MAX_START_INPUT_BYTES", 64 * 1024, ENV_VALUE_CEILING)?,
            max_input_responses_bytes: at_most(
                "MAX_INPUT_RESPONSES_BYTES",
                64 * 1024,
                ANNOTATION_VALUE_CEILING,
            )?,
            max_listen_task_ids: at_most("MAX_LISTEN_TASK_IDS", 100, LISTEN_TASK_IDS_CEILING)?,
            poll_burst_per_task: at_most("POLL_BURST_PER_TASK", 0, POLL_BURST_CEILING)?,
            max_requests_per_source: parse(get, "MAX_REQUESTS_PER_SOURCE", Some(256))?,
            max_requests_per_caller: parse(get, "MAX_REQUESTS_PER_CALLER", Some(128))?,
            max_subscriptions_per_source: parse(get, "MAX_SUBSCRIPTIONS_PER_SOURCE", Some(500))?,
            max_subscriptions_per_caller: parse(get, "MAX_SUBSCRIPTIONS_PER_CALLER", Some(100))?,
        })
    }
}

/// A configuration value that could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The variable holds a value of the wrong shape.
    #[error("invalid value {value:?} for {ENV_PREFIX}{name}: {reason}")]
    Invalid {
        /// Variable name without the prefix.
        name: &'static str,
        /// The value found.
        value: String,
        /// Why it was refused.
        reason: String,
    },
    /// Authentication is off without the explicit opt-in.
    #[error("{ENV_PREFIX}AUTH_MODE=none needs {ENV_PREFIX}ALLOW_UNAUTHENTICATED=true")]
    UnauthenticatedNotAllowed,
}

impl Config {
    /// Reads the configuration from the process environment.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|name| std::env::var(format!("{ENV_PREFIX}{name}")).ok())
    }

    /// Reads the configuration through `lookup`, which maps an unprefixed name to its value.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let get = |name: &'static str| lookup(name).filter(|v| !v.trim().is_empty());
        let config = Self {
            bind_addr: parse(&get, "BIND_ADDR", "127.0.0.1:8080".parse().ok())?,
            namespace: get("NAMESPACE").unwrap_or_else(|| "default".to_owned()),
            allowed_hosts: get("ALLOWED_HOSTS")
                .map(|v| split_list(&v))
                .unwrap_or_else(|| vec!["localhost".into(), "127.0.0.1".into(), "[::1]".into()]),
            allowed_origins: get("ALLOWED_ORIGINS")
                .map(|v| split_list(&v))
                .unwrap_or_default(),
            max_body_bytes: parse(&get, "MAX_BODY_BYTES", Some(1024 * 1024))?,
            request_timeout: Duration::from_secs(parse(
                &get,
                "REQUEST_TIMEOUT_SECONDS",
                Some(120),
            )?),
            api_timeout: Duration::from_secs(parse(&get, "API_TIMEOUT_SECONDS", Some(10))?),
            max_concurrent_requests: parse(&get, "MAX_CONCURRENT_REQUESTS", Some(512))?,
            max_subscriptions: parse(&get, "MAX_SUBSCRIPTIONS", Some(1000))?,
            poll_rate_per_second: parse(&get, "POLL_RATE_PER_SECOND", Some(0.0))?,
            auth_mode: parse_auth_mode(get("AUTH_MODE"))?,
            allow_unauthenticated: parse(&get, "ALLOW_UNAUTHENTICATED", Some(false))?,
            static_tokens_file: get("STATIC_TOKENS_FILE"),
            token_audiences: get("TOKEN_AUDIENCES")
                .map(|v| split_list(&v))
                .unwrap_or_default(),
            authorization_mode: parse_authorization_mode(get("AUTHORIZATION_MODE"))?,
            resource_url: get("RESOURCE_URL"),
            authorization_servers: get("AUTHORIZATION_SERVERS")
                .map(|v| split_list(&v))
                .unwrap_or_default(),
            discover_ttl_ms: parse(&get, "DISCOVER_TTL_MS", Some(60_000))?,
            tools_list_ttl_ms: parse(&get, "TOOLS_LIST_TTL_MS", Some(5_000))?,
            fast_get: parse(&get, "FAST_GET", Some(true))?,
            fast_call: parse(&get, "FAST_CALL", Some(true))?,
            answer_cache_bytes: parse(&get, "ANSWER_CACHE_BYTES", Some(64 << 20))?,
            gzip_min_bytes: parse(&get, "GZIP_MIN_BYTES", Some(8192))?,
            trust_forwarded_for: parse(&get, "TRUST_FORWARDED_FOR", Some(false))?,
            limits: Limits::from_get(&get)?,
        };
        if config.auth_mode == AuthMode::None && !config.allow_unauthenticated {
            return Err(ConfigError::UnauthenticatedNotAllowed);
        }
        if config.auth_mode == AuthMode::StaticTokens && config.static_tokens_file.is_none() {
            return Err(ConfigError::Invalid {
                name: "STATIC_TOKENS_FILE",
                value: String::new(),
                reason: "AUTH_MODE=static needs a token file".to_owned(),
            });
        }
        if config.auth_mode == AuthMode::TokenReview && config.token_audiences.is_empty() {
            return Err(ConfigError::Invalid {
                name: "TOKEN_AUDIENCES",
                value: String::new(),
                reason: "AUTH_MODE=tokenreview needs the audience tokens must be issued for \
                         (e.g. mcp-task-operator); tokens for the API server itself are refused"
                    .to_owned(),
            });
        }
        Ok(config)
    }

    /// The size from which the fast path sends answers gzip-coded; `None` when it never does.
    pub fn gzip_min(&self) -> Option<usize> {
        (self.gzip_min_bytes > 0).then_some(self.gzip_min_bytes)
    }
}

fn parse<T>(
    get: &impl Fn(&'static str) -> Option<String>,
    name: &'static str,
    default: Option<T>,
) -> Result<T, ConfigError>
where
    T: std::str::FromStr,
    T::Err: std::fmt::Display,
{
    match (get(name), default) {
        (Some(value), _) => value
            .trim()
            .parse()
            .map_err(|e: T::Err| ConfigError::Invalid {
                name,
                reason: e.to_string(),
                value,
            }),
        (None, Some(default)) => Ok(default),
        (None, None) => Err(ConfigError::Invalid {
            name,
            value: String::new(),
            reason: "a value is required".to_owned(),
        }),
    }
}

fn parse_auth_mode(value: Option<String>) -> Result<AuthMode, ConfigError> {
    match value.as_deref().map(str::trim) {
        None | Some("tokenreview") => Ok(AuthMode::TokenReview),
        Some("static") => Ok(AuthMode::StaticTokens),
        Some("none") => Ok(AuthMode::None),
        Some(other) => Err(ConfigError::Invalid {
            name: "AUTH_MODE",
            value: other.to_owned(),
            reason: "expected none, static or tokenreview".to_owned(),
        }),
    }
}

fn parse_authorization_mode(value: Option<String>) -> Result<AuthorizationMode, ConfigError> {
    match value.as_deref().map(str::trim) {
        None | Some("rbac") => Ok(AuthorizationMode::Rbac),
        Some("none") => Ok(AuthorizationMode::None),
        Some(other) => Err(ConfigError::Invalid {
            name: "AUTHORIZATION_MODE",
            value: other.to_owned(),
            reason: "expected rbac or none".to_owned(),
        }),
    }
}

fn split_list(value: &str) -> Vec<String> {
    value
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
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
    fn defaults_are_local_authenticated_and_authorized() {
        let c = config(&[("TOKEN_AUDIENCES", "mcp-task-operator")]).unwrap();
        assert_eq!(c.bind_addr.to_string(), "127.0.0.1:8080");
        assert_eq!(c.auth_mode, AuthMode::TokenReview);
        assert_eq!(c.token_audiences, ["mcp-task-operator"]);
        assert_eq!(c.authorization_mode, AuthorizationMode::Rbac);
        assert_eq!(c.max_body_bytes, 1024 * 1024);
        assert!(c.allowed_origins.is_empty());
    }

    #[test]
    fn auth_none_needs_explicit_opt_in() {
        assert!(matches!(
            config(&[("AUTH_MODE", "none")]),
            Err(ConfigError::UnauthenticatedNotAllowed)
        ));
        let c = config(&[("AUTH_MODE", "none"), ("ALLOW_UNAUTHENTICATED", "true")]).unwrap();
        assert_eq!(c.auth_mode, AuthMode::None);
    }

    #[test]
    fn tokenreview_without_an_audience_refuses_to_start() {
        let err = config(&[]).unwrap_err().to_string();
        assert!(err.contains("MCP_FRONTEND_TOKEN_AUDIENCES"), "{err}");
        let err = config(&[("AUTH_MODE", "tokenreview"), ("TOKEN_AUDIENCES", " , ")])
            .unwrap_err()
            .to_string();
        assert!(err.contains("MCP_FRONTEND_TOKEN_AUDIENCES"), "{err}");
        // Other modes need no audience.
        assert!(config(&[("AUTH_MODE", "static"), ("STATIC_TOKENS_FILE", "/t")]).is_ok());
    }

    #[test]
    fn authorization_mode_is_rbac_or_none() {
        let c = config(&[
            ("AUTH_MODE", "none"),
            ("ALLOW_UNAUTHENTICATED", "true"),
            ("AUTHORIZATION_MODE", "none"),
        ])
        .unwrap();
        assert_eq!(c.authorization_mode, AuthorizationMode::None);
        let err = config(&[
            ("AUTH_MODE", "none"),
            ("ALLOW_UNAUTHENTICATED", "true"),
            ("AUTHORIZATION_MODE", "abac"),
        ])
        .unwrap_err()
        .to_string();
        assert!(err.contains("MCP_FRONTEND_AUTHORIZATION_MODE"), "{err}");
    }

    #[test]
    fn invalid_values_name_the_variable() {
        let err = config(&[("MAX_BODY_BYTES", "lots")]).unwrap_err();
        assert!(
            err.to_string().contains("MCP_FRONTEND_MAX_BODY_BYTES"),
            "{err}"
        );
    }

    #[test]
    fn limits_default_and_refuse_values_past_their_ceiling() {
        let config = |vars: &[(&str, &str)]| {
            let mut vars = vars.to_vec();
            vars.push(("TOKEN_AUDIENCES", "mcp-task-operator"));
            config(&vars)
        };
        let limits = config(&[]).unwrap().limits;
        assert_eq!(limits.max_argument_bytes, 65_536);
        assert_eq!(limits.max_active_tasks_per_caller, 100);
        assert_eq!(limits.max_listen_task_ids, 100);
        assert!((limits.call_rate_per_second - 10.0).abs() < f64::EPSILON);
        let ok = config(&[("MAX_ARGUMENT_BYTES", "131052")]).unwrap();
        assert_eq!(ok.limits.max_argument_bytes, ENV_VALUE_CEILING);
        let err = config(&[("MAX_ARGUMENT_BYTES", "131053")]).unwrap_err();
        assert!(err.to_string().contains("at most 131052"), "{err}");
        assert!(config(&[("MAX_INPUT_RESPONSES_BYTES", "262144")]).is_err());
        assert!(config(&[("MAX_LISTEN_TASK_IDS", "1001")]).is_err());
    }

    #[test]
    fn lists_are_split_and_trimmed() {
        let c = config(&[
            ("ALLOWED_HOSTS", " a.example , b.example:8443,"),
            ("TOKEN_AUDIENCES", "mcp"),
        ])
        .unwrap();
        assert_eq!(c.allowed_hosts, vec!["a.example", "b.example:8443"]);
    }
}
