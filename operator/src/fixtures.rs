//! Test fixtures: `McpTool` and `McpTask` objects from inline YAML.

use k8s_openapi::api::core::v1::Volume;
use mcp_task_operator_crds::{McpTask, McpTool};

/// Parses an `McpTool` from YAML.
pub fn tool_from(yaml: &str) -> McpTool {
    serde_yaml::from_str(yaml).expect("tool fixture is valid YAML")
}

/// Parses an `McpTask` from YAML.
pub fn task_from(yaml: &str) -> McpTask {
    serde_yaml::from_str(yaml).expect("task fixture is valid YAML")
}

/// A single-container tool named `report` (MCP name `restock_report`).
pub fn tool() -> McpTool {
    tool_from(
        r#"
apiVersion: mcptasks.io/v1alpha1
kind: McpTool
metadata: {name: report, namespace: tools, generation: 1, uid: tool-uid}
spec:
  name: restock_report
  inputSchema: {type: object, properties: {sku: {type: string}}}
  activeDeadlineSeconds: 600
  template:
    spec:
      containers:
        - name: main
          image: example.com/report:1
"#,
    )
}

/// A stored task of the `report` tool with arguments and no status.
pub fn task() -> McpTask {
    task_from(
        r#"
apiVersion: mcptasks.io/v1alpha1
kind: McpTask
metadata:
  name: abcdefghijklmnopqrstuvwxyz234567
  namespace: tools
  uid: task-uid
  generation: 1
  creationTimestamp: "2026-08-01T12:00:00Z"
spec:
  tool: restock_report
  owner: alice
  ttlMs: 3600000
  arguments: {sku: "A-1"}
"#,
    )
}

/// The files a downward API `volume` projects: (path, field path) pairs.
pub fn downward_files(volume: &Volume) -> Vec<(&str, &str)> {
    let items = volume
        .downward_api
        .as_ref()
        .unwrap()
        .items
        .as_ref()
        .unwrap();
    items
        .iter()
        .map(|i| {
            let field = i.field_ref.as_ref().unwrap();
            (i.path.as_str(), field.field_path.as_str())
        })
        .collect()
}

/// A mocked API server: the requests a reconcile is expected to make, in order.
pub mod api {
    use std::sync::Arc;

    use axum::http::{Method, Request, Response, StatusCode};
    use futures::channel::mpsc::UnboundedReceiver;
    use kube::client::Body;
    use kube::core::DeserializeGuard;
    use kube::runtime::controller::Action;
    use serde_json::Value;
    use tokio::task::JoinHandle;

    use crate::config::Config;
    use crate::context::{Context, TaskRef};
    use crate::state::State;

    /// One expected request: method, path (query excluded) and the response to send.
    #[derive(Debug, Clone)]
    pub struct Call {
        /// Expected method.
        pub method: Method,
        /// Expected path, without the query string.
        pub path: String,
        /// Response status.
        pub status: StatusCode,
        /// Response body; `None` echoes the request body.
        pub body: Option<Value>,
    }

    impl Call {
        /// Expects `method path` and answers 200 with `body`.
        pub fn ok(method: Method, path: &str, body: Value) -> Self {
            Self {
                method,
                path: path.to_owned(),
                status: StatusCode::OK,
                body: Some(body),
            }
        }

        /// Expects `method path` and answers 200 echoing the request body (apply, create).
        pub fn echo(method: Method, path: &str) -> Self {
            Self {
                method,
                path: path.to_owned(),
                status: StatusCode::OK,
                body: None,
            }
        }

