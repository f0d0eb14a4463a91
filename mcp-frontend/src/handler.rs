//! The rmcp `ServerHandler`: one per request (the transport is stateless), over [`AppState`].
//!
//! rmcp has already checked the headers, `_meta`, the protocol version and, for `tasks/*`, the
//! tasks capability when these methods run; they only do the work, in [`crate::call`] and
//! [`crate::tasks`].

use std::borrow::Cow;

use rmcp::model::ErrorCode;
use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, CancelTaskParams, ClientCapabilities,
    CustomRequest, CustomResult, DiscoverResult, GetTaskParams, GetTaskResult,
    InitializeRequestParams, InitializeResult, InitializeResultMethod, ListToolsResult,
    PaginatedRequestParams, ProtocolVersion, RequestMetaObject, ServerCapabilities, ServerConfig,
    Tool, UpdateTaskParams,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use tracing::Instrument;

use crate::authz::Authz;
use crate::error::Error;
use crate::request::{CallContext, caller, declares_tasks, identity};
use crate::state::{AppState, server_info, server_info_meta};
use crate::{call, metrics, tasks};

/// Protocol versions served per request (`_meta` + `MCP-Protocol-Version`): 2026-07-28. This is
/// the list `server/discover` names in `supportedVersions` and a -32022 names in
/// `data.supported`, so that the two agree (the conformance suite checks that every version
/// in the error is one discover advertised). Like the reference SDK, it holds only
/// revisions without `initialize`.
pub const SUPPORTED_VERSIONS: &[ProtocolVersion] = &[ProtocolVersion::V_2026_07_28];

/// Versions a legacy client may negotiate through `initialize` (synchronous calls, no tasks).
/// They are not per-request versions, so neither discover nor -32022 names them (`docs/DESIGN.md#versions`:
/// 2025-era versions are negotiated through `initialize`).
pub const LEGACY_VERSIONS: &[ProtocolVersion] = &[ProtocolVersion::V_2025_11_25];

const INSTRUCTIONS: &str = "Tools run as Kubernetes Jobs. Long calls return a task handle \
    (io.modelcontextprotocol/tasks): poll tasks/get until the task is terminal.";

/// The instructions a legacy (`initialize`) client gets: it has no tasks, so every call waits.
const LEGACY_INSTRUCTIONS: &str = "Tools run as Kubernetes Jobs. Every call waits for its job \
    and answers with the result; tools that run only as tasks need a client speaking MCP \
    2026-07-28 with the io.modelcontextprotocol/tasks extension.";

/// Serves one MCP request over the shared state.
#[derive(Clone)]
pub struct McpHandler {
    state: AppState,
}

impl McpHandler {
    /// A handler over `state`.
    pub fn new(state: AppState) -> Self {
        Self { state }
    }

    /// What a legacy client is told in `initialize`: tools, and nothing it cannot use. The
    /// tasks extension does not exist under 2025-11-25 (its calls are synchronous), and
    /// `tools.listChanged` would promise notifications that only `subscriptions/listen` (MCP
    /// 2026-07-28) delivers: a stateless server has no GET stream for them.
    fn legacy_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder().enable_tools().build();
        ServerConfig::new(capabilities)
            .with_server_info(server_info())
            .with_instructions(LEGACY_INSTRUCTIONS)
    }

    /// Answers one `tasks/*` request and counts it by its outcome.
    async fn counted<T>(
        &self,
        method: &'static str,
        answer: impl Future<Output = Result<T, Error>>,
    ) -> Result<T, ErrorData> {
        let answer = answer.await;
        let outcome = answer
            .as_ref()
            .map_or_else(Error::category, |_| metrics::OK);
        self.state.metrics.task_request(method, outcome);
        Ok(answer?)
    }
}

/// Serves one `tools/call` as rmcp dispatches it, for the handler and the fast path
/// ([`crate::fastcall`]): in the call's span (parented on the client's `traceparent` in
/// `meta`), counted by tool and outcome, and never a task handle for a request that did not
/// declare the tasks extension (rmcp's own guard, SEP-2663).
pub async fn serve_call(
    state: &AppState,
    request: CallToolRequestParams,
    context: Result<CallContext, Error>,
    meta: &RequestMetaObject,
) -> Result<CallToolResponse, ErrorData> {
    // The name when the catalog has it, so the label set is bounded by the catalog.
    let tool = match state.tools.snapshot().get(&request.name) {
        Some(_) => request.name.to_string(),
        None => metrics::OTHER_TOOL.to_owned(),
    };
    let (span, trace) = crate::trace::call_span(meta);
    let answer = match &context {
        Ok(context) => {
            call::call_tool(state, request, context, trace)
                .instrument(span.clone())
                .await
        }
        Err(_) => Err(Error::MissingCaller),
    };
    if answer.is_err() {
        span.record("otel.status_code", "error");
    }
    state
        .metrics
        .tool_call(&tool, metrics::call_outcome(&answer));
    let response = answer?;
    let declared = context.is_ok_and(|c| c.client_capabilities.is_some_and(|c| c.supports_tasks()));
    if matches!(response, CallToolResponse::Task(_)) && !declared {
        return Err(ErrorData::missing_required_client_capability(
            ClientCapabilities::builder().enable_tasks().build(),
        ));
    }
    Ok(response)
}

