//! Characters a server-side apply patch cannot carry.
//!
//! The API server reads apply patches as YAML (`application/apply-patch+yaml`), and its YAML
//! reader refuses DEL, the C1 controls but NEL (U+007F–U+009F) and U+FFFE/U+FFFF, raw or
//! `\u`-escaped. Tools print any bytes, so a status holding one of them would fail every write
//! and leave the task `working` for good. What a tool prints is therefore cleaned as it is read
//! (U+FFFD, the contract's mark of lossy decoding), and JSON texts handed to a tool in its Job
//! get JSON escapes it reads back unchanged.

use serde_json::Value;

/// Whether the API server refuses `c` in a server-side apply patch.
pub fn is_refused(c: char) -> bool {
    matches!(c, '\u{7f}'..='\u{84}' | '\u{86}'..='\u{9f}' | '\u{fffe}' | '\u{ffff}')
}

/// Replaces every refused character in the strings and keys of `value` with U+FFFD, the mark
/// of lossy decoding the contract already uses.
pub fn replace_refused(value: &mut Value) {
    match value {
        Value::String(text) => *text = replace_refused_in(std::mem::take(text)),
        Value::Array(items) => items.iter_mut().for_each(replace_refused),
        Value::Object(map) => {
            if map.keys().any(|k| k.chars().any(is_refused)) {
                let entries = std::mem::take(map);
                for (key, mut item) in entries {
                    let mut key = Value::String(key);
                    replace_refused(&mut key);
                    replace_refused(&mut item);
                    map.insert(key.as_str().unwrap_or_default().to_owned(), item);
                }
            } else {
                map.values_mut().for_each(replace_refused);
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// `text` with every refused character replaced by U+FFFD.
pub fn replace_refused_in(text: String) -> String {
    if text.chars().any(is_refused) {
        text.chars()
            .map(|c| if is_refused(c) { '\u{fffd}' } else { c })
            .collect()
    } else {
        text
    }
}

/// Rewrites refused characters in a JSON text as `\uXXXX` escapes: the text stays the same
/// JSON value for whoever parses it (a tool reading `MCP_TOOL_ARGUMENTS`), and the apply patch
/// carrying it as a string holds only backslashes and hex digits.
///
/// NB: only valid for JSON produced by `serde_json`, where such characters can occur only
/// inside string literals (never in structure), so an escape is always in a string.
pub fn escape_refused_json(json: String) -> String {
    if !json.chars().any(is_refused) {
        return json;
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if is_refused(c) {
            out.push_str(&format!("\\u{:04x}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn refused_characters_are_the_ones_the_api_server_rejects() {
        // Measured against kube-apiserver 1.34 (server-side apply of a status).
        for c in ['\u{7f}', '\u{80}', '\u{9f}', '\u{fffe}', '\u{ffff}'] {
            assert!(is_refused(c), "{c:?}");
        }
        for c in [
            '\0', '\u{1b}', '\u{85}', '\u{a0}', '\u{feff}', '\u{2028}', '😀', '\u{fffd}',
        ] {
            assert!(!is_refused(c), "{c:?}");
        }
    }

    #[test]
    fn strings_and_keys_lose_only_refused_characters() {
        let mut value =
            json!({"a\u{7f}": ["x\u{80}y", {"k": "\u{ffff}"}], "n": 1, "ok": "é\u{1b}"});
        replace_refused(&mut value);
        assert_eq!(
            value,
            json!({"a\u{fffd}": ["x\u{fffd}y", {"k": "\u{fffd}"}], "n": 1, "ok": "é\u{1b}"})
        );
    }

    #[test]
    fn tool_output_is_read_without_refused_characters() {
        use crate::contract::{Line, Message, RawLine, parse_line};
        // A DEL escaped in the message's JSON, and raw C1 and DEL bytes in a log line: the
        // regression of a task left `working` because its status could never be applied.
        let message =
            r#"{"mcp":"result","result":{"content":[{"type":"text","text":"a\u007fb"}]}}"#;
        let raw = |text: &str| RawLine {
            bytes: text.as_bytes().to_vec(),
            len: text.len(),
            unterminated: false,
        };
        let Line::Message(Message::Result { result }) = parse_line(&raw(message), 1024) else {
            panic!("a result message");
        };
        assert_eq!(result["content"][0]["text"], "a\u{fffd}b");
        let log = parse_line(&raw("x\u{80}\u{7f}y"), 1024);
        assert_eq!(log, Line::Log("x\u{fffd}\u{fffd}y".to_owned()));
    }

    #[test]
    fn json_texts_keep_their_value_through_escapes() {
        let arguments = json!({"text": "del\u{7f} c1\u{9f} end\u{ffff}", "k\u{80}": true});
        let text = serde_json::to_string(&arguments).unwrap();
        let escaped = escape_refused_json(text);
        assert!(!escaped.chars().any(is_refused), "{escaped}");
        assert!(escaped.contains(r"\u007f"), "{escaped}");
        assert_eq!(serde_json::from_str::<Value>(&escaped).unwrap(), arguments);
        assert_eq!(escape_refused_json("{}".to_owned()), "{}");
    }
}
