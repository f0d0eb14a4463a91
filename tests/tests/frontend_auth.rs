//! `AUTH_MODE=tokenreview` against the real API server: the front end binary (with the admin
//! kubeconfig, for its TokenReview calls) accepts ServiceAccount tokens minted by the
//! TokenRequest API for its audience, refuses other audiences and garbage with 401 and a
//! `WWW-Authenticate` pointing at the protected resource metadata, records the ServiceAccount's
//! username as the task owner, and keeps one ServiceAccount's tasks from another.

mod common;

use bytes::Bytes;
use common::start_confirm_owned_by;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client as HttpClient;
use hyper_util::rt::TokioExecutor;
use k8s_openapi::api::core::v1::ServiceAccount;
use kube::Api;
use kube::api::PostParams;
use mcp_task_operator_crds::McpTask;
use mcp_task_operator_harness::fixture_tools::serve_fixtures;
use mcp_task_operator_harness::frontend::Frontend;
use mcp_task_operator_harness::mcp_client::{
    Mcp, PROTOCOL_VERSION, assert_foreign_task_looks_unknown,
};
use mcp_task_operator_harness::{kubectl, with_temp_ns};
use serde_json::{Value, json};

/// The audience the front end asks TokenReview for.
const AUDIENCE: &str = "mcp-task-operator-test";
/// The public URL the front end is told it serves (`RESOURCE_URL`).
const RESOURCE_URL: &str = "https://mcp.example.test/mcp";
/// Where the protected resource metadata for [`RESOURCE_URL`] lives (RFC 9728 §3.1).
const METADATA_URL: &str = "https://mcp.example.test/.well-known/oauth-protected-resource/mcp";

/// Creates ServiceAccount `name` in `ns`.
async fn create_service_account(client: &kube::Client, ns: &str, name: &str) {
    let api: Api<ServiceAccount> = Api::namespaced(client.clone(), ns);
    let mut account = ServiceAccount::default();
    account.metadata.name = Some(name.to_owned());
    api.create(&PostParams::default(), &account)
        .await
        .unwrap_or_else(|e| panic!("cannot create ServiceAccount {name}: {e}"));
}

/// A token for ServiceAccount `name` in `ns` with `audience`, from the TokenRequest API.
fn token(ns: &str, name: &str, audience: &str) -> String {
    let output = kubectl(&[
        "create",
        "token",
        name,
        "--audience",
        audience,
        "--duration",
        "10m",
        "-n",
        ns,
    ]);
    assert!(
        output.status.success(),
        "kubectl create token {name}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout)
        .expect("token is UTF-8")
        .trim()
        .to_owned()
}

/// The answer to one raw request: status, `WWW-Authenticate` and body.
struct Raw {
    status: u16,
    challenge: Option<String>,
    body: String,
}

/// Sends `method` to `url` with an optional `Authorization` value and, for POST, a
/// `tools/list` request.
async fn raw(method: &str, url: &str, authorization: Option<&str>) -> Raw {
    let client = HttpClient::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let meta = json!({ "io.modelcontextprotocol/protocolVersion": PROTOCOL_VERSION,
        "io.modelcontextprotocol/clientCapabilities": {} });
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list",
        "params": { "_meta": meta } });
    let mut request = hyper::Request::builder()
        .method(method)
        .uri(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", PROTOCOL_VERSION)
        .header("mcp-method", "tools/list");
    if let Some(value) = authorization {
        request = request.header("authorization", value);
    }
    let body = if method == "POST" {
        Bytes::from(body.to_string())
    } else {
        Bytes::new()
    };
    let response = client
        .request(request.body(Full::new(body)).expect("valid request"))
        .await
        .unwrap_or_else(|e| panic!("{method} {url} failed: {e}"));
    let status = response.status().as_u16();
    let challenge = response
        .headers()
        .get("www-authenticate")
        .map(|v| v.to_str().expect("ASCII header").to_owned());
    let bytes = response
        .into_body()
        .collect()
        .await
        .expect("read body")
        .to_bytes();
    Raw {
        status,
        challenge,
        body: String::from_utf8_lossy(&bytes).into_owned(),
    }
}

