//! What a claim of a warm pod is (`docs/tool-contract.md`, "Warm pods"): the secret that
//! proves the operator sent it and the body that names the task and its env. Pure: the HTTP
//! listener in `warm.rs` only moves bytes to and from here.

use serde_json::Value;
use sha2::{Digest, Sha256};

/// The env a claim may set in the tool process: what a cold pod gets in its env for a task.
pub const ALLOWED_ENV: [&str; 8] = [
    "MCP_TASK_ID",
    "MCP_TOOL_NAME",
    "MCP_TOOL_ARGUMENTS",
    "MCP_START_INPUTS",
    "MCP_CLIENT_CAPABILITIES",
    "TRACEPARENT",
    "MCP_MESSAGE_NONCE",
    "MCP_BRIDGE_TOOL",
];

/// A valid claim: the task that claimed the pod and the env its tool process gets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    /// The claiming task's id (equal to its `MCP_TASK_ID`).
    pub task_id: String,
    /// Names from [`ALLOWED_ENV`] and their values.
    pub env: Vec<(String, String)>,
}

impl Claim {
    /// The value of the claim's env var `name`.
    pub fn var(&self, name: &str) -> Option<&str> {
        self.env
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Decodes 64 lowercase hex characters into 32 bytes.
pub fn hex32(text: &str) -> Option<[u8; 32]> {
    let bytes = text.as_bytes();
    if bytes.len() != 64 {
        return None;
    }
    let nibble = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    let mut out = [0u8; 32];
    for (i, pair) in bytes.chunks_exact(2).enumerate() {
        out[i] = (nibble(pair[0])? << 4) | nibble(pair[1])?;
    }
    Some(out)
}

/// Whether the `Authorization` header value carries the secret whose SHA-256 is `key_hash`.
/// The comparison takes the same time wherever the hashes differ.
pub fn authorized(header: Option<&str>, key_hash: &[u8; 32]) -> bool {
    let Some(secret) = header
        .and_then(|h| h.strip_prefix("Bearer "))
        .and_then(hex32)
    else {
        return false;
    };
    let got = Sha256::digest(secret);
    got.iter()
        .zip(key_hash)
        .fold(0u8, |diff, (a, b)| diff | (a ^ b))
        == 0
}

/// Parses a claim body `{"taskId": "...", "env": {"NAME": "value", ...}}`; the error says
/// what is wrong with it.
pub fn parse(body: &[u8]) -> Result<Claim, String> {
    let value: Value =
        serde_json::from_slice(body).map_err(|e| format!("the claim is not valid JSON: {e}"))?;
    let Value::Object(fields) = value else {
        return Err("the claim must be a JSON object".into());
    };
    if let Some(other) = fields.keys().find(|k| *k != "taskId" && *k != "env") {
        return Err(format!(
            "unknown field {:?} in the claim (only taskId and env)",
            shown(other)
        ));
    }
    let task_id = match fields.get("taskId") {
        Some(Value::String(id)) if !id.is_empty() => id.clone(),
        _ => return Err("taskId must be a non-empty string".into()),
    };
    let env = match fields.get("env") {
        Some(Value::Object(env)) => env,
        None => return Err("env is missing: the claim must set MCP_TASK_ID at least".into()),
        Some(_) => return Err("env must be an object of strings".into()),
    };
    let mut vars = Vec::with_capacity(env.len());
    for (name, value) in env {
        if !ALLOWED_ENV.contains(&name.as_str()) {
            return Err(format!(
                "env.{} may not be set by a claim (allowed: {})",
                shown(name),
                ALLOWED_ENV.join(", ")
            ));
        }
        let Value::String(value) = value else {
            return Err(format!("env.{name} must be a string"));
        };
        vars.push((name.clone(), value.clone()));
    }
    let claim = Claim { task_id, env: vars };
    if claim.var("MCP_TASK_ID") != Some(claim.task_id.as_str()) {
        return Err("env.MCP_TASK_ID must equal taskId".into());
    }
    Ok(claim)
}

/// A name from the body as it is shown in an error: at most 64 characters.
fn shown(name: &str) -> String {
    name.chars().take(64).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

    fn hash_of(secret: &str) -> [u8; 32] {
        Sha256::digest(hex32(secret).unwrap()).into()
    }

    #[test]
    fn only_the_secret_whose_hash_the_pod_holds_is_authorized() {
        let hash = hash_of(SECRET);
        assert!(authorized(Some(&format!("Bearer {SECRET}")), &hash));
        let other = SECRET.replace("ff", "fe");
        assert!(!authorized(Some(&format!("Bearer {other}")), &hash));
        // The hash itself is not the secret.
        let hash_hex: String = hash.iter().map(|b| format!("{b:02x}")).collect();
        assert!(!authorized(Some(&format!("Bearer {hash_hex}")), &hash));
        assert!(!authorized(
            Some(&format!("Bearer {}", SECRET.to_uppercase())),
            &hash
        ));
        assert!(!authorized(Some(SECRET), &hash));
        assert!(!authorized(None, &hash));
    }

    #[test]
    fn a_claim_names_its_task_and_sets_only_task_env() {
        let claim =
            parse(br#"{"taskId":"t1","env":{"MCP_TASK_ID":"t1","MCP_TOOL_ARGUMENTS":"{}"}}"#)
                .unwrap();
        assert_eq!(claim.task_id, "t1");
        assert_eq!(claim.var("MCP_TOOL_ARGUMENTS"), Some("{}"));
        let err = |body: &str| parse(body.as_bytes()).unwrap_err();
        assert!(err("{").contains("not valid JSON"));
        assert!(err("[]").contains("JSON object"));
        assert!(err(r#"{"env":{"MCP_TASK_ID":"t1"}}"#).contains("taskId"));
        assert!(err(r#"{"taskId":"t1"}"#).contains("env is missing"));
        assert!(
            err(r#"{"taskId":"t1","env":{"MCP_TASK_ID":"t1","PATH":"/x"}}"#).contains("env.PATH")
        );
        assert!(err(r#"{"taskId":"t1","env":{"MCP_TASK_ID":1}}"#).contains("must be a string"));
        assert!(err(r#"{"taskId":"t1","env":{"MCP_TASK_ID":"t2"}}"#).contains("must equal taskId"));
        assert!(err(r#"{"taskId":"t1","env":{"MCP_TASK_ID":"t1"},"x":1}"#).contains("\"x\""));
    }
}
