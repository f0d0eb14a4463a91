//! `serve-rmcp`: the plain rmcp baseline of `tasks/get`: rmcp 3.11's stateless Streamable
//! HTTP service (JSON answers, the front end's transport settings, [`crate::servers::serve`])
//! keeping its tasks in rmcp's own `TaskManager`.

use axum::Router;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, CreateTaskResult,
    GetTaskParams, GetTaskResult, ListToolsResult, PaginatedRequestParams, ServerCapabilities,
    ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::task_manager::{TaskManager, TaskOptions};
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// Name of the one tool the rmcp baseline offers; its argument `bytes` sets the size of the
/// text result (default 17).
pub const RMCP_TOOL: &str = "bench";

/// The most bytes of text one result may have (8 MiB).
const MAX_RESULT_BYTES: u64 = 8 << 20;

/// `serve-rmcp PORT`: the plain rmcp server.
pub async fn serve_rmcp(port: u16) -> Result<(), String> {
    let tasks = TaskManager::new();
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_cancellation_token(CancellationToken::new())
        .disable_allowed_hosts()
        .disable_allowed_origins();
    let service = StreamableHttpService::new(
        move || {
            Ok(PlainTasks {
                tasks: tasks.clone(),
            })
        },
        std::sync::Arc::new(NeverSessionManager::default()),
        config,
    );
    crate::servers::serve(Router::new().route_service("/mcp", service), port).await
}

/// What an SDK user writes for tasks: every call becomes a `TaskManager` task that completes at
/// once with a text result; `tasks/get` reads the manager.
#[derive(Clone)]
struct PlainTasks {
    tasks: TaskManager,
}

impl ServerHandler for PlainTasks {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tasks()
            .build();
        ServerConfig::new(capabilities)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let schema = json!({"type": "object"});
        let schema = schema.as_object().cloned().unwrap_or_default();
        Ok(ListToolsResult::with_all_items(vec![Tool::new(
            RMCP_TOOL,
            "completes at once",
            std::sync::Arc::new(schema),
        )]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let bytes = request
            .arguments
            .as_ref()
            .and_then(|a| a.get("bytes")?.as_u64());
        let text = match bytes {
            None => crate::cluster::RESULT_TEXT.to_owned(),
            Some(n) if n <= MAX_RESULT_BYTES => "x".repeat(n as usize),
            Some(n) => {
                return Err(ErrorData::invalid_params(
                    format!("bytes is {n}; at most {MAX_RESULT_BYTES}"),
                    None,
                ));
            }
        };
        let options = TaskOptions::new().with_ttl_ms(3_600_000u64);
        let task = self.tasks.spawn(options, move |_context| {
            Box::pin(async move { Ok(CallToolResult::success(vec![ContentBlock::text(text)])) })
        });
        Ok(CallToolResponse::Task(CreateTaskResult::new(task)))
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        Ok(GetTaskResult::new(self.tasks.get_task(&request.task_id)?))
    }
}
