//! Start inputs: questions (MCP input requests) an `McpTool` has the front end ask before a
//! task exists, typed so that the API server checks their shape at apply time.

use kube::KubeSchema;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::schema;

/// One question asked before the task is created: an MCP input request
/// (`{"method": "elicitation/create", "params": {...}}`).
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct StartInput {
    /// The MCP method of the request. Only `elicitation/create` is supported.
    pub method: StartInputMethod,
    /// The request's params: for a form, `message` and `requestedSchema` (an object schema of
    /// primitive properties); for a URL, `mode: url`, `message` and `url`.
    pub params: ElicitationParams,
}

/// MCP methods a start input may use.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq)]
pub enum StartInputMethod {
    /// Ask the user through the client (a form or a URL).
    #[serde(rename = "elicitation/create")]
    ElicitationCreate,
}

/// Params of an MCP `elicitation/create` request.
#[derive(Serialize, Deserialize, KubeSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
#[x_kube(
    validation = Rule::new("self.mode == 'url' ? has(self.url) : has(self.requestedSchema)")
        .message("a form elicitation needs requestedSchema and a url elicitation needs url")
)]
pub struct ElicitationParams {
    /// `form` (the client shows a form built from requestedSchema) or `url` (the client opens
    /// url). Defaults to form.
    #[serde(default)]
    pub mode: ElicitationMode,
    /// The question shown to the user.
    #[schemars(length(min = 1))]
    pub message: String,
    /// For a form: JSON Schema of the answer, an object whose properties are primitives.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema::object_json_schema")]
    pub requested_schema: Option<Map<String, Value>>,
    /// For a URL elicitation: the page the user is sent to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(url)]
    pub url: Option<String>,
}

/// How an elicitation asks the user.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ElicitationMode {
    /// A form built from a JSON Schema.
    #[default]
    Form,
    /// An external web page.
    Url,
}
