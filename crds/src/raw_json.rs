//! [`RawJson`]: a JSON value held as its compact text, for the large free-form fields of an
//! `McpTask` (the call's arguments, the tool's result).
//!
//! Every front-end replica and the operator cache every task. A `serde_json::Value` tree costs
//! about 16 times its text for an array of small numbers (`[0,0,…]`: a 32-byte `Value` and more
//! per two bytes of JSON), so 64 KiB of arguments held as a tree cost about 1 MiB in each process
//! (docs/SECURITY.md, "Limits"). Held as text they cost their size on the wire. Reading one
//! parses it on demand; writing one sends the text as it is.

use std::fmt;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// A JSON value kept as its compact JSON text (no insignificant whitespace).
#[derive(Clone)]
pub struct RawJson(Box<RawValue>);

impl RawJson {
    /// The compact JSON text of `value`.
    pub fn new(value: &impl Serialize) -> Result<Self, serde_json::Error> {
        serde_json::value::to_raw_value(value).map(Self)
    }

    /// The compact JSON text of an object.
    pub fn from_map(map: &Map<String, Value>) -> Self {
        // Serializing a map of `Value`s cannot fail: every key is a string.
        Self::new(map).unwrap_or_else(|_| Self::empty_object())
    }

    /// `{}`.
    pub fn empty_object() -> Self {
        Self(RawValue::from_string("{}".to_owned()).expect("{} is JSON"))
    }

    /// The JSON text.
    pub fn as_str(&self) -> &str {
        self.0.get()
    }

    /// Bytes of the JSON text.
    pub fn len(&self) -> usize {
        self.0.get().len()
    }

    /// Whether the text is empty (never: the shortest JSON value is one character).
    pub fn is_empty(&self) -> bool {
        self.0.get().is_empty()
    }

    /// The value, parsed.
    pub fn to_value(&self) -> Value {
        // The text came from a parsed or serialized value: it always parses.
        serde_json::from_str(self.0.get()).unwrap_or(Value::Null)
    }

    /// The value as an object, parsed; `None` when it is not an object.
    pub fn to_map(&self) -> Option<Map<String, Value>> {
        serde_json::from_str(self.0.get()).ok()
    }

    /// Member `name` of an object, parsed; `None` when absent or not an object.
    pub fn member(&self, name: &str) -> Option<Value> {
        self.to_map()?.remove(name)
    }
}

impl fmt::Debug for RawJson {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.get())
    }
}

impl fmt::Display for RawJson {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.get())
    }
}

/// Equal when the texts are, or else when the parsed values are (the API server may write a
/// value in another form, such as `1` for `1.0`, or keys in another order).
impl PartialEq for RawJson {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str() || self.to_value() == other.to_value()
    }
}

impl From<&Value> for RawJson {
    fn from(value: &Value) -> Self {
        // Serializing a `Value` cannot fail: every key is a string.
        Self::new(value).unwrap_or_else(|_| Self::empty_object())
    }
}

impl From<Value> for RawJson {
    fn from(value: Value) -> Self {
        Self::from(&value)
    }
}

impl From<&Map<String, Value>> for RawJson {
    fn from(map: &Map<String, Value>) -> Self {
        Self::from_map(map)
    }
}

impl From<Map<String, Value>> for RawJson {
    fn from(map: Map<String, Value>) -> Self {
        Self::from_map(&map)
    }
}

impl Serialize for RawJson {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

/// Parsed into a tree once and kept as its compact text, so that it works with any
/// deserializer (kube reads watch events through `serde_json::Value`), not only a byte slice.
impl<'de> Deserialize<'de> for RawJson {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        Self::new(&value).map_err(D::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_value_round_trips_through_its_compact_text() {
        let value = json!({"b": [1, 2.5, "x"], "a": {"nested": null}});
        let raw: RawJson = serde_json::from_value(value.clone()).unwrap();
        assert_eq!(raw.as_str(), r#"{"a":{"nested":null},"b":[1,2.5,"x"]}"#);
        assert_eq!(raw.to_value(), value);
        assert_eq!(serde_json::to_value(&raw).unwrap(), value);
        assert_eq!(serde_json::to_string(&raw).unwrap(), raw.as_str());
        let spaced: RawJson =
            serde_json::from_str("{ \"a\" : { \"nested\" : null } ,\n \"b\":[1,2.5,\"x\"]}")
                .unwrap();
        assert_eq!(spaced, raw);
        assert_eq!(raw.member("b"), Some(json!([1, 2.5, "x"])));
    }

    #[test]
    fn values_equal_in_another_form_are_equal() {
        let a: RawJson = serde_json::from_str(r#"{"n":1.0}"#).unwrap();
        let b: RawJson = serde_json::from_str(r#"{"n":1.0}"#).unwrap();
        let c: RawJson = serde_json::from_str(r#"{"n":2}"#).unwrap();
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn a_large_array_costs_its_text_not_a_tree() {
        let text = format!("[{}0]", "0,".repeat(32 * 1024));
        let raw: RawJson = serde_json::from_str(&text).unwrap();
        assert_eq!(raw.len(), text.len());
    }
}
