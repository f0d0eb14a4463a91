//! Structural validation of the input requests a tool asks its client.
//!
//! The shapes are MRTR's (`docs/DESIGN.md#input-shapes`): `elicitation/create` in form or url mode,
//! `sampling/createMessage` and `roots/list`. Only the structure a client needs to render the
//! request is checked, and that the MCP wire types (rmcp's `InputRequest`) carry the request
//! without losing any of it: the front end shows the client exactly what the tool asked.

use mcp_task_operator_crds::wire::carry::first_loss;
use serde_json::{Map, Value};

/// Longest input request key, in characters.
pub const MAX_INPUT_KEY_CHARS: usize = 128;

/// Why an input request (or its key) was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InputRequestError {
    /// The key is empty, too long or holds control characters.
    #[error("input request key must be 1 to {max} characters without control characters")]
    InvalidKey {
        /// The longest key allowed.
        max: usize,
    },
    /// The request is not an object with a string `method`.
    #[error("input request must be an object with a string \"method\" and a \"params\" object")]
    NotAnObject,
    /// The method is not one a task may ask for.
    #[error(
        "unsupported input request method {method:?}; expected elicitation/create, \
         sampling/createMessage or roots/list"
    )]
    UnsupportedMethod {
        /// The method the tool asked for.
        method: String,
    },
    /// The method is known but its params do not have the required shape.
    #[error("invalid {method} params: {reason}")]
    InvalidParams {
        /// The method whose params are wrong.
        method: &'static str,
        /// What is wrong, for the tool author.
        reason: String,
    },
    /// The request has the required shape, but the MCP wire types cannot carry it to a
    /// client as it is (a JSON Schema keyword or a value they do not model, say).
    #[error("input request cannot be sent to an MCP client: {reason}")]
    NotCarriable {
        /// What the wire types refused or would drop.
        reason: String,
    },
}

/// Checks an input request key: 1 to [`MAX_INPUT_KEY_CHARS`] characters, none of them control.
pub fn validate_input_key(key: &str) -> Result<(), InputRequestError> {
    let chars = key.chars().count();
    if chars == 0 || chars > MAX_INPUT_KEY_CHARS || key.chars().any(char::is_control) {
        return Err(InputRequestError::InvalidKey {
            max: MAX_INPUT_KEY_CHARS,
        });
    }
    Ok(())
}

/// Checks one input request object (`{"method", "params"}`) against the MRTR shapes.
pub fn validate_input_request(request: &Value) -> Result<(), InputRequestError> {
    let obj = request.as_object().ok_or(InputRequestError::NotAnObject)?;
    let method = obj
        .get("method")
        .and_then(Value::as_str)
        .ok_or(InputRequestError::NotAnObject)?;
    let params = match obj.get("params") {
        None => None,
        Some(Value::Object(p)) => Some(p),
        Some(_) => return Err(InputRequestError::NotAnObject),
    };
    match method {
        ELICIT => validate_elicitation(params.ok_or_else(|| invalid(ELICIT, "params missing"))?),
        SAMPLING => validate_sampling(params.ok_or_else(|| invalid(SAMPLING, "params missing"))?),
        // roots/list takes no params beyond an optional _meta.
        ROOTS => Ok(()),
        other => Err(InputRequestError::UnsupportedMethod {
            method: other.to_owned(),
        }),
    }?;
    check_carriable(request)
}

/// Checks that rmcp's `InputRequest` (what the front end answers with) parses `request` and
/// gives back every member of it unchanged when serialized again.
fn check_carriable(request: &Value) -> Result<(), InputRequestError> {
    let not_carriable = |reason: String| InputRequestError::NotCarriable { reason };
    let typed: rmcp::model::InputRequest = serde_json::from_value(request.clone())
        .map_err(|e| not_carriable(format!("the MCP input request types refuse it: {e}")))?;
    let shown = serde_json::to_value(&typed).map_err(|e| not_carriable(e.to_string()))?;
    match first_loss(request, &shown) {
        None => Ok(()),
        Some(path) => Err(not_carriable(format!(
            "the MCP input request types drop or change {path}"
        ))),
    }
}

const ELICIT: &str = "elicitation/create";
const SAMPLING: &str = "sampling/createMessage";
const ROOTS: &str = "roots/list";

/// The primitive property types a form-mode elicitation schema may use.
const FORM_TYPES: [&str; 5] = ["string", "number", "integer", "boolean", "array"];

fn invalid(method: &'static str, reason: impl Into<String>) -> InputRequestError {
    InputRequestError::InvalidParams {
        method,
        reason: reason.into(),
    }
}