/// The `initialize` answer: the client's version when it is one of [`LEGACY_VERSIONS`], else
/// the newest of them (the client then decides whether it can speak it). rmcp's own
/// negotiation only draws on [`SUPPORTED_VERSIONS`], which holds no version with `initialize`;
/// it keeps the version chosen here.
pub fn negotiate_legacy(requested: &ProtocolVersion, mut info: ServerConfig) -> ServerConfig {
    info.protocol_version = if LEGACY_VERSIONS.contains(requested) {
        requested.clone()
    } else {
        LEGACY_VERSIONS
            .iter()
            .max_by(|a, b| a.as_str().cmp(b.as_str()))
            .cloned()
            .unwrap_or(ProtocolVersion::LATEST_WITH_INITIALIZE)
    };
    info
}

impl ServerHandler for McpHandler {
    fn get_info(&self) -> ServerConfig {
        // listChanged: subscriptions/listen honours toolsListChanged (see crate::listen).
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .enable_tasks()
            .build();
        ServerConfig::new(capabilities)
            .with_server_info(server_info())
            .with_instructions(INSTRUCTIONS)
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(SUPPORTED_VERSIONS)
    }

    async fn discover(
        &self,
        _context: RequestContext<RoleServer>,
    ) -> Result<DiscoverResult, ErrorData> {
        // The answer does not depend on the caller, so shared caches may keep it.
        Ok(
            DiscoverResult::from_server_info(SUPPORTED_VERSIONS.to_vec(), self.get_info())
                .with_ttl_ms(self.state.config.discover_ttl_ms)
                .with_cache_scope(CacheScope::Public),
        )
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        // A modern envelope marks a 2026-07-28 client, for which initialize no longer exists.
        if context.meta.protocol_version().is_some() {
            return Err(ErrorData::method_not_found::<InitializeResultMethod>());
        }
        context.peer.set_peer_info(request.clone());
        Ok(negotiate_legacy(
            &request.protocol_version,
            self.legacy_info(),
        ))
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        // One page holds every tool, so no cursor is ever issued.
        if request.and_then(|r| r.cursor).is_some() {
            return Err(Error::InvalidCursor.into());
        }
        let identity = identity(&context)?;
        let snapshot = self.state.tools.snapshot();
        // Only the tools this caller may call (crate::authz).
        let callable = self
            .state
            .authz
            .callable(&identity, snapshot.iter().cloned().collect())
            .await
            .map_err(Error::from)?;
        let mut result = ListToolsResult::with_all_items(
            callable
                .into_iter()
                .map(|entry| entry.tool.clone())
                .collect(),
        );
        result.ttl_ms = Some(self.state.config.tools_list_ttl_ms);
        // The list depends on the caller under RBAC, so no shared cache may keep it.
        result.cache_scope = Some(match self.state.authz {
            Authz::None => CacheScope::Public,
            Authz::Rbac(_) | Authz::Unavailable => CacheScope::Private,
        });
        result.meta = Some(server_info_meta());
        Ok(result)
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.state
            .tools
            .snapshot()
            .get(name)
            .map(|e| e.tool.clone())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let call = CallContext::of(&context);
        serve_call(&self.state, request, call, &context.meta).await
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        self.counted("tasks/get", async {
            tasks::get_task(&self.state, &caller(&context)?, &request.task_id).await
        })
        .await
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.counted("tasks/update", async {
            let caller = caller(&context)?;
            let answers = request.input_responses;
            tasks::update_task(&self.state, &caller, &request.task_id, answers).await
        })
        .await
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.counted("tasks/cancel", async {
            tasks::cancel_task(&self.state, &caller(&context)?, &request.task_id).await
        })
        .await
    }

    /// Requests rmcp could not parse into a known method. For `tasks/*` that means missing or
    /// mistyped params: the capability gate still comes first (-32021), then -32602, instead
    /// of rmcp's default -32601 (HTTP 404), which would claim the method does not exist.
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        // A tools/call or tools/list whose params rmcp could not read (a tool name that is
        // not a string, arguments that are not an object): say what is wrong with them.
        if let Some(detail) = unreadable_tools_params(&request) {
            let message = format!("invalid {} params: {detail}", request.method);
            return Err(ErrorData::invalid_params(message, None));
        }
        let method = request.method;
        let required = match method.as_str() {
            "tasks/get" | "tasks/cancel" => "taskId",
            "tasks/update" => "taskId and inputResponses",
            _ => {
                let message = format!("Method not found: {method}");
                return Err(ErrorData::new(ErrorCode::METHOD_NOT_FOUND, message, None));
            }
        };
        if !declares_tasks(&context) {
            return Err(ErrorData::missing_required_client_capability(
                ClientCapabilities::builder().enable_tasks().build(),
            ));
        }
        Err(ErrorData::invalid_params(
            format!("invalid {method} params: {required} required"),
            None,
        ))
    }
}

/// Why the params of a `tools/call` or `tools/list` that reached the custom-request fallback
/// cannot be read (rmcp only falls back when they cannot); `None` for every other method.
fn unreadable_tools_params(request: &CustomRequest) -> Option<String> {
    let read = match request.method.as_str() {
        "tools/call" => request
            .params_as::<CallToolRequestParams>()
            .map(|p| p.is_some()),
        "tools/list" => request.params_as::<PaginatedRequestParams>().map(|_| true),
        _ => return None,
    };
    Some(match read {
        Err(error) => error.to_string(),
        Ok(false) => "params with the tool name are required".to_owned(),
        Ok(true) => "params do not match the method".to_owned(),
    })
}
