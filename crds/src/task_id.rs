//! Task IDs: 160 random bits from a CSPRNG, written as 32 characters of lowercase RFC 4648
//! base32 without padding, so that an ID is also a valid object, Job and label name.

use rand::RngCore;

/// Number of random bytes in a task ID (160 bits).
const RANDOM_BYTES: usize = 20;
/// Length of a task ID in characters: 160 bits at 5 bits per character.
pub const TASK_ID_LEN: usize = RANDOM_BYTES * 8 / 5;
/// The lowercase RFC 4648 base32 alphabet.
const ALPHABET: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";

/// A new task ID from the thread-local CSPRNG (ChaCha, seeded from the operating system).
pub fn generate() -> String {
    let mut bytes = [0u8; RANDOM_BYTES];
    rand::rng().fill_bytes(&mut bytes);
    encode(&bytes)
}

/// Whether `id` has the shape of a task ID. Lets the front end answer "not found" for a
/// malformed ID without asking the API server.
pub fn is_valid(id: &str) -> bool {
    id.len() == TASK_ID_LEN && id.bytes().all(|b| ALPHABET.contains(&b))
}

/// Lowercase base32 of 20 bytes; 160 bits divide evenly into 32 characters, so no padding.
fn encode(bytes: &[u8; RANDOM_BYTES]) -> String {
    let mut out = String::with_capacity(TASK_ID_LEN);
    for chunk in bytes.chunks(5) {
        let mut group = [0u8; 8];
        group[3..].copy_from_slice(chunk);
        let bits = u64::from_be_bytes(group);
        for i in (0..8).rev() {
            let index = (bits >> (i * 5)) & 0x1f;
            out.push(char::from(ALPHABET[index as usize]));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn encode_matches_rfc4648_test_vectors() {
        // RFC 4648 section 10: BASE32("fooba") = "MZXW6YTB"; five such blocks.
        let bytes = *b"foobafoobafoobafooba";
        assert_eq!(encode(&bytes), "mzxw6ytb".repeat(4));
        assert_eq!(encode(&[0; RANDOM_BYTES]), "a".repeat(32));
        assert_eq!(encode(&[0xff; RANDOM_BYTES]), "7".repeat(32));
    }

    #[test]
    fn generated_ids_are_valid_dns_labels_and_distinct() {
        let ids: HashSet<String> = (0..1000).map(|_| generate()).collect();
        assert_eq!(ids.len(), 1000);
        for id in &ids {
            assert_eq!(id.len(), 32);
            assert!(is_valid(id), "{id}");
            assert!(
                id.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
            );
        }
    }

    #[test]
    fn is_valid_refuses_other_shapes() {
        assert!(!is_valid(""));
        assert!(!is_valid(&"a".repeat(31)));
        assert!(!is_valid(&"a".repeat(33)));
        assert!(!is_valid(&"A".repeat(32)));
        assert!(!is_valid(&"1".repeat(32)));
        assert!(!is_valid(&format!("{}-", "a".repeat(31))));
    }
}