fn validate_elicitation(params: &Map<String, Value>) -> Result<(), InputRequestError> {
    if !params.get("message").is_some_and(Value::is_string) {
        return Err(invalid(ELICIT, "\"message\" must be a string"));
    }
    match params.get("mode") {
        None => validate_form(params),
        Some(Value::String(mode)) if mode == "form" => validate_form(params),
        Some(Value::String(mode)) if mode == "url" => validate_url(params),
        Some(_) => Err(invalid(ELICIT, "\"mode\" must be \"form\" or \"url\"")),
    }
}

fn validate_form(params: &Map<String, Value>) -> Result<(), InputRequestError> {
    let schema = params
        .get("requestedSchema")
        .and_then(Value::as_object)
        .ok_or_else(|| invalid(ELICIT, "form mode needs a \"requestedSchema\" object"))?;
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        return Err(invalid(
            ELICIT,
            "\"requestedSchema.type\" must be \"object\"",
        ));
    }
    let properties = schema
        .get("properties")
        .and_then(Value::as_object)
        .ok_or_else(|| invalid(ELICIT, "\"requestedSchema.properties\" must be an object"))?;
    for (name, prop) in properties {
        let ty = prop.get("type").and_then(Value::as_str);
        if !ty.is_some_and(|t| FORM_TYPES.contains(&t)) {
            return Err(invalid(
                ELICIT,
                format!(
                    "property {name:?} must have a primitive \"type\" ({})",
                    FORM_TYPES.join(", ")
                ),
            ));
        }
        if ty == Some("array") && !prop.get("items").is_some_and(Value::is_object) {
            return Err(invalid(
                ELICIT,
                format!("array property {name:?} needs an \"items\" object (a multi-select enum)"),
            ));
        }
    }
    match schema.get("required") {
        None => Ok(()),
        Some(Value::Array(names)) => {
            for name in names {
                let known = name.as_str().is_some_and(|n| properties.contains_key(n));
                if !known {
                    return Err(invalid(
                        ELICIT,
                        format!("required entry {name} is not a property name"),
                    ));
                }
            }
            Ok(())
        }
        Some(_) => Err(invalid(
            ELICIT,
            "\"requestedSchema.required\" must be an array",
        )),
    }
}

fn validate_url(params: &Map<String, Value>) -> Result<(), InputRequestError> {
    let url = params
        .get("url")
        .and_then(Value::as_str)
        .ok_or_else(|| invalid(ELICIT, "url mode needs a \"url\" string"))?;
    check_elicitation_url(url).map_err(|reason| invalid(ELICIT, reason))
}

/// Checks the `url` of a URL-mode elicitation: an `https://` URL with a host and no
/// whitespace or control characters. Plain `http://` (also to localhost) and every other
/// scheme are refused: the client opens the page for a user who may enter secrets there, and
/// the MCP specification asks servers for HTTPS outside development
/// (https://modelcontextprotocol.io/specification/2025-11-25/client/elicitation).
pub fn check_elicitation_url(url: &str) -> Result<(), &'static str> {
    let Some(rest) = url
        .get(..8)
        .filter(|s| s.eq_ignore_ascii_case("https://"))
        .map(|_| &url[8..])
    else {
        return Err("\"url\" must be an https:// URL (http:// and other schemes are refused)");
    };
    if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("\"url\" must not contain whitespace or control characters");
    }
    if rest.is_empty() || rest.starts_with(['/', '?', '#']) {
        return Err("\"url\" must name a host after https://");
    }
    Ok(())
}

