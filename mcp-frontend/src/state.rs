//! Shared state of the front end: configuration and the stores, each behind an `Arc`.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use prometheus_client::registry::Registry;

use crate::review_cache::ReviewMetrics;
use rmcp::model::Implementation;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use crate::apihealth::ApiHealth;
use crate::auth::Auth;
use crate::authz::Authz;
use crate::config::{AuthMode, AuthorizationMode, Config};
use crate::fastget::FastGet;
use crate::held::SlotCaps;
use crate::metrics::Metrics;
use crate::quota::CallerQuota;
use crate::ratelimit::RateLimiter;
use crate::store::TaskStore;
use crate::tools::ToolCatalog;

/// Everything a request handler needs; cheap to clone.
#[derive(Clone)]
pub struct AppState {
    /// Settings read at startup.
    pub config: Arc<Config>,
    /// Where tasks live.
    pub tasks: Arc<dyn TaskStore>,
    /// The served tools.
    pub tools: Arc<dyn ToolCatalog>,
    /// Cancelled on shutdown: ends open streams and waits.
    pub shutdown: CancellationToken,
    /// Request metrics.
    pub metrics: Arc<Metrics>,
    /// The registry `/metrics` encodes.
    pub registry: Arc<Registry>,
    /// How callers are authenticated.
    pub auth: Auth,
    /// How tool calls are authorized.
    pub authz: Authz,
    /// Permits for open `subscriptions/listen` streams.
    pub subscriptions: Arc<Semaphore>,
    /// Permits for `/mcp` requests being served (`MAX_CONCURRENT_REQUESTS`), shared by the
    /// layer stack and the `tasks/get` fast path in front of it.
    pub requests: Arc<Semaphore>,
    /// What one source and one caller may hold of [`AppState::requests`].
    pub request_caps: SlotCaps,
    /// What one source and one caller may hold of [`AppState::subscriptions`].
    pub subscription_caps: SlotCaps,
    /// The per-caller `tasks/get` limit for IDs that are not the caller's tasks, when
    /// configured.
    pub poll_limiter: Option<Arc<RateLimiter>>,
    /// The per-task poll limit (refilled at each task's `pollIntervalMs`), when configured.
    pub task_poll_limiter: Option<Arc<RateLimiter>>,
    /// The `tools/call` rate limit, unless turned off.
    pub call_limiter: Option<Arc<RateLimiter>>,
    /// What one caller may hold (active tasks, stored tasks and bytes), unless all are off.
    pub quota: Option<Arc<CallerQuota>>,
    /// Whether the Kubernetes API server is reachable (always, unless a probe says otherwise).
    pub api_health: Arc<ApiHealth>,
    /// Reviews sent to the API server; the review caches of `auth` and `authz` count into it.
    pub reviews: ReviewMetrics,
    /// The `tasks/get` fast path, unless turned off (`FAST_GET=false`).
    pub fast_get: Option<Arc<FastGet>>,
    /// Calls the `tools/call` fast path has served, unless it is turned off (`FAST_CALL=false`).
    pub fast_calls: Option<Arc<AtomicU64>>,
}

