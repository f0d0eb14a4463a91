//! Schema helpers for the free-form JSON fields of the API (JSON Schemas, tool arguments, MCP
//! results), which the API server must store as given instead of pruning unknown keys.

use schemars::{Schema, SchemaGenerator, json_schema};

/// Any JSON object, kept as given: `type: object` plus `x-kubernetes-preserve-unknown-fields`.
pub(crate) fn any_object(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": true,
    })
}

/// Any JSON value at all (object, array, string, number, boolean), kept as given.
pub(crate) fn any_value(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "x-kubernetes-preserve-unknown-fields": true,
    })
}

/// A map from string keys to arbitrary JSON objects (MRTR input requests and responses).
pub(crate) fn map_of_objects(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "additionalProperties": {
            "type": "object",
            "x-kubernetes-preserve-unknown-fields": true,
        },
    })
}

/// A JSON Schema object whose root must declare `"type": "object"`, as MCP requires for a
/// tool's `inputSchema` and `outputSchema`. Every other keyword is kept as given.
pub(crate) fn object_json_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "required": ["type"],
        "properties": {
            "type": {
                "description": "JSON Schema type of the root; MCP requires \"object\".",
                "type": "string",
                "enum": ["object"],
            },
        },
        "x-kubernetes-preserve-unknown-fields": true,
    })
}
