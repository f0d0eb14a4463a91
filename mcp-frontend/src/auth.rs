//! Authentication: who sent a request. The caller becomes the owner of the tasks it creates.
//!
//! Modes: `none` (every caller is anonymous; refused by config unless explicitly allowed),
//! static bearer tokens ([`crate::static_tokens`]: a kube-apiserver style CSV file mounted from
//! a Secret), and Kubernetes TokenReview ([`crate::token_review`]). The [`Identity`] found
//! (user, uid, groups, extra) is what [`crate::authz`] asks RBAC about. With a token mode, a request without a valid
//! `Authorization: Bearer` gets 401 with `WWW-Authenticate` pointing at the OAuth protected
//! resource metadata (RFC 9728) served by [`protected_resource_metadata`].

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures::future::BoxFuture;
use serde_json::json;

use crate::error::JsonRpcErrorResponse;
use crate::held::{Hold, Refused};
use crate::routes::refuse_unavailable;
use crate::state::AppState;

/// Owner recorded on tasks when authentication is off (`MCP_FRONTEND_AUTH_MODE=none`).
pub const ANONYMOUS: &str = "system:anonymous";
/// The group of [`ANONYMOUS`], as kube-apiserver gives anonymous requests.
pub const UNAUTHENTICATED_GROUP: &str = "system:unauthenticated";
/// Path of the OAuth protected resource metadata document.
pub const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// The authenticated caller of one request; becomes the owner of the tasks it creates.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Caller(pub String);

impl Caller {
    /// The caller recorded in a request's parts, if authentication ran.
    pub fn from_parts(parts: &Parts) -> Option<&Self> {
        parts.extensions.get::<Self>()
    }

    /// The caller's identity as stored in `McpTask.spec.owner`.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Who a token belongs to, as the authenticator tells it: what RBAC is asked about.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Identity {
    /// User name; becomes the [`Caller`] and the owner of the caller's tasks.
    pub user: String,
    /// The user's UID, when the authenticator knows one.
    pub uid: Option<String>,
    /// Groups the user belongs to.
    pub groups: Vec<String>,
    /// Extra attributes (TokenReview's `user.extra`, e.g. the pod a token is bound to).
    pub extra: BTreeMap<String, Vec<String>>,
}

impl Identity {
    /// An identity with only a user name.
    pub fn user(name: impl Into<String>) -> Self {
        Self {
            user: name.into(),
            ..Self::default()
        }
    }

    /// The identity of every caller when authentication is off.
    pub fn anonymous() -> Self {
        Self {
            groups: vec![UNAUTHENTICATED_GROUP.to_owned()],
            ..Self::user(ANONYMOUS)
        }
    }

    /// The identity recorded in a request's parts, if authentication ran.
    pub fn from_parts(parts: &Parts) -> Option<&Arc<Self>> {
        parts.extensions.get::<Arc<Self>>()
    }
}

/// Why a token could not be checked (not: why it was refused).
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    /// The TokenReview call failed (shared by every request that waited for the same review).
    #[error("failed to create TokenReview")]
    TokenReview(#[source] Arc<kube::Error>),
    /// The static token file could not be read.
    #[error("failed to read static token file {path}")]
    ReadTokens {
        /// The file.
        path: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

/// Turns a bearer token into an identity; `Ok(None)` means the token is not valid.
pub trait TokenAuthenticator: Send + Sync + 'static {
    /// Why `token` cannot be valid, known without asking anyone (say, it is not a JWT where
    /// only JWTs are accepted); `None` to go on to [`TokenAuthenticator::authenticate`].
    fn malformed(&self, _token: &str) -> Option<&'static str> {
        None
    }

    /// Checks `token`.
    fn authenticate<'a>(
        &'a self,
        token: &'a str,
    ) -> BoxFuture<'a, Result<Option<Arc<Identity>>, AuthError>>;
}

/// How requests are authenticated.
#[derive(Clone)]
pub enum Auth {
    /// Everyone is [`ANONYMOUS`].
    None,
    /// A bearer token is required and checked by the authenticator.
    Bearer(Arc<dyn TokenAuthenticator>),
    /// A token mode is configured but no authenticator was set: refuse everything.
    Unavailable,
}

/// Middleware: establishes the [`Caller`] and its [`Identity`] (both request extensions) or
/// answers 401; the request holds its source's and caller's request slots ([`admit`]) until
/// its answer.
pub async fn authenticate(
    State(state): State<AppState>,
    mut request: Request,
    next: Next,
) -> Response {
    let admitted = match admit(&state, request.headers(), request.extensions()).await {
        Ok(admitted) => admitted,
        Err(refusal) => return refusal,
    };
    let identity = admitted.identity.clone();
    request
        .extensions_mut()
        .insert(Caller(identity.user.clone()));
    request.extensions_mut().insert(identity);
    let response = next.run(request).await;
    drop(admitted);
    response
}

/// An authenticated request and the request slots it holds ([`crate::held`]) until dropped.
#[derive(Debug)]
pub struct Admitted {
    /// Who sent it.
    pub identity: Arc<Identity>,
    _source: Option<Hold>,
    _caller: Option<Hold>,
}

