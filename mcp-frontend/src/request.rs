//! What rmcp's request context carries for one request: the caller and identity the auth layer
//! attached, and whether the request may receive tasks. Shared by the handler and `tools/call`.

use std::sync::Arc;

use rmcp::model::ProtocolVersion;
use rmcp::service::{RequestContext, RoleServer};

use crate::auth::{Caller, Identity};
use crate::error::Error;

/// Whether this request may receive tasks: it declares the extension on MCP 2026-07-28 or later
/// (under 2025-11-25 the extension does not exist, whatever the client declares).
pub fn declares_tasks(context: &RequestContext<RoleServer>) -> bool {
    let modern = context
        .protocol_version()
        .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str());
    modern
        && context
            .client_capabilities()
            .is_some_and(|caps| caps.supports_tasks())
}

/// The authenticated identity of the request (what authorization asks about).
pub fn identity(context: &RequestContext<RoleServer>) -> Result<Arc<Identity>, Error> {
    from_parts(context, Identity::from_parts)
}

/// The authenticated caller of the request.
pub fn caller(context: &RequestContext<RoleServer>) -> Result<Caller, Error> {
    from_parts(context, Caller::from_parts)
}

/// What authentication put into the HTTP request's extensions, read by `read`.
fn from_parts<T: Clone>(
    context: &RequestContext<RoleServer>,
    read: impl FnOnce(&axum::http::request::Parts) -> Option<&T>,
) -> Result<T, Error> {
    context
        .extensions
        .get::<axum::http::request::Parts>()
        .and_then(read)
        .cloned()
        .ok_or(Error::MissingCaller)
}
