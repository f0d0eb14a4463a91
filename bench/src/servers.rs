//! The two baselines for `tasks/get`, each run as a child process of the harness (like the real
//! front end) so that the load generator costs all three the same:
//!
//! - `serve-axum`: a bare axum handler answering every POST with fixed bytes (the HTTP ceiling);
//! - `serve-rmcp`: a plain rmcp 3.11 server (stateless Streamable HTTP, JSON answers, the
//!   front end's transport settings) keeping its tasks in rmcp's own `TaskManager`.

use std::net::SocketAddr;
use std::process::Stdio;
use std::time::{Duration, Instant};

use axum::Router;
use axum::http::header;
use axum::routing::post;
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
use tokio::process::{Child, Command};
use tokio_util::sync::CancellationToken;

/// Name of the one tool the rmcp baseline offers.
pub const RMCP_TOOL: &str = "bench";

/// A baseline server running as a child process; killed when dropped.
pub struct ServerProcess {
    /// Where it listens.
    pub addr: SocketAddr,
    child: Child,
}

impl ServerProcess {
    /// Starts this binary with `args` (a `serve-*` subcommand and its arguments; the port is
    /// appended) and waits until it accepts connections.
    pub async fn start(args: &[&str]) -> Result<Self, String> {
        let port = mcp_task_operator_harness::frontend::free_port();
        let exe = std::env::current_exe().map_err(|e| format!("cannot find own binary: {e}"))?;
        let child = Command::new(exe)
            .args(args)
            .arg(port.to_string())
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("cannot start {args:?}: {e}"))?;
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let started = Instant::now();
        while tokio::net::TcpStream::connect(addr).await.is_err() {
            if started.elapsed() > Duration::from_secs(10) {
                return Err(format!("{args:?} does not listen on {addr}"));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Ok(Self { addr, child })
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

/// `serve-axum CONTENT_TYPE BODY_FILE PORT`: answers every POST /mcp with the file's bytes.
pub async fn serve_axum(content_type: String, body_file: &str, port: u16) -> Result<(), String> {
    let body = bytes::Bytes::from(
        std::fs::read(body_file).map_err(|e| format!("cannot read {body_file}: {e}"))?,
    );
    let app = Router::new().route(
        "/mcp",
        post(move || {
            let body = body.clone();
            let content_type = content_type.clone();
            async move { ([(header::CONTENT_TYPE, content_type)], body) }
        }),
    );
    serve(app, port).await
}

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
    serve(Router::new().route_service("/mcp", service), port).await
}

async fn serve(app: Router, port: u16) -> Result<(), String> {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .map_err(|e| format!("cannot bind 127.0.0.1:{port}: {e}"))?;
    axum::serve(listener, app)
        .await
        .map_err(|e| format!("serving on port {port} failed: {e}"))
}

/// What an SDK user writes for tasks: every call becomes a `TaskManager` task that completes at
/// once with a one-line text result; `tasks/get` reads the manager.
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
        _request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let options = TaskOptions::new().with_ttl_ms(3_600_000u64);
        let task = self.tasks.spawn(options, |_context| {
            Box::pin(async {
                Ok(CallToolResult::success(vec![ContentBlock::text(
                    "restocked 64 SKUs",
                )]))
            })
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
