//! Every input request the operator's contract parser accepts reaches the client unchanged
//! through the front end's mapping, and one the wire types cannot carry fails the task
//! (docs/tool-contract.md, "Input requests"). No cluster: the two crates' own functions.
//!
//! The property test draws requests from a seeded generator (the `rand` the workspace already
//! has, rather than a property-testing crate: the shapes are built by hand either way, and a
//! fixed seed makes every run check the same cases). Each case is printed on failure.

use std::collections::BTreeMap;

use mcp_task_operator::contract::{Line, Message, RawLine, parse_line};
use mcp_task_operator_crds::McpTask;
use mcp_task_operator_crds::wire::carry::first_loss;
use mcp_task_operator_mcp_frontend::wire::{check_carriable, detailed_task};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Map, Value, json};

/// Cases per run of the property test.
const CASES: usize = 4_000;

/// A stored task asking for `requests`.
fn input_required(requests: BTreeMap<String, Value>) -> McpTask {
    serde_json::from_value(json!({
        "apiVersion": "mcptasks.io/v1alpha1", "kind": "McpTask",
        "metadata": {"name": "t", "creationTimestamp": "2026-08-01T12:00:00Z"},
        "spec": {"tool": "x", "owner": "o", "pollIntervalMs": 2000},
        "status": {"status": "input_required", "inputRequests": requests},
    }))
    .expect("an McpTask")
}

/// The contract parser's view of one `{"mcp":"input"}` line asking `request` under `key`.
fn parse_input_line(key: &str, request: &Value) -> Line {
    let line = json!({"mcp": "input", "requests": {key: request}}).to_string();
    let bytes = line.into_bytes();
    let raw = RawLine {
        len: bytes.len(),
        bytes,
        unterminated: false,
    };
    parse_line(&raw, 1 << 20)
}

#[test]
fn every_input_request_the_operator_accepts_reaches_the_client_unchanged() {
    let mut rng = StdRng::seed_from_u64(0x6d63_7074);
    let mut accepted: Map<String, Value> = Map::new();
    let mut refused_as_not_carriable = 0;
    for case in 0..CASES {
        let request = any_request(&mut rng);
        match parse_input_line("k", &request) {
            Line::Message(Message::Input { requests }) => {
                // What the operator stores (characters the API server refuses became U+FFFD,
                // docs/tool-contract.md) is what must reach the client.
                let kept = requests["k"].clone();
                let stored = input_required(requests);
                // The whole tasks/get answer must map and serialize (a -32603 otherwise).
                let detailed = detailed_task(&stored)
                    .unwrap_or_else(|e| panic!("case {case}: {request} does not map: {e}"));
                let text = serde_json::to_string(&detailed).expect("serializes");
                let answer: Value = serde_json::from_str(&text).expect("JSON");
                assert_eq!(answer["status"], "input_required", "case {case}: {request}");
                let sent = &answer["inputRequests"]["k"];
                assert_eq!(
                    first_loss(&kept, sent),
                    None,
                    "case {case}: {kept} reaches the client as {sent}"
                );
                let method = request["method"].as_str().unwrap_or("").to_owned();
                *accepted.entry(method).or_insert(json!(0)) =
                    json!(accepted.get(&method).and_then(Value::as_u64).unwrap_or(0) + 1);
            }
            Line::Message(Message::Error { error }) => {
                // Well formed but not carriable: a contract error that fails the task.
                let data = error.data.expect("data");
                assert_eq!(data["reason"], "InputRequestNotCarriable", "case {case}");
                assert!(
                    check_carriable(&request).is_err(),
                    "case {case}: {request} failed the task but the front end can carry it"
                );
                refused_as_not_carriable += 1;
            }
            Line::Malformed(_) => {}
            other => panic!("case {case}: {request} parsed as {other:?}"),
        }
    }
    // The generator must reach every accepted kind and the not-carriable path often enough
    // for the property to mean something.
    for method in ["elicitation/create", "sampling/createMessage", "roots/list"] {
        let n = accepted.get(method).and_then(Value::as_u64).unwrap_or(0);
        assert!(n >= 50, "only {n} accepted {method} cases: {accepted:?}");
    }
    assert!(
        refused_as_not_carriable >= 50,
        "only {refused_as_not_carriable} not-carriable cases"
    );
}

fn pick<'a, T>(rng: &mut StdRng, items: &'a [T]) -> &'a T {
    &items[rng.random_range(0..items.len())]
}

/// Any JSON value, small.
fn any_value(rng: &mut StdRng, depth: u32) -> Value {
    match rng.random_range(0..if depth > 1 { 6 } else { 8 }) {
        0 => Value::Null,
        1 => json!(rng.random_bool(0.5)),
        2 => json!(rng.random_range(-3..1000)),
        3 => json!(rng.random_range(-1.0..1.0)),
        4 | 5 => json!(pick(
            rng,
            &["", "x", "hello", "é \u{7f}", "https://example.com"]
        )),
        6 => Value::Array(
            (0..rng.random_range(0..3))
                .map(|_| any_value(rng, depth + 1))
                .collect(),
        ),
        _ => Value::Object(
            (0..rng.random_range(0..3))
                .map(|i| (format!("f{i}"), any_value(rng, depth + 1)))
                .collect(),
        ),
    }
}

