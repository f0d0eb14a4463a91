//! What rmcp's request context carries for one request: the caller and identity the auth layer
//! attached, and whether the request may receive tasks. Shared by the handler and `tools/call`;
//! [`CallContext`] is the part `tools/call` reads, which the `tools/call` fast path
//! ([`crate::fastcall`]) builds without rmcp.

use std::sync::Arc;

use rmcp::model::{ClientCapabilities, ProtocolVersion};
use rmcp::service::{RequestContext, RoleServer};
use tokio_util::sync::CancellationToken;

use crate::auth::{Caller, Identity};
use crate::error::Error;

/// Whether this request may receive tasks: it declares the extension on MCP 2026-07-28 or later
/// (under 2025-11-25 the extension does not exist, whatever the client declares).
pub fn declares_tasks(context: &RequestContext<RoleServer>) -> bool {
    may_receive_tasks(
        context.protocol_version().as_ref(),
        context.client_capabilities().as_ref(),
    )
}

/// [`declares_tasks`] of a request of `version` declaring `capabilities`.
fn may_receive_tasks(
    version: Option<&ProtocolVersion>,
    capabilities: Option<&ClientCapabilities>,
) -> bool {
    version.is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str())
        && capabilities.is_some_and(ClientCapabilities::supports_tasks)
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

/// What serving one `tools/call` reads of its request besides the params: who calls, the
/// protocol version and client capabilities the request declared, and its cancellation
/// (cancelled when the caller goes away before the answer).
#[derive(Clone, Debug)]
pub struct CallContext {
    /// The authenticated identity; its user is the caller.
    pub identity: Arc<Identity>,
    /// The request's protocol version.
    pub protocol_version: Option<ProtocolVersion>,
    /// The capabilities the request declared.
    pub client_capabilities: Option<ClientCapabilities>,
    /// Cancelled when the caller no longer waits for the answer.
    pub ct: CancellationToken,
}

impl CallContext {
    /// The context of a request rmcp dispatched.
    pub fn of(context: &RequestContext<RoleServer>) -> Result<Self, Error> {
        Ok(Self {
            identity: identity(context)?,
            protocol_version: context.protocol_version(),
            client_capabilities: context.client_capabilities(),
            ct: context.ct.clone(),
        })
    }

    /// The caller, as authentication records it ([`crate::auth::authenticate`]).
    pub fn caller(&self) -> Caller {
        Caller(self.identity.user.clone())
    }

    /// As [`declares_tasks`].
    pub fn declares_tasks(&self) -> bool {
        may_receive_tasks(
            self.protocol_version.as_ref(),
            self.client_capabilities.as_ref(),
        )
    }
}
