//! Whether a typed MCP model carried a JSON value without loss: the operator's contract parser
//! and the front end both parse each input request into rmcp's `InputRequest` and serialize it
//! again, and compare the two with [`first_loss`] (this crate holds no rmcp).

use serde_json::{Map, Value};

/// The first JSON pointer at which `original` holds something `shown` does not, or `None`
/// when every member of `original` is in `shown` unchanged. `shown` may hold more members
/// (a typed model may add a default, such as an elicitation's `mode`), and may leave out a
/// member whose value is an empty object; numbers compare by value, so `1.0` and `1` are the
/// same.
pub fn first_loss(original: &Value, shown: &Value) -> Option<String> {
    loss_at(original, shown, String::new())
}

fn loss_at(original: &Value, shown: &Value, at: String) -> Option<String> {
    match (original, shown) {
        (Value::Object(original), Value::Object(shown)) => original.iter().find_map(|(k, v)| {
            let path = format!("{at}/{k}");
            match shown.get(k) {
                Some(s) => loss_at(v, s, path),
                // An empty object says nothing a missing member does not (`"params": {}`).
                None if v.as_object().is_some_and(Map::is_empty) => None,
                None => Some(path),
            }
        }),
        (Value::Array(original), Value::Array(shown)) if original.len() == shown.len() => original
            .iter()
            .zip(shown)
            .enumerate()
            .find_map(|(i, (v, s))| loss_at(v, s, format!("{at}/{i}"))),
        (Value::Number(a), Value::Number(b)) if a.as_f64() == b.as_f64() => None,
        (a, b) if a == b => None,
        _ => Some(if at.is_empty() { "/".to_owned() } else { at }),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn names_the_first_member_lost_or_changed() {
        let original = json!({"a": {"b": [1, {"c": "x"}]}, "d": 1.0});
        assert_eq!(first_loss(&original, &original), None);
        let more = json!({"a": {"b": [1, {"c": "x", "e": 2}]}, "d": 1, "f": null});
        assert_eq!(first_loss(&original, &more), None);
        let lost = json!({"a": {"b": [1, {}]}, "d": 1});
        assert_eq!(first_loss(&original, &lost).as_deref(), Some("/a/b/1/c"));
        let changed = json!({"a": {"b": [1]}, "d": 1});
        assert_eq!(first_loss(&original, &changed).as_deref(), Some("/a/b"));
        assert_eq!(first_loss(&json!(1), &json!("1")).as_deref(), Some("/"));
        let empty = json!({"method": "roots/list", "params": {}});
        assert_eq!(first_loss(&empty, &json!({"method": "roots/list"})), None);
        let meta = json!({"params": {"_meta": {"a": 1}}});
        assert_eq!(first_loss(&meta, &json!({})).as_deref(), Some("/params"));
    }
}
