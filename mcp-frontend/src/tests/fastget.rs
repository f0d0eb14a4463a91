//! The `tasks/get` fast path against the full path: two front ends over one task store, one
//! with `FAST_GET=false`, get the same requests; every answer must be byte-identical (status,
//! `Content-Type` and body bytes), for every task state and every malformed variant. The
//! cases are the cross product of states × request IDs × body variants × header variants.

use axum::body::Body;
use axum::http::Request;
use http_body_util::BodyExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};
use tower::ServiceExt;

use super::*;
use crate::auth::Auth;
use crate::static_tokens::StaticTokens;

/// Two front ends over the same store: with the fast path, and without it. Each has its own
/// limiters, which see the same requests in the same order.
fn pair(vars: &[(&str, &str)]) -> (AppState, AppState, Arc<MemoryStore>) {
    let (fast, store) = test_state_with(vars);
    let mut off = vars.to_vec();
    off.push(("FAST_GET", "false"));
    let (mut full, _) = test_state_with(&off);
    full.tasks = fast.tasks.clone();
    assert!(fast.fast_get.is_some() && full.fast_get.is_none());
    (with_tokens(fast, vars), with_tokens(full, vars), store)
}

/// `state`, with two static tokens when `vars` set `AUTH_MODE=static`: [`ANONYMOUS_TOKEN`]
/// and `tok-bob` (user `bob`).
pub(super) fn with_tokens(state: AppState, vars: &[(&str, &str)]) -> AppState {
    if !vars.contains(&("AUTH_MODE", "static")) {
        return state;
    }
    let tokens = format!("{ANONYMOUS_TOKEN},{}\ntok-bob,bob\n", anonymous());
    state.with_auth(Auth::Bearer(Arc::new(StaticTokens::parse(&tokens))))
}

/// With static tokens (see [`pair`]): the token of the caller that owns the stored tasks.
pub(super) const ANONYMOUS_TOKEN: &str = "tok-anon";

/// Status, `Content-Type` and body bytes of `request` through `state`.
pub(super) async fn raw(
    state: &AppState,
    request: Request<Body>,
) -> (u16, Option<String>, Vec<u8>) {
    let response = crate::app(state.clone()).oneshot(request).await.unwrap();
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned());
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, content_type, body.to_vec())
}

/// A request with `body` (raw bytes) and `headers` (name, value), on top of Host (unless
/// `headers` has one).
pub(super) fn request(body: &[u8], headers: &[(&str, String)]) -> Request<Body> {
    let mut builder = Request::post("/mcp");
    if !headers.iter().any(|(name, _)| *name == "host") {
        builder = builder.header("host", "localhost:8080");
    }
    for (name, value) in headers {
        builder = builder.header(*name, value.as_str());
    }
    builder.body(Body::from(body.to_vec())).unwrap()
}