        /// Expects `GET path` and answers 404.
        pub fn not_found(path: &str) -> Self {
            let body = serde_json::json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                "reason": "NotFound", "code": 404, "message": "not found"});
            Self {
                method: Method::GET,
                path: path.to_owned(),
                status: StatusCode::NOT_FOUND,
                body: Some(body),
            }
        }

        /// Expects `method path` and answers `code` with a Status carrying `message`.
        pub fn refused(method: Method, path: &str, code: u16, message: &str) -> Self {
            let body = serde_json::json!({"kind": "Status", "apiVersion": "v1",
                "status": "Failure", "reason": "Forbidden", "code": code, "message": message});
            Self {
                method,
                path: path.to_owned(),
                status: StatusCode::from_u16(code).expect("an HTTP status"),
                body: Some(body),
            }
        }

        /// Expects an Event to be published in `namespace`.
        pub fn event(namespace: &str) -> Self {
            Self::echo(
                Method::POST,
                &format!("/apis/events.k8s.io/v1/namespaces/{namespace}/events"),
            )
        }
    }

    /// Whether `method path` creates an Event.
    fn is_event(method: &Method, path: &str) -> bool {
        method == Method::POST && path.starts_with("/apis/events.k8s.io/")
    }

    /// What a log follower's list of its one pod gets: a pod whose tool container (`main` or
    /// `tool`) has terminated.
    fn stopped_pod() -> Value {
        let stopped = |name: &str| {
            serde_json::json!({"name": name, "image": "i", "imageID": "", "ready": false,
                "restartCount": 0, "state": {"terminated": {"exitCode": 0}}})
        };
        let pod = serde_json::json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "job-pod", "namespace": "tools"},
            "status": {"containerStatuses": [stopped("main"), stopped("tool")]}});
        serde_json::json!({"apiVersion": "v1", "kind": "PodList", "metadata": {}, "items": [pod]})
    }

    /// A context whose client talks to a mock serving `calls` in order (Events, sent in the
    /// background, in their own order); the handle returns the request bodies (JSON), in the
    /// order of `calls`, once every call was made, and fails on any unexpected request.
    pub fn context(
        calls: Vec<Call>,
    ) -> (
        Arc<Context>,
        JoinHandle<Vec<Value>>,
        UnboundedReceiver<TaskRef>,
    ) {
        context_with_logs(calls, "")
    }

    /// Runs `reconcile` once on `object` against a mock serving `calls` (see [`context`]): the
    /// action it returned and the request bodies.
    pub async fn run<K, F, Fut>(reconcile: F, object: K, calls: Vec<Call>) -> (Action, Vec<Value>)
    where
        F: FnOnce(Arc<DeserializeGuard<K>>, Arc<Context>) -> Fut,
        Fut: Future<Output = crate::error::Result<Action>>,
    {
        let (ctx, server, _triggers) = context(calls);
        let action = reconcile(Arc::new(DeserializeGuard(Ok(object))), ctx)
            .await
            .expect("reconcile succeeds");
        (action, server.await.expect("every expected call was made"))
    }

    /// Like [`context`], but every pod log request, whenever it comes (log followers run in
    /// the background), is answered at once with `logs`, and every list of one pod (by name) with
    /// a pod whose container has stopped; neither is counted as a call.
    pub fn context_with_logs(
        calls: Vec<Call>,
        logs: &'static str,
    ) -> (
        Arc<Context>,
        JoinHandle<Vec<Value>>,
        UnboundedReceiver<TaskRef>,
    ) {
        let (service, mut handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
        let server = tokio::spawn(async move {
            // Events are sent in the background (`events.rs`): each Event request takes the
            // first expected Event not yet made, every other request the first other call.
            let (events, others): (Vec<usize>, Vec<usize>) =
                (0..calls.len()).partition(|&i| is_event(&calls[i].method, &calls[i].path));
            let (mut events, mut others) = (events.into_iter(), others.into_iter());
            let mut bodies: Vec<Option<Value>> = vec![None; calls.len()];
            while bodies.iter().any(Option::is_none) {
                let (request, send) = handle
                    .next_request()
                    .await
                    .expect("the reconcile made this call");
                if request.uri().path().ends_with("/log") {
                    // As the kubelet serves it with `timestamps=true`: each line with its time.
                    let stamped: String = logs
                        .split_inclusive('\n')
                        .enumerate()
                        .map(|(i, line)| format!("2026-01-01T00:00:00.{i:03}Z {line}"))
                        .collect();
                    let response = Response::builder().body(Body::from(stamped.into_bytes()));
                    send.send_response(response.expect("response"));
                    continue;
                }
                // A log follower whose stream ended looks at its pod: the container stopped.
                let one_pod = request
                    .uri()
                    .query()
                    .is_some_and(|q| q.contains("fieldSelector=metadata.name"));
                if request.method() == Method::GET && one_pod {
                    let body = serde_json::to_vec(&stopped_pod()).expect("json");
                    send.send_response(Response::new(Body::from(body)));
                    continue;
                }
                let next = match is_event(request.method(), request.uri().path()) {
                    true => events.next(),
                    false => others.next(),
                };
                let Some(index) = next else {
                    panic!("unexpected request {request:?}");
                };
                let call = &calls[index];
                assert_eq!(
                    (request.method(), request.uri().path()),
                    (&call.method, call.path.as_str()),
                    "unexpected request {request:?}"
                );
                let bytes = request
                    .into_body()
                    .collect_bytes()
                    .await
                    .expect("request body");
                let sent: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
                let body = call.body.clone().unwrap_or_else(|| sent.clone());
                bodies[index] = Some(sent);
                let response = Response::builder()
                    .status(call.status)
                    .body(Body::from(serde_json::to_vec(&body).expect("json")))
                    .expect("response");
                send.send_response(response);
            }
            bodies.into_iter().flatten().collect()
        });
        let client = kube::Client::new(service, "default");
        let state = State::default();
        let config = Arc::new(Config::from_lookup(|_| None).expect("default config"));
        let (trigger, triggers) = futures::channel::mpsc::unbounded();
        (
            Arc::new(Context::new(client, state.metrics(), config, trigger)),
            server,
            triggers,
        )
    }
}