/// The caller of a request (with `headers` and `extensions`) and the slots it holds, or the
/// response that refuses it: its source is over `MAX_REQUESTS_PER_SOURCE` (checked first, so
/// unauthenticated load is capped before any TokenReview), the token is not valid, or the
/// caller is over `MAX_REQUESTS_PER_CALLER` (not with `AUTH_MODE=none`, where all callers
/// are one).
pub async fn admit(
    state: &AppState,
    headers: &axum::http::HeaderMap,
    extensions: &axum::http::Extensions,
) -> Result<Admitted, Response> {
    let caps = &state.request_caps;
    let source = crate::held::source(headers, extensions, state.config.trust_forwarded_for);
    let source = match source {
        Some(source) => caps.source.try_hold(&source).map_err(too_many)?,
        None => None,
    };
    let identity = identify(state, headers).await?;
    let caller = match state.auth {
        Auth::None => None,
        _ => caps.caller.try_hold(&identity.user).map_err(too_many)?,
    };
    Ok(Admitted {
        identity,
        _source: source,
        _caller: caller,
    })
}

/// HTTP 429 with `Retry-After` and the -31002 naming the cap (the body is not read yet, so
/// the `id` is null).
fn too_many(refused: Refused) -> Response {
    let error = JsonRpcErrorResponse::new(None, refused.error_data(), false);
    let mut response = error.into_response();
    *response.status_mut() = StatusCode::TOO_MANY_REQUESTS;
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    response
}

/// The caller a request with `headers` comes from, or the response that refuses it.
pub async fn identify(
    state: &AppState,
    headers: &axum::http::HeaderMap,
) -> Result<Arc<Identity>, Response> {
    match &state.auth {
        Auth::None => {
            // Built once: every request shares it.
            static ANONYMOUS_IDENTITY: std::sync::LazyLock<Arc<Identity>> =
                std::sync::LazyLock::new(|| Arc::new(Identity::anonymous()));
            Ok(ANONYMOUS_IDENTITY.clone())
        }
        Auth::Unavailable => Err(unauthorized(state, None)),
        Auth::Bearer(authenticator) => {
            let Some(token) = bearer_token(headers) else {
                return Err(unauthorized(state, None));
            };
            // Refused without a TokenReview: junk costs the API server nothing.
            if let Some(reason) = authenticator.malformed(token) {
                return Err(refuse_token(state, Some(reason)));
            }
            // A replica cut off from the API server refuses every request anyway (see
            // `routes::unavailable_reason`): say so at once, as JSON-RPC, rather than wait for
            // a review that cannot answer.
            if !state.api_health.is_reachable() {
                return Err(refuse_unavailable(
                    &[],
                    crate::error::API_SERVER_UNREACHABLE,
                ));
            }
            match authenticator.authenticate(token).await {
                Ok(Some(identity)) => Ok(identity),
                Ok(None) => Err(refuse_token(state, None)),
                Err(error) => {
                    tracing::error!(error = %crate::error::ErrorChain(&error), "authentication failed");
                    Err(refuse_unavailable(
                        &[],
                        crate::error::AUTHENTICATION_UNAVAILABLE,
                    ))
                }
            }
        }
    }
}

fn bearer_token(headers: &axum::http::HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// 401 `invalid_token`, with `description` (printable ASCII without `"` or `\`, as RFC 6750
/// §3 asks) when the token was refused without a review.
fn refuse_token(state: &AppState, description: Option<&'static str>) -> Response {
    let mut response = unauthorized(state, Some(("invalid_token", description)));
    if let Some(description) = description {
        *response.body_mut() = axum::body::Body::from(format!(
            "Unauthorized: the bearer token is not valid ({description})"
        ));
    }
    response
}

fn unauthorized(state: &AppState, error: Option<(&str, Option<&str>)>) -> Response {
    let mut challenge = String::from("Bearer");
    let mut params = Vec::new();
    if let Some((error, description)) = error {
        params.push(format!("error=\"{error}\""));
        if let Some(description) = description {
            params.push(format!("error_description=\"{description}\""));
        }
    }
    if let Some(url) = metadata_url(state) {
        params.push(format!("resource_metadata=\"{url}\""));
    }
    if !params.is_empty() {
        challenge.push(' ');
        challenge.push_str(&params.join(", "));
    }
    // Say what failed in the body too, for people reading it with curl; the challenge is what
    // clients act on.
    let text = if error.is_some() {
        "Unauthorized: the bearer token is not valid (unknown, expired or for another audience)"
    } else {
        "Unauthorized: send a bearer token (Authorization: Bearer <token>)"
    };
    let mut response = (StatusCode::UNAUTHORIZED, text).into_response();
    if let Ok(value) = HeaderValue::from_str(&challenge) {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, value);
    }
    response
}

/// URL of the metadata document, derived from the configured public resource URL.
fn metadata_url(state: &AppState) -> Option<String> {
    let resource = state.config.resource_url.as_deref()?;
    let (origin, path) = match resource
        .find("://")
        .and_then(|i| resource[i + 3..].find('/').map(|j| i + 3 + j))
    {
        Some(split) => (&resource[..split], &resource[split..]),
        None => (resource, ""),
    };
    Some(format!(
        "{origin}{METADATA_PATH}{}",
        path.trim_end_matches('/')
    ))
}

/// `GET /.well-known/oauth-protected-resource[/mcp]`: RFC 9728 metadata naming this resource
/// and its authorization servers.
pub async fn protected_resource_metadata(State(state): State<AppState>) -> Response {
    let Some(resource) = state.config.resource_url.clone() else {
        return StatusCode::NOT_FOUND.into_response();
    };
    axum::Json(json!({
        "resource": resource,
        "authorization_servers": state.config.authorization_servers,
        "bearer_methods_supported": ["header"],
    }))
    .into_response()
}
