//! Answers to a task's input requests, asked on the terminal: each field of a form elicitation
//! from its `requestedSchema`, a URL elicitation as a link to open. The shapes are MCP's
//! (https://modelcontextprotocol.io/specification/2026-07-28/client/elicitation).
//!
//! At any question `!decline` or `!cancel` answers the whole request with that action.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};
use tokio::io::{AsyncBufReadExt, BufReader, Lines, Stdin};

use crate::Error;
use crate::term::{self, inert_line};

/// How often one question is asked again after an answer that does not fit.
const MAX_TRIES: usize = 5;

/// Lines typed on standard input.
pub type Input = Lines<BufReader<Stdin>>;

/// Standard input, a line at a time.
pub fn stdin() -> Input {
    BufReader::new(tokio::io::stdin()).lines()
}

/// Asks for an answer to each request in `requests` (key → `{method, params}`); returns the
/// `inputResponses` to send with `tasks/update`.
pub async fn answers(
    requests: &Map<String, Value>,
    input: &mut Input,
) -> Result<BTreeMap<String, Value>, Error> {
    let mut answers = BTreeMap::new();
    for (key, request) in requests {
        let params = &request["params"];
        let answer = match request["method"].as_str() {
            Some("elicitation/create") if params["mode"] == "url" => url(params, input).await?,
            Some("elicitation/create") => form(params, input).await?,
            other => {
                return Err(Error::Usage(format!(
                    "input request `{key}` is {}: kubectl mcp answers elicitations only; answer \
                     it with tasks/update from a client that can",
                    other.unwrap_or("of no method")
                )));
            }
        };
        answers.insert(key.clone(), answer);
    }
    Ok(answers)
}

async fn form(params: &Value, input: &mut Input) -> Result<Value, Error> {
    say(params["message"].as_str().unwrap_or("The tool asks:"));
    let schema = &params["requestedSchema"];
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut content = Map::new();
    let empty = Map::new();
    for (name, property) in schema["properties"].as_object().unwrap_or(&empty) {
        let must = required.contains(&name.as_str());
        match field(name, property, must, input).await? {
            Field::Value(value) => {
                content.insert(name.clone(), value);
            }
            Field::Skipped => {}
            Field::Action(action) => return Ok(json!({ "action": action })),
        }
    }
    Ok(json!({ "action": "accept", "content": content }))
}

async fn url(params: &Value, input: &mut Input) -> Result<Value, Error> {
    say(params["message"]
        .as_str()
        .unwrap_or("The tool asks you to open:"));
    say(&format!(
        "  {}",
        inert_line(params["url"].as_str().unwrap_or_default())
    ));
    for _ in 0..MAX_TRIES {
        match ask("done there? [accept/decline/cancel]: ", input)
            .await?
            .as_str()
        {
            "accept" | "a" | "y" | "yes" => return Ok(json!({ "action": "accept" })),
            "decline" | "d" | "n" | "no" | "!decline" => return Ok(json!({ "action": "decline" })),
            "cancel" | "c" | "!cancel" => return Ok(json!({ "action": "cancel" })),
            _ => say("  type accept, decline or cancel"),
        }
    }
    Err(Error::Usage(format!(
        "no usable answer in {MAX_TRIES} tries"
    )))
}

