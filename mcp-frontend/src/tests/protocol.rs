//! Transport and envelope rules: discover, `_meta`, headers, versions, removed methods.

use axum::body::Body;
use axum::http::{Request, StatusCode};
use serde_json::{Value, json};

use super::*;

#[tokio::test]
async fn discover_advertises_tools_and_the_tasks_extension_exactly() {
    let (state, _) = test_state();
    let (status, body) = call(
        &state,
        rpc("server/discover", json!({"_meta": meta(false)})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let result = &body["result"];
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["supportedVersions"], json!([V]));
    assert_eq!(result["capabilities"]["extensions"][TASKS], json!({}));
    assert!(result["capabilities"]["tools"].is_object());
    assert!(result["capabilities"].get("tasks").is_none());
    assert_eq!(result["ttlMs"], 60_000);
    assert_eq!(result["cacheScope"], "public");
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "mcp-task-operator"
    );
    assert!(result.get("protocolVersion").is_none());
    assert!(result.get("serverInfo").is_none());
}

#[tokio::test]
async fn missing_meta_keys_are_invalid_params_with_400() {
    let (state, _) = test_state();
    let mut no_version = meta(false);
    no_version
        .as_object_mut()
        .unwrap()
        .remove("io.modelcontextprotocol/protocolVersion");
    let mut no_caps = meta(false);
    no_caps
        .as_object_mut()
        .unwrap()
        .remove("io.modelcontextprotocol/clientCapabilities");
    for params in [
        json!({}),
        json!({"_meta": no_version}),
        json!({"_meta": no_caps}),
    ] {
        let body = rpc("server/discover", params);
        let request = post(&body)
            .header("mcp-protocol-version", V)
            .body(Body::from(body.to_string()))
            .unwrap();
        let (status, answer) = send(&state, request).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
        assert_eq!(answer["error"]["code"], -32602, "{answer}");
        assert_eq!(answer["id"], 1);
    }
}