/// The states a task can be shown in, each stored under its own ID; returns the IDs.
fn store_states(store: &MemoryStore) -> Vec<String> {
    let large = "x".repeat(512 * 1024);
    let mid = "y".repeat(64 * 1024);
    let ask = json!({"method": "elicitation/create", "params": {"mode": "form", "message": "Go?",
        "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}}}});
    let statuses = [
        json!({"status": "working"}),
        json!({"status": "working", "statusMessage": "step 2 of 3 \"quoted\" \u{e9}"}),
        json!({"status": "input_required", "inputRequests": {"go": ask}}),
        json!({"status": "completed", "result": {"content": [{"type": "text", "text": "hi"}]}}),
        json!({"status": "completed", "result": {"content": [{"type": "text", "text": mid}]}}),
        json!({"status": "completed", "result": {"content": [{"type": "text", "text": large}],
            "structuredContent": {"pollIntervalMs": 1}}}),
        json!({"status": "completed", "statusMessage": "done",
            "result": {"content": [], "isError": true}}),
        json!({"status": "failed", "error": {"code": -32603, "message": "boom",
            "data": {"reason": "BackoffLimitExceeded"}}}),
        json!({"status": "failed", "error": {"code": -32000, "message": "tool said no"}}),
        json!({"status": "cancelled", "statusMessage": "cancelled by the client"}),
    ];
    let mut ids: Vec<String> = statuses
        .into_iter()
        .map(|s| stored_task(store, anonymous(), Some(status(s))))
        .collect();
    // Not written by the operator yet; without an interval; another caller's; expired.
    ids.push(stored_task(store, anonymous(), None));
    let bare = stored_task(store, anonymous(), working());
    store.update(&bare, |t| t.spec.poll_interval_ms = None);
    ids.push(bare);
    ids.push(stored_task(store, "someone-else", working()));
    let expired = stored_task(store, anonymous(), working());
    store.update(&expired, |t| {
        let long_ago = Timestamp::now() - SignedDuration::from_hours(3);
        t.metadata.creation_timestamp = Some(Time(long_ago));
    });
    ids.push(expired);
    let deleted = stored_task(store, anonymous(), working());
    store.delete(&deleted);
    ids.push(deleted);
    // Unknown, and not a task ID at all.
    ids.push(task_id::generate());
    ids.push("../etc".to_owned());
    ids
}

/// Body variants of a poll of `task` with request ID `id`: the plain form first.
fn bodies(task: &str, id: &Value) -> Vec<Vec<u8>> {
    let plain = json!({"jsonrpc": "2.0", "id": id, "method": "tasks/get",
        "params": {"taskId": task, "_meta": meta(true)}});
    let mut variants = vec![plain.clone()];
    let mut with = |edit: &dyn Fn(&mut Value)| {
        let mut body = plain.clone();
        edit(&mut body);
        variants.push(body);
    };
    with(&|b| b["extra"] = json!(1));
    with(&|b| b["params"]["extra"] = json!(1));
    with(&|b| drop(b["params"].as_object_mut().unwrap().remove("taskId")));
    with(&|b| b["params"]["taskId"] = json!(7));
    with(&|b| drop(b["params"].as_object_mut().unwrap().remove("_meta")));
    with(&|b| b["params"]["_meta"]["progressToken"] = json!("p"));
    with(&|b| {
        b["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2025-11-25")
    });
    with(&|b| b["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] = json!({}));
    with(&|b| {
        drop(
            b["params"]["_meta"]
                .as_object_mut()
                .unwrap()
                .remove("io.modelcontextprotocol/clientInfo"),
        )
    });
    with(&|b| b["params"]["_meta"]["io.modelcontextprotocol/clientInfo"] = json!(5));
    with(&|b| b["jsonrpc"] = json!("1.0"));
    with(&|b| drop(b.as_object_mut().unwrap().remove("id")));
    with(&|b| b["params"] = json!([task]));
    with_raw_forms(variants, "tasks/get")
}

/// `variants` (the plain body first) as bytes, then the plain body's raw forms: pretty-printed,
/// truncated, followed by more JSON, in a batch, with `jsonrpc` twice, and with the `/` of
/// `method` escaped.
pub(super) fn with_raw_forms(variants: Vec<Value>, method: &str) -> Vec<Vec<u8>> {
    let plain = &variants[0];
    let text = plain.to_string();
    let mut raw: Vec<Vec<u8>> = variants
        .iter()
        .map(|v| v.to_string().into_bytes())
        .collect();
    raw.push(serde_json::to_vec_pretty(plain).unwrap());
    raw.push(text.as_bytes()[..text.len() - 3].to_vec());
    raw.push(format!("{text} {{}}").into_bytes());
    raw.push(format!("[{text}]").into_bytes());
    raw.push(
        text.replacen(
            "\"jsonrpc\":\"2.0\"",
            "\"jsonrpc\":\"2.0\",\"jsonrpc\":\"2.0\"",
            1,
        )
        .into_bytes(),
    );
    raw.push(
        text.replacen(method, &method.replace('/', "\\/"), 1)
            .into_bytes(),
    );
    raw
}

/// Header variants for a poll of `task`: the standard set first.
fn header_sets(task: &str) -> Vec<Vec<(&'static str, String)>> {
    header_variants("tasks/get", task)
}

/// Header variants for a request of `method` naming `name` (`Mcp-Name`): the standard set
/// first, then each header the fast paths check missing, repeated or unusual, and the layer
/// stack's checks (Host, Origin, bearer tokens).
pub(super) fn header_variants(method: &str, name: &str) -> Vec<Vec<(&'static str, String)>> {
    let task = name;
    let standard = vec![
        ("content-type", "application/json".to_owned()),
        ("accept", "application/json, text/event-stream".to_owned()),
        ("mcp-method", method.to_owned()),
        ("mcp-name", name.to_owned()),
        ("mcp-protocol-version", V.to_owned()),
    ];
    let replaced = |name: &'static str, value: Option<&str>| {
        let mut set: Vec<_> = standard
            .iter()
            .filter(|(n, _)| *n != name)
            .cloned()
            .collect();
        if let Some(value) = value {
            set.push((name, value.to_owned()));
        }
        set
    };
    let mut sets = vec![standard.clone()];
    sets.push(replaced("mcp-name", Some("someone-elses-task")));
    sets.push(replaced("mcp-name", None));
    sets.push(replaced("mcp-method", Some("tasks/cancel")));
    sets.push(replaced("mcp-protocol-version", None));
    sets.push(replaced("mcp-protocol-version", Some("2025-11-25")));
    sets.push(replaced("accept", Some("application/json")));
    sets.push(replaced(
        "accept",
        Some("application/json;q=0, text/event-stream"),
    ));
    sets.push(replaced(
        "content-type",
        Some("application/json; charset=utf-8"),
    ));
    sets.push(replaced("content-type", Some("text/plain")));
    let mut session = standard.clone();
    session.push(("mcp-session-id", "s-1".to_owned()));
    sets.push(session);
    let mut twice = standard.clone();
    twice.push(("mcp-name", task.to_owned()));
    sets.push(twice);
    let mut with = |name: &'static str, value: &str| {
        let mut set = standard.clone();
        set.push((name, value.to_owned()));
        sets.push(set);
    };
    // The checks of the layer stack the fast path repeats in front of it.
    with("host", "evil.example");
    with("host", "localhost:8080");
    with("origin", "http://evil.example");
    with("origin", "https://app.example");
    with("authorization", "Bearer some-token");
    with("authorization", &format!("Bearer {ANONYMOUS_TOKEN}"));
    with("authorization", "Bearer tok-bob");
    sets
}

async fn differ(vars: &[(&str, &str)]) -> u64 {
    let (fast, full, store) = pair(vars);
    let ids = [
        json!(1),
        json!(0),
        json!(-5),
        json!(i64::MAX),
        json!(u64::MAX),
        json!(1.5),
        json!("abc"),
        json!(""),
        json!("\u{e9}\"\\"),
        json!(null),
        json!(true),
        json!({}),
    ];
    let mut cases = 0;
    for task in store_states(&store) {
        // Young again (unless expired on purpose), so the advised interval stays the tool's
        // own however long this slow test takes; the new state also rebuilds the answer.
        if store
            .peek(&task)
            .is_some_and(|t| !t.is_expired(Timestamp::now()))
        {
            store.update(&task, |t| {
                t.metadata.creation_timestamp = Some(Time(Timestamp::now()));
            });
        }
        for (n, id) in ids.iter().enumerate() {
            let headers = header_sets(&task);
            for (b, body) in bodies(&task, id).iter().enumerate() {
                // Every header variant with the plain body; every body with the standard headers.
                let sets: &[_] = if b == 0 { &headers } else { &headers[..1] };
                for set in sets {
                    let want = raw(&full, request(body, set)).await;
                    let got = raw(&fast, request(body, set)).await;
                    let case = || format!("task {task}, id #{n}, body #{b}, headers {set:?}");
                    assert_same(&got, &want, case);
                    cases += 1;
                }
            }
        }
    }
    assert!(cases > 5_000, "{cases} cases");
    // The answers were counted alike, by method and status and by task outcome.
    assert_eq!(counts(&fast), counts(&full));
    fast.fast_get.as_ref().unwrap().served()
}

/// The request and task-request counters of `state`, as `/metrics` shows them.
fn counts(state: &AppState) -> Vec<String> {
    counter_lines(state, "mcp_frontend_task_requests_total", "tasks/get")
}

/// The lines of `mcp_frontend_requests_total` and of `series` in `/metrics` of `state`,
/// sorted; some must name `method`.
pub(super) fn counter_lines(state: &AppState, series: &str, method: &str) -> Vec<String> {
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &state.registry).unwrap();
    let counted = ["mcp_frontend_requests_total", series];
    let lines = text
        .lines()
        .filter(|l| counted.iter().any(|c| l.starts_with(c)));
    let mut lines: Vec<String> = lines.map(str::to_owned).collect();
    lines.sort();
    assert!(lines.iter().any(|l| l.contains(method)), "{text}");
    lines
}

/// Asserts that the answers (status, `Content-Type`, body) of the two paths are the same,
/// showing both and `case` when not.
pub(super) fn assert_same(
    got: &(u16, Option<String>, Vec<u8>),
    want: &(u16, Option<String>, Vec<u8>),
    case: impl Fn() -> String,
) {
    let show = |(status, kind, body): &(u16, Option<String>, Vec<u8>)| {
        let body = String::from_utf8_lossy(&body[..body.len().min(800)]).into_owned();
        format!("{status} {kind:?} {body}")
    };
    assert!(
        got == want,
        "{}:\nfast {}\nfull {}",
        case(),
        show(got),
        show(want)
    );
}

#[tokio::test(start_paused = true)]
async fn fast_and_full_paths_answer_byte_identically() {
    let served = differ(&[]).await;
    // Ten servable states × four IDs rmcp reads (1, 0, -5, i64::MAX, "abc", "", an escaped
    // string) took the fast path, twice for the pretty-printed and escaped bodies.
    assert!(
        served >= 12 * 7,
        "the fast path answered only {served} polls"
    );
}

#[tokio::test(start_paused = true)]
async fn fast_and_full_paths_authenticate_alike() {
    let served = differ(&[("AUTH_MODE", "static"), ("STATIC_TOKENS_FILE", "/unused")]).await;
    // Only the owner's token, with the plain body, is served by the fast path.
    assert!(served >= 12, "the fast path answered only {served} polls");
}

#[tokio::test(start_paused = true)]
async fn fast_and_full_paths_apply_the_poll_limits_alike() {
    let served = differ(&[("POLL_RATE_PER_SECOND", "5"), ("POLL_BURST_PER_TASK", "3")]).await;
    assert!(served > 0, "the fast path answered no poll");
}

/// Status, `Content-Type`, `Content-Encoding` and the body of `request` through `state`,
/// decoded by a standard gzip decoder when it is gzip-coded.
async fn decoded(
    state: &AppState,
    request: Request<Body>,
) -> ((u16, Option<String>, Vec<u8>), Option<String>) {
    let response = crate::app(state.clone()).oneshot(request).await.unwrap();
    let header = |name: &str| {
        let value = response.headers().get(name)?;
        Some(value.to_str().unwrap().to_owned())
    };
    let (content_type, coding) = (header("content-type"), header("content-encoding"));
    let status = response.status().as_u16();
    let mut body = response
        .into_body()
        .collect()
        .await
        .unwrap()
        .to_bytes()
        .to_vec();
    if coding.as_deref() == Some("gzip") {
        let mut plain = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&body[..]), &mut plain)
            .expect("a valid gzip member");
        body = plain;
    }
    ((status, content_type, body), coding)
}

