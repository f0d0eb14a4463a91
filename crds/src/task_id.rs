//! Task IDs: 192 random bits from a CSPRNG, written as 39 characters of lowercase RFC 4648
//! base32 without padding, so that an ID is also a valid object, Job and label name (at most
//! 63 characters). IDs of earlier releases (160 bits, 32 characters) stay valid.

use rand::RngCore;

/// Number of random bytes in a task ID (192 bits).
const RANDOM_BYTES: usize = 24;
/// Length of a task ID in characters: 192 bits at 5 bits per character, rounded up.
pub const TASK_ID_LEN: usize = (RANDOM_BYTES * 8).div_ceil(5);
/// Length of a task ID generated before IDs had 192 bits: 160 bits, 32 characters.
pub const LEGACY_TASK_ID_LEN: usize = 32;
/// The lowercase RFC 4648 base32 alphabet.
const ALPHABET: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";

/// A new task ID from the thread-local CSPRNG (ChaCha, seeded from the operating system).
pub fn generate() -> String {
    let mut bytes = [0u8; RANDOM_BYTES];
    rand::rng().fill_bytes(&mut bytes);
    encode(&bytes)
}

/// Whether `id` has the shape of a task ID: 39 base32 characters whose last one carries no
/// bits beyond the 192 (as [`generate`] writes them), or 32 base32 characters (an ID of an
/// earlier release). Lets the front end answer "not found" for a malformed ID without asking
/// the API server.
pub fn is_valid(id: &str) -> bool {
    let base32 = id.bytes().all(|b| ALPHABET.contains(&b));
    match id.len() {
        LEGACY_TASK_ID_LEN => base32,
        // 39 characters hold 195 bits: the last character's low 3 bits are padding, zero.
        TASK_ID_LEN => base32 && id.bytes().last().is_some_and(|b| value(b) & 0b111 == 0),
        _ => false,
    }
}

/// The 5-bit value of a base32 character (0 for any other byte).
fn value(character: u8) -> u8 {
    ALPHABET
        .iter()
        .position(|&a| a == character)
        .and_then(|i| u8::try_from(i).ok())
        .unwrap_or(0)
}

/// Lowercase base32 of the bytes, without padding: each 5-byte block gives 8 characters, a
/// shorter last block as many characters as its bits need (zero bits fill the last one).
fn encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity((bytes.len() * 8).div_ceil(5));
    for chunk in bytes.chunks(5) {
        let mut group = [0u8; 8];
        group[3..3 + chunk.len()].copy_from_slice(chunk);
        let bits = u64::from_be_bytes(group);
        let characters = (chunk.len() * 8).div_ceil(5);
        for i in (0..8).rev().take(characters) {
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
        // RFC 4648 section 10: BASE32("fooba") = "MZXW6YTB", BASE32("foob") = "MZXW6YQ=".
        assert_eq!(encode(b"foobafoobafoobafooba"), "mzxw6ytb".repeat(4));
        assert_eq!(
            encode(b"foobafoobafoobafoobafoob"),
            format!("{}mzxw6yq", "mzxw6ytb".repeat(4))
        );
        assert_eq!(encode(&[0; RANDOM_BYTES]), "a".repeat(39));
        assert_eq!(
            encode(&[0xff; RANDOM_BYTES]),
            format!("{}y", "7".repeat(38))
        );
    }

    #[test]
    fn generated_ids_carry_192_bits_and_are_valid_names_and_label_values() {
        assert_eq!(TASK_ID_LEN, 39);
        let ids: HashSet<String> = (0..1000).map(|_| generate()).collect();
        assert_eq!(ids.len(), 1000);
        for id in &ids {
            assert_eq!(id.len(), 39);
            assert!(is_valid(id), "{id}");
            // A DNS-1123 label (object and Job name) and a label value: <= 63, [a-z0-9].
            assert!(id.len() <= 63);
            assert!(
                id.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
            );
            assert!(id.as_bytes()[0].is_ascii_lowercase() || id.as_bytes()[0].is_ascii_digit());
        }
    }

    #[test]
    fn ids_of_earlier_releases_stay_valid() {
        // A 160-bit ID as the previous release generated it.
        assert!(is_valid("mzxw6ytbmzxw6ytbmzxw6ytbmzxw6ytb"));
        assert!(is_valid(&"7".repeat(32)));
    }

    #[test]
    fn is_valid_refuses_other_shapes() {
        assert!(!is_valid(""));
        for len in [31, 33, 38, 40, 63] {
            assert!(!is_valid(&"a".repeat(len)), "{len}");
        }
        assert!(!is_valid(&"A".repeat(39)));
        assert!(!is_valid(&"1".repeat(39)));
        assert!(!is_valid(&format!("{}-", "a".repeat(38))));
        // The last of 39 characters carries 2 bits and 3 zero padding bits.
        assert!(!is_valid(&format!("{}b", "a".repeat(38))));
        assert!(is_valid(&format!("{}i", "a".repeat(38))));
    }
}
