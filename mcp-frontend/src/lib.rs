//! The MCP front end of mcp-task-operator: MCP 2026-07-28 over Streamable HTTP with the Tasks
//! extension, every tool call an `McpTask`.
//!
//! # How much rmcp carries
//!
//! The transport is the official Rust SDK, `rmcp` (pinned to `=3.11.0`, default features off,
//! features `server` + `transport-streamable-http-server`), whose
//! `transport::streamable_http_server::StreamableHttpService` runs here in stateless mode
//! (`legacy_session_mode = false`, `NeverSessionManager`) with JSON responses. rmcp 3.11 speaks
//! 2026-07-28 and enforces, before our handler runs: the `MCP-Protocol-Version` header against
//! `_meta` (-32020), required `_meta` keys (-32602, HTTP 400), unsupported versions (-32022),
//! `Mcp-Method`/`Mcp-Name` (including `params.taskId` on `tasks/*`) and `Mcp-Param-*` headers
//! (-32020), the tasks capability on `tasks/*` before any lookup (-32021), removed methods
//! (`ping`, `tasks/result`, `tasks/list`, ... → -32601, HTTP 404), `server/discover`, and
//! `resultType` on every result. Its `model` module supplies the MCP and Tasks-extension types.
//!
//! What rmcp cannot carry is `subscriptions/listen` with `taskIds`: its `SubscriptionFilter`
//! has no `taskIds` field and its subscription sink refuses `notifications/tasks`. [`routes`]
//! therefore peeks at each POST body and serves `subscriptions/listen` in [`listen`], which
//! repeats rmcp's header/`_meta` checks for that one method; the same route honours
//! `toolsListChanged` from the `McpTool` watch. `Host`/`Origin` are checked by our
//! own layer ([`origin`]) so that both paths share one rule.
//!
//! # Layout
//!
//! [`app`] builds the router; [`handler`] is the rmcp `ServerHandler`; [`call`] and [`tasks`]
//! do the work over the traits in [`store`] and [`tools`], so HTTP tests run without a cluster.
//! In front of the router, two fast paths take the requests clients send most in their plain
//! form, a form for which every check of rmcp's listed above passes: [`fastget`] answers
//! `tasks/get` polls from serialized answers, and [`fastcall`] serves `tools/call` by the
//! handler's own code without rmcp's per-request service. Anything else goes through rmcp.

pub mod ack;
pub mod apihealth;
pub mod auth;
pub mod authz;
pub mod body;
pub mod bounds;
pub mod call;
pub mod config;
pub mod error;
pub mod fastcall;
pub mod fastget;
pub mod handler;
pub mod held;
pub mod jwt;
pub mod listen;
pub mod metrics;
pub mod origin;
pub mod quota;
pub mod ratelimit;
pub mod request;
pub mod review_cache;
pub mod routes;
pub mod state;
pub mod static_tokens;
pub mod store;
pub mod tasks;
pub mod token_review;
pub mod tools;
pub mod trace;
pub mod unanswerable;
pub mod wait;
pub mod wire;

#[cfg(test)]
mod tests;

pub use config::Config;
pub use error::{Error, Result};
pub use state::AppState;

/// The whole HTTP application over `state`; tests drive it without a socket.
pub fn app(state: AppState) -> fastget::front::Front<axum::Router> {
    fastget::front::Front::new(state.clone(), routes::router(state))
}
