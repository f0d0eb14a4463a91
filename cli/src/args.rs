//! `key=value` words on the command line as the arguments of a tool call, typed by the tool's
//! `inputSchema`: a property declared `string` stays text even when it looks like a number;
//! any other value is read as JSON when it is JSON, and as text otherwise.

use serde_json::{Map, Value};

use crate::Error;

/// Most `key=value` words one call takes.
const MAX_WORDS: usize = 256;

/// The arguments object for `words` under `schema` (the tool's `inputSchema`).
pub fn parse(words: &[String], schema: &Value) -> Result<Map<String, Value>, Error> {
    if words.len() > MAX_WORDS {
        return Err(Error::Usage(format!(
            "{} arguments given; at most {MAX_WORDS}",
            words.len()
        )));
    }
    let mut arguments = Map::new();
    for word in words {
        let Some((key, text)) = word.split_once('=') else {
            return Err(Error::Usage(format!(
                "argument `{word}` is not key=value (for example seconds=5)"
            )));
        };
        if key.is_empty() {
            return Err(Error::Usage(format!("argument `{word}` has no key")));
        }
        let declared = schema["properties"][key]["type"].as_str();
        let value = match declared {
            Some("string") => Value::String(text.to_owned()),
            _ => serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned())),
        };
        if arguments.insert(key.to_owned(), value).is_some() {
            return Err(Error::Usage(format!("argument `{key}` is given twice")));
        }
    }
    Ok(arguments)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn words(w: &[&str]) -> Vec<String> {
        w.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn values_take_the_type_the_schema_declares() {
        let schema = json!({"properties": {
            "label": {"type": "string"}, "seconds": {"type": "integer"}, "dry": {"type": "boolean"}
        }});
        let got = parse(
            &words(&["label=42", "seconds=5", "dry=true", "x=a=b"]),
            &schema,
        )
        .unwrap();
        assert_eq!(
            Value::Object(got),
            json!({"label": "42", "seconds": 5, "dry": true, "x": "a=b"})
        );
    }

    #[test]
    fn undeclared_values_are_json_when_they_parse() {
        let got = parse(&words(&["n=1.5", "o={\"a\":[1]}", "s=hello"]), &json!({})).unwrap();
        assert_eq!(
            Value::Object(got),
            json!({"n": 1.5, "o": {"a": [1]}, "s": "hello"})
        );
    }

    #[test]
    fn malformed_words_say_what_is_wrong() {
        let err = |w: &[&str]| parse(&words(w), &json!({})).unwrap_err().to_string();
        assert!(err(&["seconds"]).contains("is not key=value"));
        assert!(err(&["=5"]).contains("has no key"));
        assert!(err(&["a=1", "a=2"]).contains("given twice"));
        let many: Vec<String> = (0..=MAX_WORDS).map(|i| format!("k{i}=1")).collect();
        assert!(
            parse(&many, &json!({}))
                .unwrap_err()
                .to_string()
                .contains("at most 256")
        );
    }
}