/// Asserts a 401 whose `Bearer` challenge names the metadata and, when given, the error.
fn assert_refused(reply: &Raw, error: Option<&str>, what: &str) {
    assert_eq!(reply.status, 401, "{what}: {}", reply.body);
    let challenge = reply
        .challenge
        .as_deref()
        .unwrap_or_else(|| panic!("{what}: 401 without WWW-Authenticate"));
    assert!(challenge.starts_with("Bearer "), "{what}: {challenge}");
    assert!(
        challenge.contains(&format!("resource_metadata=\"{METADATA_URL}\"")),
        "{what}: {challenge}"
    );
    if let Some(error) = error {
        assert!(
            challenge.contains(&format!("error=\"{error}\"")),
            "{what}: {challenge}"
        );
    }
}

#[tokio::test]
async fn tokenreview_accepts_the_audience_owns_tasks_by_service_account_and_refuses_the_rest() {
    with_temp_ns("frontend-auth", |client, ns| async move {
        let _writer = serve_fixtures(&client, &ns).await;
        create_service_account(&client, &ns, "alice").await;
        create_service_account(&client, &ns, "bob").await;
        let frontend = Frontend::start(
            &ns,
            &[
                ("AUTH_MODE", "tokenreview"),
                ("TOKEN_AUDIENCES", AUDIENCE),
                ("RESOURCE_URL", RESOURCE_URL),
                ("AUTHORIZATION_SERVERS", "https://issuer.example.test"),
            ],
        )
        .await;

        let alice_token = token(&ns, "alice", AUDIENCE);
        let bob_token = token(&ns, "bob", AUDIENCE);
        let alice = Mcp::new(&frontend.url).with_token(&alice_token);
        let bob = Mcp::new(&frontend.url).with_token(&bob_token);
        alice.wait_for_tools(&["confirm_delete"]).await;

        // Refused: no token, a real token for another audience, garbage. Each 401 points at
        // the metadata.
        let none = raw("POST", &frontend.url, None).await;
        assert_refused(&none, None, "no token");
        let other_audience = token(&ns, "alice", "some-other-audience");
        let wrong = raw(
            "POST",
            &frontend.url,
            Some(&format!("Bearer {other_audience}")),
        )
        .await;
        assert_refused(&wrong, Some("invalid_token"), "wrong audience");
        let garbage = raw("POST", &frontend.url, Some("Bearer not-a-token")).await;
        assert_refused(&garbage, Some("invalid_token"), "garbage");
        let accepted = raw(
            "POST",
            &frontend.url,
            Some(&format!("Bearer {alice_token}")),
        )
        .await;
        assert_eq!(accepted.status, 200, "{}", accepted.body);

        // The metadata the challenge names is served (unauthenticated) at its path here.
        let path = METADATA_URL
            .strip_prefix("https://mcp.example.test")
            .expect("metadata path");
        let local = frontend.url.replace("/mcp", path);
        let metadata = raw("GET", &local, None).await;
        assert_eq!(metadata.status, 200, "{}", metadata.body);
        let metadata: Value = serde_json::from_str(&metadata.body).expect("metadata is JSON");
        assert_eq!(metadata["resource"], RESOURCE_URL);
        assert_eq!(
            metadata["authorization_servers"],
            json!(["https://issuer.example.test"])
        );
        assert_eq!(metadata["bearer_methods_supported"], json!(["header"]));

        // The task belongs to alice's ServiceAccount username.
        let username = format!("system:serviceaccount:{ns}:alice");
        let id = start_confirm_owned_by(&client, &ns, &alice, "sa.txt", &username).await;
        let tasks: Api<McpTask> = Api::namespaced(client.clone(), &ns);

        // Bob cannot tell alice's task from one that does not exist, nor touch it.
        assert_foreign_task_looks_unknown(&bob, &alice, &tasks, &id).await;
        let answer = json!({ "confirm-1": { "action": "accept", "content": { "confirm": true } } });
        let ack = alice.update_task(&id, answer).await;
        assert_eq!(ack.result()["resultType"], "complete");
        let done = alice.wait_status(&id, "completed").await;
        assert_eq!(done["result"]["content"][0]["text"], "Deleted sa.txt");
    })
    .await;
}
