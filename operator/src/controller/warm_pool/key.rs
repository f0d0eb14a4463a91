//! The claim key: how only the operator can hand a waiting pod its task.
//!
//! Each warm Job gets its own claim secret, `HMAC-SHA256(key, namespace, Job name)`; the pod
//! holds only the secret's SHA-256 (env `MCP_WARM_CLAIM_KEY_SHA256`), so reading the pod (or
//! its Job) tells nobody the secret, and a claimed pod, which learns its own secret, learns
//! nothing about any other pod's. The key is this process's own (random at start) unless
//! `MCP_OPERATOR_WARM_KEY_FILE` names a file holding one that every replica shares: then a
//! new leader can claim the pods the last one started; otherwise it replaces them (a waiting
//! pod holds no task data, so nothing is lost but the start).

use std::path::Path;

use rand::RngCore;
use ring::{digest, hmac};

/// Bytes of a key file read: 32 to 4096.
const KEY_FILE_BYTES: std::ops::RangeInclusive<usize> = 32..=4096;

/// The operator's claim key and its public ID (a hash prefix, on each warm Job it starts, so
/// that a replica knows which pods it can claim).
pub struct ClaimKey {
    key: hmac::Key,
    id: String,
}

impl std::fmt::Debug for ClaimKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClaimKey")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl ClaimKey {
    /// A key from `bytes`.
    pub fn from_bytes(bytes: &[u8]) -> Self {
        let id = hex(&digest::digest(&digest::SHA256, bytes).as_ref()[..8]);
        Self {
            key: hmac::Key::new(hmac::HMAC_SHA256, bytes),
            id,
        }
    }

    /// A random key for this process alone.
    pub fn random() -> Self {
        let mut bytes = [0u8; 32];
        rand::rng().fill_bytes(&mut bytes);
        Self::from_bytes(&bytes)
    }

    /// The key in the file `path` (its bytes as they are, 32 to 4096 of them).
    pub fn from_file(path: &Path) -> Result<Self, String> {
        let bytes =
            std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        if !KEY_FILE_BYTES.contains(&bytes.len()) {
            return Err(format!(
                "{} holds {} bytes; a claim key is 32 to 4096 bytes",
                path.display(),
                bytes.len()
            ));
        }
        Ok(Self::from_bytes(&bytes))
    }

    /// The key's public ID: 16 hex digits.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The claim secret of the warm Job `name` in `namespace`, as 64 lowercase hex digits.
    pub fn secret(&self, namespace: &str, name: &str) -> String {
        let mut message = Vec::with_capacity(namespace.len() + name.len() + 16);
        message.extend_from_slice(b"mcp-warm-claim\0");
        message.extend_from_slice(namespace.as_bytes());
        message.push(0);
        message.extend_from_slice(name.as_bytes());
        hex(hmac::sign(&self.key, &message).as_ref())
    }

    /// What the pod of that Job holds: the SHA-256 of the secret's 32 bytes, as hex.
    pub fn secret_hash(&self, namespace: &str, name: &str) -> String {
        let secret = self.secret(namespace, name);
        let bytes: Vec<u8> = (0..secret.len())
            .step_by(2)
            .filter_map(|i| u8::from_str_radix(&secret[i..i + 2], 16).ok())
            .collect();
        hex(digest::digest(&digest::SHA256, &bytes).as_ref())
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_job_has_its_own_secret_and_the_pod_sees_only_its_hash() {
        let key = ClaimKey::from_bytes(&[7u8; 32]);
        let a = key.secret("tools", "echo-w1");
        assert_eq!(a.len(), 64);
        assert_eq!(a, key.secret("tools", "echo-w1"), "deterministic");
        assert_ne!(a, key.secret("tools", "echo-w2"));
        assert_ne!(a, key.secret("other", "echo-w1"));
        // The names cannot run into each other: ("a", "bc") is not ("ab", "c").
        assert_ne!(key.secret("a", "bc"), key.secret("ab", "c"));
        let hash = key.secret_hash("tools", "echo-w1");
        assert_eq!(hash.len(), 64);
        assert_ne!(hash, a);
        // The hash is SHA-256 of the secret's bytes, as the launcher checks it.
        let bytes: Vec<u8> = (0..64)
            .step_by(2)
            .map(|i| u8::from_str_radix(&a[i..i + 2], 16).unwrap())
            .collect();
        assert_eq!(hash, hex(digest::digest(&digest::SHA256, &bytes).as_ref()));
        // Another key, other secrets; the ID tells them apart.
        let other = ClaimKey::from_bytes(&[8u8; 32]);
        assert_ne!(other.secret("tools", "echo-w1"), a);
        assert_ne!(other.id(), key.id());
        assert_eq!(key.id().len(), 16);
    }

    #[test]
    fn a_key_file_must_hold_32_to_4096_bytes() {
        let dir = std::env::temp_dir().join(format!("warm-key-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let short = dir.join("short");
        std::fs::write(&short, [1u8; 31]).unwrap();
        let err = ClaimKey::from_file(&short).unwrap_err();
        assert!(err.contains("holds 31 bytes"), "{err}");
        let good = dir.join("good");
        std::fs::write(&good, [1u8; 32]).unwrap();
        let key = ClaimKey::from_file(&good).unwrap();
        assert_eq!(key.id(), ClaimKey::from_bytes(&[1u8; 32]).id());
        let missing = ClaimKey::from_file(&dir.join("missing")).unwrap_err();
        assert!(missing.contains("cannot read"), "{missing}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