/// A value for `keyword` of a form property: usually well typed, sometimes anything.
fn keyword_value(rng: &mut StdRng, keyword: &str, ty: Option<&str>) -> Value {
    if rng.random_bool(0.15) {
        return any_value(rng, 1);
    }
    match keyword {
        "title" | "description" | "pattern" => json!("text"),
        "format" => json!(pick(
            rng,
            &["email", "uri", "date", "date-time", "no-such-format"]
        )),
        "minLength" | "maxLength" | "minItems" | "maxItems" => json!(rng.random_range(0..5)),
        "minimum" | "maximum" => json!(rng.random_range(0..100)),
        "enum" => json!(["a", "b"]),
        "enumNames" => json!(["A", "B"]),
        "oneOf" | "anyOf" => json!([{"const": "a", "title": "A"}, {"const": "b", "title": "B"}]),
        "items" => match rng.random_range(0..3) {
            0 => json!({"type": "string", "enum": ["a", "b"]}),
            1 => json!({"anyOf": [{"const": "a", "title": "A"}]}),
            _ => json!({"type": "number"}),
        },
        "default" => match ty {
            Some("boolean") => json!(true),
            Some("integer" | "number") => json!(3),
            Some("array") => json!(["a"]),
            _ => json!("a"),
        },
        _ => any_value(rng, 1),
    }
}

/// A property of a form's `requestedSchema`.
fn form_property(rng: &mut StdRng) -> Value {
    let mut property = Map::new();
    let ty = *pick(
        rng,
        &[
            Some("string"),
            Some("string"),
            Some("number"),
            Some("integer"),
            Some("boolean"),
            Some("array"),
            Some("object"),
            None,
        ],
    );
    if let Some(ty) = ty {
        property.insert("type".into(), json!(ty));
    }
    let keywords = [
        "title",
        "description",
        "format",
        "minLength",
        "maxLength",
        "minimum",
        "maximum",
        "enum",
        "enumNames",
        "oneOf",
        "anyOf",
        "items",
        "default",
        "pattern",
        "minItems",
        "x-extra",
    ];
    for _ in 0..rng.random_range(0..3) {
        let keyword = *pick(rng, &keywords);
        property.insert(keyword.into(), keyword_value(rng, keyword, ty));
    }
    Value::Object(property)
}

fn elicitation(rng: &mut StdRng) -> Value {
    let mut params = Map::new();
    if rng.random_bool(0.95) {
        params.insert("message".into(), json!("Go on?"));
    }
    let mode = *pick(
        rng,
        &[None, Some("form"), Some("form"), Some("url"), Some("popup")],
    );
    if let Some(mode) = mode {
        params.insert("mode".into(), json!(mode));
    }
    if mode == Some("url") {
        let url = pick(
            rng,
            &["https://example.com/auth", "http://example.com", "https://"],
        );
        params.insert("url".into(), json!(url));
    } else {
        let properties: Map<String, Value> = (0..rng.random_range(0..4))
            .map(|i| (format!("p{i}"), form_property(rng)))
            .collect();
        let mut schema = json!({"type": "object", "properties": properties});
        if rng.random_bool(0.3) {
            schema["required"] = json!(["p0"]);
        }
        if rng.random_bool(0.1) {
            schema[*pick(rng, &["title", "description", "$schema", "x-extra"])] =
                keyword_value(rng, "title", None);
        }
        params.insert("requestedSchema".into(), schema);
    }
    if rng.random_bool(0.1) {
        params.insert("_meta".into(), json!({"example.com/k": any_value(rng, 1)}));
    }
    if rng.random_bool(0.1) {
        params.insert("x-extra".into(), any_value(rng, 1));
    }
    json!({"method": "elicitation/create", "params": params})
}

fn sampling_message(rng: &mut StdRng) -> Value {
    let content = match rng.random_range(0..4) {
        0 => json!({"type": "text", "text": "hi"}),
        1 => json!({"type": "image", "data": "aGk=", "mimeType": "image/png"}),
        2 => json!([{"type": "text", "text": "hi"}]),
        _ => any_value(rng, 1),
    };
    let role = pick(rng, &["user", "assistant", "system"]);
    json!({"role": role, "content": content})
}

fn sampling(rng: &mut StdRng) -> Value {
    let messages: Vec<Value> = (0..rng.random_range(0..3))
        .map(|_| sampling_message(rng))
        .collect();
    let mut params = json!({"messages": messages, "maxTokens": rng.random_range(0..500)});
    let optional = [
        ("systemPrompt", json!("Be brief.")),
        ("temperature", json!(0.5)),
        ("stopSequences", json!(["\n"])),
        ("includeContext", json!("none")),
        (
            "modelPreferences",
            json!({"hints": [{"name": "claude"}], "speedPriority": 0.5}),
        ),
        ("metadata", json!({"k": "v"})),
        ("x-extra", json!(1)),
    ];
    for (key, value) in optional {
        if rng.random_bool(0.2) {
            params[key] = if rng.random_bool(0.2) {
                any_value(rng, 1)
            } else {
                value
            };
        }
    }
    json!({"method": "sampling/createMessage", "params": params})
}

fn any_request(rng: &mut StdRng) -> Value {
    match rng.random_range(0..8) {
        0..=3 => elicitation(rng),
        4 | 5 => sampling(rng),
        6 => match rng.random_range(0..4) {
            0 => json!({"method": "roots/list"}),
            1 => json!({"method": "roots/list", "params": {}}),
            2 => json!({"method": "roots/list", "params": {"_meta": {"a": 1}}}),
            _ => json!({"method": "roots/list", "params": {"x-extra": any_value(rng, 1)}}),
        },
        _ => json!({"method": "tools/call", "params": {}}),
    }
}