fn validate_sampling(params: &Map<String, Value>) -> Result<(), InputRequestError> {
    if !params.get("messages").is_some_and(Value::is_array) {
        return Err(invalid(SAMPLING, "\"messages\" must be an array"));
    }
    if params
        .get("maxTokens")
        .and_then(Value::as_u64)
        .is_none_or(|n| n == 0)
    {
        return Err(invalid(
            SAMPLING,
            "\"maxTokens\" must be a positive integer",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn form(schema: Value) -> Value {
        json!({"method": ELICIT, "params": {"message": "Go?", "requestedSchema": schema}})
    }

    #[test]
    fn accepts_every_protocol_shape() {
        let ok = [
            form(
                json!({"type": "object", "properties": {"confirm": {"type": "boolean"}},
                        "required": ["confirm"]}),
            ),
            json!({"method": ELICIT, "params": {"mode": "form", "message": "m",
                   "requestedSchema": {"type": "object", "properties": {
                       "n": {"type": "integer"}, "tags": {"type": "array",
                       "items": {"type": "string", "enum": ["a", "b"]}}}}}}),
            json!({"method": ELICIT, "params": {"mode": "url", "message": "Sign in",
                   "url": "https://example.com/auth"}}),
            json!({"method": SAMPLING, "params": {"messages": [], "maxTokens": 100}}),
            json!({"method": ROOTS}),
            json!({"method": ROOTS, "params": {}}),
        ];
        for request in ok {
            assert_eq!(validate_input_request(&request), Ok(()), "{request}");
        }
    }

    #[test]
    fn rejects_malformed_requests_with_a_reason() {
        let cases = [
            (json!("confirm"), "must be an object"),
            (json!({"params": {}}), "must be an object"),
            (json!({"method": ELICIT, "params": []}), "must be an object"),
            (
                json!({"method": "tools/call", "params": {}}),
                "unsupported input request method",
            ),
            (json!({"method": ELICIT}), "params missing"),
            (
                json!({"method": ELICIT, "params": {"requestedSchema": {}}}),
                "\"message\"",
            ),
            (
                json!({"method": ELICIT, "params": {"message": "m"}}),
                "requestedSchema",
            ),
            (
                json!({"method": ELICIT, "params": {"message": "m", "mode": "popup"}}),
                "mode",
            ),
            (
                form(json!({"type": "array", "properties": {}})),
                "must be \\\"object\\\"",
            ),
            (form(json!({"type": "object"})), "properties"),
            (
                form(json!({"type": "object", "properties": {"a": {"type": "object"}}})),
                "primitive",
            ),
            (
                form(json!({"type": "object", "properties": {"a": {"type": "array"}}})),
                "items",
            ),
            (
                form(json!({"type": "object", "properties": {}, "required": ["a"]})),
                "not a property",
            ),
            (
                form(json!({"type": "object", "properties": {}, "required": "a"})),
                "must be an array",
            ),
            (
                json!({"method": ELICIT, "params": {"mode": "url", "message": "m"}}),
                "url",
            ),
            (
                json!({"method": ELICIT, "params": {"mode": "url", "message": "m",
                    "url": "javascript:alert(1)"}}),
                "https://",
            ),
            (
                json!({"method": ELICIT, "params": {"mode": "url", "message": "m",
                    "url": "http://attacker.example/login"}}),
                "must be an https:// URL",
            ),
            (
                json!({"method": ELICIT, "params": {"mode": "url", "message": "m",
                    "url": "http://localhost:8080/"}}),
                "must be an https:// URL",
            ),
            (
                json!({"method": SAMPLING, "params": {"maxTokens": 1}}),
                "messages",
            ),
            (
                json!({"method": SAMPLING, "params": {"messages": [], "maxTokens": 0}}),
                "maxTokens",
            ),
        ];
        for (request, expected) in cases {
            let err = validate_input_request(&request).unwrap_err().to_string();
            let expected = expected.replace("\\\"", "\"");
            assert!(
                err.contains(&expected),
                "{request}: {err:?} lacks {expected:?}"
            );
        }
    }

    #[test]
    fn a_well_formed_request_the_wire_types_cannot_carry_is_refused_as_such() {
        for property in [
            json!({"type": "string", "format": "hostname"}),
            json!({"type": "array", "items": {"type": "number"}}),
        ] {
            let request = form(json!({"type": "object", "properties": {"a": property}}));
            let err = validate_input_request(&request).unwrap_err();
            assert!(
                matches!(err, InputRequestError::NotCarriable { .. }),
                "{request}: {err:?}"
            );
        }
    }

    #[test]
    fn elicitation_urls_must_be_https_with_a_host() {
        assert_eq!(
            check_elicitation_url("https://example.com/auth?x=1"),
            Ok(())
        );
        assert_eq!(check_elicitation_url("HTTPS://example.com"), Ok(()));
        for bad in [
            "http://example.com",
            "ftp://example.com",
            "//example.com",
            "https://",
            "https:///path",
            "https://exa mple.com",
            "https://example.com/\n",
            "é",
        ] {
            assert!(check_elicitation_url(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn validates_keys() {
        assert_eq!(validate_input_key("approve-1"), Ok(()));
        assert!(validate_input_key("").is_err());
        assert!(validate_input_key("a\nb").is_err());
        assert!(validate_input_key(&"k".repeat(MAX_INPUT_KEY_CHARS + 1)).is_err());
        assert_eq!(validate_input_key(&"é".repeat(MAX_INPUT_KEY_CHARS)), Ok(()));
    }
}