enum Field {
    Value(Value),
    Skipped,
    Action(&'static str),
}

async fn field(
    name: &str,
    property: &Value,
    must: bool,
    input: &mut Input,
) -> Result<Field, Error> {
    let kind = property["type"].as_str().unwrap_or("string");
    let choices: Vec<&str> = property["enum"]
        .as_array()
        .or_else(|| property["items"]["enum"].as_array())
        .map(|c| c.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let title = property["title"].as_str().unwrap_or(name);
    let mut hint = kind.to_owned();
    if !choices.is_empty() {
        hint = format!("one of {}", choices.join("|"));
        if kind == "array" {
            hint = format!("any of {}, comma-separated", choices.join("|"));
        }
    }
    if let Some(description) = property["description"].as_str() {
        say(&format!("  {}", inert_line(description)));
    }
    let question = format!(
        "  {title} ({hint}){}: ",
        if must { "" } else { ", Enter to skip" }
    );
    for _ in 0..MAX_TRIES {
        let typed = ask(&question, input).await?;
        match typed.as_str() {
            "!decline" => return Ok(Field::Action("decline")),
            "!cancel" => return Ok(Field::Action("cancel")),
            "" if !must => return Ok(Field::Skipped),
            _ => {}
        }
        match value(kind, &choices, &typed) {
            Ok(value) => return Ok(Field::Value(value)),
            Err(why) => say(&format!("  {}", inert_line(&why))),
        }
    }
    Err(Error::Usage(format!(
        "no usable answer for `{name}` in {MAX_TRIES} tries"
    )))
}

/// `typed` as a value of JSON Schema type `kind`, one of `choices` when there are any.
fn value(kind: &str, choices: &[&str], typed: &str) -> Result<Value, String> {
    let chosen = |s: &str| choices.is_empty() || choices.contains(&s);
    match kind {
        "boolean" => match typed.to_ascii_lowercase().as_str() {
            "y" | "yes" | "true" => Ok(Value::Bool(true)),
            "n" | "no" | "false" => Ok(Value::Bool(false)),
            _ => Err("answer yes or no".to_owned()),
        },
        "integer" => typed
            .parse::<i64>()
            .map(Value::from)
            .map_err(|_| "a whole number, please".to_owned()),
        "number" => typed
            .parse::<f64>()
            .ok()
            .and_then(|n| serde_json::Number::from_f64(n).map(Value::Number))
            .ok_or_else(|| "a number, please".to_owned()),
        "array" => {
            let items: Vec<&str> = typed
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .collect();
            match items.iter().find(|i| !chosen(i)) {
                Some(bad) => Err(format!("`{bad}` is not one of {}", choices.join("|"))),
                None => Ok(json!(items)),
            }
        }
        _ if !chosen(typed) => Err(format!("one of {}, please", choices.join("|"))),
        _ => Ok(Value::String(typed.to_owned())),
    }
}

/// Prints `question` (inert, on one line) without a newline and reads one trimmed line.
async fn ask(question: &str, input: &mut Input) -> Result<String, Error> {
    term::ask(&inert_line(question));
    match input.next_line().await {
        Ok(Some(line)) => Ok(line.trim().to_owned()),
        Ok(None) => Err(Error::Usage(
            "standard input ended before every question was answered".to_owned(),
        )),
        Err(e) => Err(Error::Usage(format!("cannot read standard input: {e}"))),
    }
}

/// Prints `text` inert; text from the tool spans lines only where it is the tool's message.
fn say(text: &str) {
    term::say(text);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_answers_become_values_of_the_declared_type() {
        assert_eq!(value("boolean", &[], "Y"), Ok(json!(true)));
        assert_eq!(value("boolean", &[], "no"), Ok(json!(false)));
        assert_eq!(value("integer", &[], "12"), Ok(json!(12)));
        assert_eq!(value("number", &[], "0.5"), Ok(json!(0.5)));
        assert_eq!(value("string", &["a", "b"], "b"), Ok(json!("b")));
        assert_eq!(value("array", &["x", "y"], "x, y"), Ok(json!(["x", "y"])));
        assert_eq!(value("string", &[], "free text"), Ok(json!("free text")));
    }

    #[test]
    fn answers_that_do_not_fit_say_why() {
        assert_eq!(
            value("boolean", &[], "maybe"),
            Err("answer yes or no".to_owned())
        );
        assert_eq!(
            value("integer", &[], "1.5"),
            Err("a whole number, please".to_owned())
        );
        assert_eq!(
            value("string", &["a"], "c"),
            Err("one of a, please".to_owned())
        );
        assert_eq!(
            value("array", &["x"], "x,z"),
            Err("`z` is not one of x".to_owned())
        );
    }
}