impl AppState {
    /// State over the given stores, with a fresh shutdown token.
    pub fn new(config: Config, tasks: Arc<dyn TaskStore>, tools: Arc<dyn ToolCatalog>) -> Self {
        let mut registry = Registry::default();
        let metrics = Metrics::register(&mut registry);
        tasks.lookups().register(&mut registry);
        let reviews = ReviewMetrics::default();
        reviews.register(&mut registry);
        let limits = &config.limits;
        // A token mode without an authenticator (see `with_auth`) refuses every request.
        let auth = match config.auth_mode {
            AuthMode::None => Auth::None,
            AuthMode::StaticTokens | AuthMode::TokenReview => Auth::Unavailable,
        };
        // Likewise RBAC without a reviewer (see `with_authz`) fails every check, closed.
        let authz = match config.authorization_mode {
            AuthorizationMode::None => Authz::None,
            AuthorizationMode::Rbac => Authz::Unavailable,
        };
        Self {
            auth,
            authz,
            subscriptions: Arc::new(Semaphore::new(config.max_subscriptions)),
            requests: Arc::new(Semaphore::new(config.max_concurrent_requests)),
            request_caps: SlotCaps::requests(
                limits.max_requests_per_source,
                limits.max_requests_per_caller,
            ),
            subscription_caps: SlotCaps::subscriptions(
                limits.max_subscriptions_per_source,
                limits.max_subscriptions_per_caller,
            ),
            poll_limiter: (config.poll_rate_per_second > 0.0).then(|| {
                let rate = config.poll_rate_per_second;
                Arc::new(RateLimiter::new(rate, rate * 2.0))
            }),
            task_poll_limiter: (limits.poll_burst_per_task > 0).then(|| {
                // The rate is given per poll, from the task's advertised interval.
                Arc::new(RateLimiter::new(1.0, limits.poll_burst_per_task as f64))
            }),
            call_limiter: (limits.call_rate_per_second > 0.0).then(|| {
                Arc::new(RateLimiter::new(
                    limits.call_rate_per_second,
                    limits.call_burst,
                ))
            }),
            fast_get: config
                .fast_get
                .then(|| Arc::new(FastGet::new(config.answer_cache_bytes, config.gzip_min()))),
            fast_calls: config.fast_call.then(Arc::default),
            quota: limits
                .quota()
                .any()
                .then(|| Arc::new(CallerQuota::new(limits.quota()))),
            config: Arc::new(config),
            tasks,
            tools,
            shutdown: CancellationToken::new(),
            metrics: Arc::new(metrics),
            registry: Arc::new(registry),
            api_health: Arc::default(),
            reviews,
        }
    }

    /// The same state with reachability reported by `health` (which a probe feeds).
    pub fn with_api_health(mut self, health: Arc<ApiHealth>) -> Self {
        self.api_health = health;
        self
    }

    /// The same state authenticating with `auth`.
    pub fn with_auth(mut self, auth: Auth) -> Self {
        self.auth = auth;
        self
    }

    /// The same state authorizing with `authz`.
    pub fn with_authz(mut self, authz: Authz) -> Self {
        self.authz = authz;
        self
    }

    /// Whether both watch caches have synced and the API server is reachable (the `/readyz`
    /// condition).
    pub fn is_ready(&self) -> bool {
        self.tasks.is_synced() && self.tools.is_synced() && self.api_health.is_reachable()
    }
}

/// This server's MCP identity (`serverInfo`): the project's name as its name and title.
pub fn server_info() -> Implementation {
    const NAME: &str = "mcp-task-operator";
    let mut info = Implementation::default();
    info.name = NAME.to_owned();
    info.title = Some(NAME.to_owned());
    info.version = env!("CARGO_PKG_VERSION").to_owned();
    info
}

/// Result `_meta` carrying `io.modelcontextprotocol/serverInfo`, which every result SHOULD have.
pub fn server_info_meta() -> rmcp::model::MetaObject {
    // Built once: it is the same on every answer.
    static META: std::sync::LazyLock<rmcp::model::MetaObject> = std::sync::LazyLock::new(|| {
        let mut meta = rmcp::model::MetaObject::default();
        if let Ok(info) = serde_json::to_value(server_info()) {
            meta.insert("io.modelcontextprotocol/serverInfo".to_owned(), info);
        }
        meta
    });
    META.clone()
}

/// Adds this server's `serverInfo` to the `_meta` of a result that may carry its own (a tool's
/// result): the tool's other keys are kept, and `serverInfo` is this server's, whatever the
/// tool wrote under that key, since this server is the one answering.
pub fn add_server_info(meta: &mut Option<rmcp::model::MetaObject>) {
    let meta = meta.get_or_insert_with(rmcp::model::MetaObject::default);
    meta.0.extend(server_info_meta().0);
}