#[tokio::test]
async fn meta_without_client_info_is_served() {
    let (state, _) = test_state();
    let mut m = meta(false);
    m.as_object_mut()
        .unwrap()
        .remove("io.modelcontextprotocol/clientInfo");
    let (status, body) = call(&state, rpc("tools/list", json!({"_meta": m}))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

#[tokio::test]
async fn version_header_disagreeing_with_meta_or_missing_is_header_mismatch() {
    let (state, _) = test_state();
    let body = rpc("tools/list", json!({"_meta": meta(false)}));
    for version in [Some("2025-11-25"), None] {
        let mut request = bare_post().header("mcp-method", "tools/list");
        if let Some(version) = version {
            request = request.header("mcp-protocol-version", version);
        }
        let request = request.body(Body::from(body.to_string())).unwrap();
        assert_header_mismatch(&state, request).await;
    }
}

#[tokio::test]
async fn unsupported_version_is_32022_naming_both_sides() {
    let (state, _) = test_state();
    let mut m = meta(false);
    m["io.modelcontextprotocol/protocolVersion"] = json!("v999.0.0");
    let (status, body) = call(&state, rpc("tools/list", json!({"_meta": m}))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(body["error"]["code"], -32022);
    assert_eq!(body["error"]["data"]["requested"], "v999.0.0");
    assert!(
        body["error"]["data"]["supported"]
            .as_array()
            .unwrap()
            .contains(&json!(V))
    );
}

#[tokio::test]
async fn mcp_method_and_name_headers_must_match_the_body() {
    let (state, _) = test_state();
    let body = rpc("tasks/get", json!({"taskId": "abc", "_meta": meta(true)}));
    for (header, value) in [("mcp-name", "other"), ("mcp-method", "tasks/cancel")] {
        let request = post(&body)
            .header(header, value)
            .body(Body::from(body.to_string()))
            .unwrap();
        // A second value for the header: rmcp refuses duplicates and mismatches alike.
        assert_header_mismatch(&state, request).await;
    }
    let request = bare_post()
        .header("mcp-protocol-version", V)
        .header("mcp-method", "tasks/get")
        .header("mcp-name", "other")
        .body(Body::from(body.to_string()))
        .unwrap();
    assert_header_mismatch(&state, request).await;
}

#[tokio::test]
async fn removed_and_unknown_methods_are_404_method_not_found() {
    let (state, _) = test_state();
    for method in [
        "tasks/result",
        "tasks/list",
        "ping",
        "logging/setLevel",
        "resources/subscribe",
        "no/such/method",
        "initialize",
    ] {
        let mut params = json!({"_meta": meta(true)});
        if method == "initialize" {
            params["protocolVersion"] = json!(V);
            params["capabilities"] = json!({});
            params["clientInfo"] = json!({"name": "t", "version": "1"});
        }
        if method == "resources/subscribe" {
            params["uri"] = json!("file:///x");
        }
        if method == "logging/setLevel" {
            params["level"] = json!("info");
        }
        let (status, body) = call(&state, rpc(method, params)).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{method}: {body}");
        assert_eq!(body["error"]["code"], -32601, "{method}: {body}");
        assert_eq!(body["id"], 1);
    }
}

#[tokio::test]
async fn legacy_initialize_is_answered_statelessly() {
    let (state, _) = test_state();
    let body = rpc(
        "initialize",
        json!({
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "old", "version": "1"},
        }),
    );
    let request = bare_post().body(Body::from(body.to_string())).unwrap();
    let response = crate::app(state.clone()).oneshot(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert!(response.headers().get("mcp-session-id").is_none());
    let bytes = http_body_util::BodyExt::collect(response.into_body())
        .await
        .unwrap()
        .to_bytes();
    let body: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(body["result"]["protocolVersion"], "2025-11-25", "{body}");
    // Only what a legacy client can use: tools, no tasks extension (its calls are synchronous)
    // and no listChanged (its notifications need subscriptions/listen, which it cannot send).
    assert_eq!(
        body["result"]["capabilities"],
        json!({"tools": {}}),
        "{body}"
    );
    let instructions = body["result"]["instructions"].as_str().unwrap();
    assert!(instructions.contains("Every call waits"), "{instructions}");
    // A 2026-07-28 client still sees both in discover.
    let (_, discover) = call(
        &state,
        rpc("server/discover", json!({"_meta": meta(false)})),
    )
    .await;
    let capabilities = &discover["result"]["capabilities"];
    assert_eq!(capabilities["tools"]["listChanged"], true, "{discover}");
    assert_eq!(capabilities["extensions"][TASKS], json!({}), "{discover}");
}

#[tokio::test]
async fn tools_list_shows_ready_tools_with_schemas_as_written() {
    let (state, _) = test_state();
    let (status, body) = call(&state, rpc("tools/list", json!({"_meta": meta(false)}))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let tools = body["result"]["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        ["confirm_delete", "failing_job", "greet", "slow_compute"]
    );
    assert_eq!(tools[2]["inputSchema"]["required"], json!(["name"]));
    assert!(tools[2].get("execution").is_none());
    assert_eq!(body["result"]["ttlMs"], 5_000);
    assert_eq!(body["result"]["cacheScope"], "public");
}

#[tokio::test]
async fn foreign_hosts_and_origins_are_forbidden() {
    let (state, _) = test_state();
    let body = rpc("server/discover", json!({"_meta": meta(false)}));
    let evil_host = post_to_host(&body, "evil.example", &[]);
    assert_eq!(send(&state, evil_host).await.0, StatusCode::FORBIDDEN);
    let evil_origin = post_to_host(&body, "localhost", &[("origin", "https://evil.example")]);
    assert_eq!(send(&state, evil_origin).await.0, StatusCode::FORBIDDEN);
    let good_origin = post_to_host(&body, "localhost", &[("origin", "https://app.example")]);
    assert_eq!(send(&state, good_origin).await.0, StatusCode::OK);
}

#[tokio::test]
async fn get_on_the_endpoint_is_405_and_probes_answer() {
    let (state, _) = test_state();
    let get = Request::get("/mcp")
        .header("host", "localhost")
        .body(Body::empty())
        .unwrap();
    assert_eq!(send(&state, get).await.0, StatusCode::METHOD_NOT_ALLOWED);
    for path in ["/healthz", "/readyz"] {
        let probe = Request::get(path).body(Body::empty()).unwrap();
        assert_eq!(send(&state, probe).await.0, StatusCode::OK, "{path}");
    }
}

#[tokio::test]
async fn metrics_count_requests_by_method_and_status() {
    let (state, _) = test_state();
    call(&state, rpc("tools/list", json!({"_meta": meta(false)}))).await;
    call(&state, rpc("tasks/list", json!({"_meta": meta(true)}))).await;
    let (status, body) = send(
        &state,
        Request::get("/metrics").body(Body::empty()).unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let text = body.as_str().unwrap();
    assert!(
        text.contains(r#"mcp_frontend_requests_total{method="tools/list",status="200"} 1"#),
        "{text}"
    );
    assert!(
        text.contains(r#"mcp_frontend_requests_total{method="other",status="404"} 1"#),
        "{text}"
    );
}

#[tokio::test]
async fn readyz_waits_for_the_caches() {
    struct Unsynced;
    impl crate::tools::ToolCatalog for Unsynced {
        fn snapshot(&self) -> std::sync::Arc<crate::tools::CatalogSnapshot> {
            std::sync::Arc::default()
        }
        fn is_synced(&self) -> bool {
            false
        }
    }
    let (state, _) = test_state();
    let state = AppState {
        tools: std::sync::Arc::new(Unsynced),
        ..state
    };
    let probe = Request::get("/readyz").body(Body::empty()).unwrap();
    assert_eq!(send(&state, probe).await.0, StatusCode::SERVICE_UNAVAILABLE);
}

/// The -32022 names exactly the versions discover advertises (the conformance suite's
/// `sep-2575-server-unsupported-version-error`), on rmcp's path and on our listen route, while
/// legacy clients still negotiate 2025-11-25 through `initialize`.
#[tokio::test]
async fn unsupported_version_error_lists_what_discover_advertises() {
    let (state, _) = test_state();
    let (_, discover) = call(
        &state,
        rpc("server/discover", json!({"_meta": meta(false)})),
    )
    .await;
    let advertised = discover["result"]["supportedVersions"].clone();
    assert_eq!(advertised, json!([V]));

    let mut m = meta(true);
    m["io.modelcontextprotocol/protocolVersion"] = json!("v999.0.0");
    for (method, mut params) in [
        ("server/discover", json!({})),
        ("tools/list", json!({})),
        (
            "subscriptions/listen",
            json!({"notifications": {"taskIds": []}}),
        ),
    ] {
        params["_meta"] = m.clone();
        let (status, body) = call(&state, rpc(method, params)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{method}: {body}");
        assert_eq!(body["error"]["code"], -32022, "{method}: {body}");
        assert_eq!(body["error"]["data"]["supported"], advertised, "{method}");
        assert_eq!(body["error"]["data"]["requested"], "v999.0.0", "{method}");
    }

    // 2025-11-25 is not a per-request version...
    let mut m = meta(false);
    m["io.modelcontextprotocol/protocolVersion"] = json!("2025-11-25");
    let (status, body) = call(&state, rpc("tools/list", json!({"_meta": m}))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(body["error"]["data"]["supported"], advertised);
    // ...but a legacy client's initialize still gets it, and older asks are offered it.
    for (asked, answered) in [("2025-11-25", "2025-11-25"), ("2025-06-18", "2025-11-25")] {
        let body = rpc(
            "initialize",
            json!({"protocolVersion": asked, "capabilities": {},
                "clientInfo": {"name": "old", "version": "1"}}),
        );
        let request = bare_post().body(Body::from(body.to_string())).unwrap();
        let (status, body) = send(&state, request).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(
            body["result"]["protocolVersion"], answered,
            "{asked}: {body}"
        );
    }
}

/// MCP asks local servers to validate `Origin` and bind to localhost: by default a page on an
/// allowed host (this machine) is accepted, a DNS-rebinding page is not (the conformance
/// suite's `dns-rebinding-protection`); an explicit `ALLOWED_ORIGINS` replaces the default.
#[tokio::test]
async fn default_origins_are_those_on_allowed_hosts() {
    let (state, _) = test_state_with(&[("ALLOWED_ORIGINS", "")]);
    let body = rpc("server/discover", json!({"_meta": meta(false)}));
    for (host, origin, expected) in [
        ("127.0.0.1:8080", "http://127.0.0.1:8080", StatusCode::OK),
        ("localhost:8080", "http://localhost:3000", StatusCode::OK),
        ("[::1]:8080", "http://[::1]:8080", StatusCode::OK),
        (
            "evil.example.com",
            "http://evil.example.com",
            StatusCode::FORBIDDEN,
        ),
        (
            "127.0.0.1:8080",
            "http://evil.example.com",
            StatusCode::FORBIDDEN,
        ),
        ("127.0.0.1:8080", "null", StatusCode::FORBIDDEN),
    ] {
        let request = post_to_host(&body, host, &[("origin", origin)]);
        assert_eq!(send(&state, request).await.0, expected, "{host} {origin}");
    }
    // Hosts the operator added are trusted origins too.
    let (state, _) = test_state_with(&[("ALLOWED_ORIGINS", ""), ("ALLOWED_HOSTS", "mcp.example")]);
    let request = post_to_host(&body, "mcp.example", &[("origin", "https://mcp.example")]);
    assert_eq!(send(&state, request).await.0, StatusCode::OK);
    let request = post_to_host(&body, "mcp.example", &[("origin", "http://localhost")]);
    assert_eq!(send(&state, request).await.0, StatusCode::FORBIDDEN);
    // An explicit list replaces the default.
    let (state, _) = test_state_with(&[("ALLOWED_ORIGINS", "https://app.example")]);
    let request = post_to_host(&body, "localhost", &[("origin", "http://localhost:3000")]);
    assert_eq!(send(&state, request).await.0, StatusCode::FORBIDDEN);
    let request = post_to_host(&body, "localhost", &[("origin", "https://app.example")]);
    assert_eq!(send(&state, request).await.0, StatusCode::OK);
}

/// RFC 9110 field parsing drops whitespace around a header value before it is compared, so
/// `Mcp-Name: "  failing_job  "` names `failing_job` (the conformance suite's
/// `sep-2243-server-accepts-whitespace-header-value`, which our fixture list cannot show).
#[tokio::test]
async fn whitespace_around_mcp_name_is_accepted() {
    let (state, _) = test_state();
    let body = rpc(
        "tools/call",
        json!({"name": "failing_job", "arguments": {}, "_meta": meta(true)}),
    );
    let mut request = post(&body).body(Body::from(body.to_string())).unwrap();
    request
        .headers_mut()
        .insert("mcp-name", "  failing_job  ".parse().unwrap());
    let (status, answer) = send(&state, request).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["result"]["resultType"], "task", "{answer}");
}
