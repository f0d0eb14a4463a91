//! `Host` and `Origin` checks on `/mcp`: DNS-rebinding and cross-origin protection (MCP
//! Streamable HTTP requires Origin validation; an invalid present Origin gets 403).
//!
//! Without `ALLOWED_ORIGINS` an `Origin` is accepted when it is `http(s)://` on a host that
//! `ALLOWED_HOSTS` accepts, so a browser page served from a host the operator already trusts
//! (by default: this machine) may call the server, while a DNS-rebinding page, whose origin is
//! the attacker's name, and every other site get 403. `ALLOWED_ORIGINS` replaces that rule
//! with its explicit list.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::config::Config;

/// Refuses requests whose `Host` is not allowed or whose `Origin`, when present, is not.
pub async fn check_host_and_origin(
    State(config): State<Arc<Config>>,
    request: Request,
    next: Next,
) -> Response {
    match refusal(&config, &request) {
        Some(refused) => refused,
        None => next.run(request).await,
    }
}

/// The 403 for `request` when its `Host` or `Origin` is not allowed.
pub fn refusal<B>(config: &Config, request: &axum::http::Request<B>) -> Option<Response> {
    if refused_header(config, request)? == header::HOST {
        tracing::warn!(host = ?request_host(request), "refused request: Host not allowed");
        Some(forbidden("Host header is not allowed"))
    } else {
        let origin = request.headers().get(header::ORIGIN);
        tracing::warn!(origin = ?origin, "refused request: Origin not allowed");
        Some(forbidden("Origin header is not allowed"))
    }
}

/// Which of `Host` and `Origin` makes `request` refused, if one does.
pub fn refused_header<B>(
    config: &Config,
    request: &axum::http::Request<B>,
) -> Option<header::HeaderName> {
    if !request_host(request).is_some_and(|h| host_allowed(h, &config.allowed_hosts)) {
        return Some(header::HOST);
    }
    let origin = request.headers().get(header::ORIGIN)?;
    let allowed = origin.to_str().is_ok_and(|o| {
        if config.allowed_origins.is_empty() {
            origin_on_allowed_host(o, &config.allowed_hosts)
        } else {
            origin_allowed(o, &config.allowed_origins)
        }
    });
    (!allowed).then_some(header::ORIGIN)
}

/// The `Host` header, or the authority of the request's URI (HTTP/2).
fn request_host<B>(request: &axum::http::Request<B>) -> Option<&str> {
    host_header(request.headers()).or_else(|| request.uri().authority().map(|a| a.as_str()))
}

fn host_header(headers: &HeaderMap) -> Option<&str> {
    headers.get(header::HOST).and_then(|h| h.to_str().ok())
}

/// Splits `host[:port]` (IPv6 in brackets) into a lowercase host and an optional port.
fn split_authority(authority: &str) -> Option<(String, Option<&str>)> {
    let authority = authority.trim();
    let (host, port) = if let Some(rest) = authority.strip_prefix('[') {
        let end = rest.find(']')?;
        let port = rest[end + 1..].strip_prefix(':');
        (&authority[..end + 2], port)
    } else {
        match authority.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        }
    };
    if host.is_empty()
        || port.is_some_and(|p| p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()))
    {
        return None;
    }
    Some((host.to_ascii_lowercase(), port))
}

/// `allowed` entries are `name` (any port) or `name:port`.
fn host_allowed(host: &str, allowed: &[String]) -> bool {
    let Some((host, port)) = split_authority(host) else {
        return false;
    };
    allowed
        .iter()
        .filter_map(|a| split_authority(a))
        .any(|(name, allowed_port)| {
            name == host && (allowed_port.is_none() || allowed_port == port)
        })
}

/// The default rule: an `http` or `https` origin whose `host[:port]` passes [`host_allowed`]
/// (an opaque origin such as `null` never does).
fn origin_on_allowed_host(origin: &str, allowed_hosts: &[String]) -> bool {
    let origin = origin.trim().trim_end_matches('/');
    let Some((scheme, authority)) = origin.split_once("://") else {
        return false;
    };
    let web = scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("https");
    // An origin has no path, user info or query; refuse anything that is not a bare authority.
    let bare = !authority.contains(['/', '@', '?', '#']);
    web && bare && host_allowed(authority, allowed_hosts)
}

/// `allowed` entries are `scheme://host[:port]`; the port `*` matches any port.
fn origin_allowed(origin: &str, allowed: &[String]) -> bool {
    let origin = origin.trim().trim_end_matches('/').to_ascii_lowercase();
    allowed.iter().any(|entry| {
        let entry = entry.trim().trim_end_matches('/').to_ascii_lowercase();
        match entry.strip_suffix(":*") {
            Some(prefix) => {
                origin == prefix
                    || origin.strip_prefix(prefix).is_some_and(|rest| {
                        rest.strip_prefix(':')
                            .is_some_and(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
                    })
            }
            None => origin == entry,
        }
    })
}

fn forbidden(message: &str) -> Response {
    let body = json!({
        "jsonrpc": "2.0",
        "error": { "code": -32600, "message": format!("Forbidden: {message}") },
    });
    (StatusCode::FORBIDDEN, axum::Json(body)).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn hosts_match_by_name_and_optional_port() {
        let allowed = list(&["localhost", "mcp.example:8443", "[::1]"]);
        assert!(host_allowed("localhost:8080", &allowed));
        assert!(host_allowed("LOCALHOST", &allowed));
        assert!(host_allowed("mcp.example:8443", &allowed));
        assert!(!host_allowed("mcp.example:443", &allowed));
        assert!(host_allowed("[::1]:8080", &allowed));
        assert!(!host_allowed("evil.example", &allowed));
        assert!(!host_allowed("localhost:x", &allowed));
    }

    #[test]
    fn default_origins_are_web_origins_on_allowed_hosts() {
        let hosts = list(&["localhost", "127.0.0.1", "[::1]", "mcp.example:8443"]);
        assert!(origin_on_allowed_host("http://localhost:3000", &hosts));
        assert!(origin_on_allowed_host("http://127.0.0.1:8080", &hosts));
        assert!(origin_on_allowed_host("HTTPS://LOCALHOST", &hosts));
        assert!(origin_on_allowed_host("http://[::1]:9000", &hosts));
        assert!(origin_on_allowed_host("https://mcp.example:8443", &hosts));
        assert!(!origin_on_allowed_host("https://mcp.example", &hosts));
        assert!(!origin_on_allowed_host("http://evil.example.com", &hosts));
        assert!(!origin_on_allowed_host(
            "http://localhost.evil:3000",
            &hosts
        ));
        assert!(!origin_on_allowed_host("http://evil@localhost", &hosts));
        assert!(!origin_on_allowed_host("file://localhost", &hosts));
        assert!(!origin_on_allowed_host("null", &hosts));
        assert!(!origin_on_allowed_host("localhost", &hosts));
    }

    #[test]
    fn origins_match_exactly_or_by_wildcard_port() {
        let allowed = list(&["https://app.example", "http://localhost:*"]);
        assert!(origin_allowed("https://app.example", &allowed));
        assert!(!origin_allowed("https://app.example:8443", &allowed));
        assert!(origin_allowed("http://localhost:3000", &allowed));
        assert!(!origin_allowed("http://localhost.evil:3000", &allowed));
        assert!(!origin_allowed("null", &allowed));
    }
}