/// The fast path sends large answers gzip-coded exactly when the client accepts gzip, and a
/// gzip-coded answer decodes to the full path's bytes: for every task state, every request
/// ID and every `Accept-Encoding` form. The full path never codes its answers.
#[tokio::test(start_paused = true)]
async fn gzip_coded_answers_decode_to_the_full_paths_bytes() {
    let (fast, full, store) = pair(&[("GZIP_MIN_BYTES", "4096")]);
    let encodings: [(Option<&str>, bool); 9] = [
        (None, false),
        (Some("gzip"), true),
        (Some("gzip, deflate, br, zstd"), true),
        (Some("br;q=1.0, gzip;q=0.8, *;q=0.1"), true),
        (Some("*"), true),
        (Some("gzip;q=0"), false),
        (Some("gzip;q=0, *"), false),
        (Some("identity"), false),
        (Some("br, zstd"), false),
    ];
    let ids = [json!(1), json!("a\"b"), json!(u64::MAX)];
    let (mut coded, mut plain) = (0, 0);
    for task in store_states(&store) {
        for id in &ids {
            let body = bodies(&task, id).swap_remove(0);
            for (encoding, accepts) in encodings {
                let mut headers = header_sets(&task).swap_remove(0);
                headers.extend(encoding.map(|e| ("accept-encoding", e.to_owned())));
                let (want, not_coded) = decoded(&full, request(&body, &headers)).await;
                assert_eq!(not_coded, None, "the full path codes nothing");
                let (got, coding) = decoded(&fast, request(&body, &headers)).await;
                let case = || format!("task {task}, id {id}, Accept-Encoding {encoding:?}");
                assert_same(&got, &want, case);
                // Only an answer of at least GZIP_MIN_BYTES, and only when gzip is accepted.
                let large = want.0 == 200 && want.2.len() > 4096 + 64;
                assert_eq!(coding.is_some(), accepts && large, "{}", case());
                if coding.is_some() {
                    coded += 1;
                } else if large {
                    plain += 1;
                }
            }
        }
    }
    // The 64 KiB and 512 KiB results, two IDs (rmcp refuses u64::MAX on both paths), four
    // accepting forms each, and the same answers sent plain to the five that do not accept gzip.
    assert_eq!((coded, plain), (2 * 2 * 4, 2 * 2 * 5));
}

/// In-process cost of one poll of a completed task through the whole router, with and without
/// the fast path, at three result sizes; prints the figures (run with `--ignored --nocapture`;
/// meaningful only in a release build, and nothing is asserted).
#[tokio::test]
#[ignore = "a measurement, not a check"]
async fn cost_per_poll_by_result_size() {
    let (fast, full, store) = pair(&[]);
    for kib in [1, 64, 512] {
        let text = "r".repeat(kib * 1024);
        let done = status(json!({"status": "completed",
            "result": {"content": [{"type": "text", "text": text}]}}));
        let id = stored_task(&store, anonymous(), Some(done));
        let body = bodies(&id, &json!(1)).swap_remove(0);
        let headers = header_sets(&id).swap_remove(0);
        let mut per_poll = Vec::new();
        for state in [&fast, &full] {
            let rounds = 200;
            let started = std::time::Instant::now();
            for _ in 0..rounds {
                let (status, _, _) = raw(state, request(&body, &headers)).await;
                assert_eq!(status, 200);
            }
            per_poll.push(started.elapsed() / rounds);
        }
        eprintln!(
            "{kib} KiB result: fast path {:?} per poll, full path {:?}",
            per_poll[0], per_poll[1]
        );
    }
}
