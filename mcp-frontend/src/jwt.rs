//! The shape of a JSON Web Token (RFC 7519, compact JWS serialization): what a bearer token
//! must look like before the API server is asked about it. ServiceAccount tokens from the
//! TokenRequest API and OIDC ID tokens are all JWTs, so in `tokenreview` mode anything else is
//! refused locally, without a TokenReview: a flood of junk tokens costs the API server nothing.
//! The signature is not checked here (the API server does that); only the form.

use serde_json::Value;

/// Longest token sent to review. ServiceAccount tokens are about 1 KiB; OIDC tokens with many
/// groups a few KiB.
pub const MAX_TOKEN_BYTES: usize = 16 * 1024;
/// Longest JOSE header decoded (it names the algorithm and key; a few dozen bytes in practice).
const MAX_HEADER_BYTES: usize = 1024;

/// Why `token` is not a signed JWT (a sentence fragment for `error_description`, which RFC 6750
/// restricts to printable ASCII without `"` or `\`), or `None` when it has the form of one:
/// at most [`MAX_TOKEN_BYTES`], three non-empty base64url parts, and a header that decodes to a
/// JSON object whose `alg` is a string other than `none`.
pub fn malformed(token: &str) -> Option<&'static str> {
    if token.len() > MAX_TOKEN_BYTES {
        return Some("the bearer token is not a JWT: it is longer than 16384 bytes");
    }
    let parts: Vec<&str> = token.split('.').collect();
    let [header, _, _] = parts.as_slice() else {
        return Some("the bearer token is not a JWT: a JWT has three parts separated by dots");
    };
    if parts
        .iter()
        .any(|p| p.is_empty() || !p.bytes().all(is_base64url))
    {
        return Some(
            "the bearer token is not a JWT: each of its three parts must be non-empty base64url",
        );
    }
    let alg = (header.len() <= MAX_HEADER_BYTES * 4 / 3 + 3)
        .then(|| decode_base64url(header))
        .flatten()
        .and_then(|json| serde_json::from_slice::<Value>(&json).ok())
        .and_then(|header| header.get("alg").and_then(Value::as_str).map(str::to_owned));
    match alg.as_deref() {
        None => Some(
            "the bearer token is not a JWT: its header is not a JSON object naming its algorithm (alg)",
        ),
        Some(alg) if alg.eq_ignore_ascii_case("none") => {
            Some("the bearer token is not a JWT: its header says it is unsigned (alg none)")
        }
        Some(_) => None,
    }
}

fn is_base64url(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-' || b == b'_'
}

/// Decodes unpadded base64url (RFC 4648 §5); `None` if `text` is not that.
fn decode_base64url(text: &str) -> Option<Vec<u8>> {
    if text.len() % 4 == 1 {
        return None;
    }
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let (mut bits, mut count) = (0u32, 0u32);
    for b in text.bytes() {
        let value = match b {
            b'A'..=b'Z' => b - b'A',
            b'a'..=b'z' => b - b'a' + 26,
            b'0'..=b'9' => b - b'0' + 52,
            b'-' => 62,
            b'_' => 63,
            _ => return None,
        };
        bits = (bits << 6) | u32::from(value);
        count += 6;
        if count >= 8 {
            count -= 8;
            out.push((bits >> count) as u8);
            bits &= (1 << count) - 1;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `{"alg":"RS256","kid":"k"}`, base64url.
    const RS256: &str = "eyJhbGciOiJSUzI1NiIsImtpZCI6ImsifQ";

    #[test]
    fn decodes_base64url_without_padding() {
        assert_eq!(decode_base64url("").unwrap(), b"");
        assert_eq!(decode_base64url("Zg").unwrap(), b"f");
        assert_eq!(decode_base64url("Zm8").unwrap(), b"fo");
        assert_eq!(decode_base64url("Zm9v").unwrap(), b"foo");
        assert_eq!(decode_base64url("-_8").unwrap(), [0xfb, 0xff]);
        assert_eq!(decode_base64url("Z"), None);
        assert_eq!(decode_base64url("Zm9v="), None);
        assert_eq!(
            decode_base64url(RS256).unwrap(),
            br#"{"alg":"RS256","kid":"k"}"#
        );
    }

    #[test]
    fn a_signed_jwt_passes_whatever_its_payload_and_signature() {
        assert_eq!(malformed(&format!("{RS256}.e30.c2ln")), None);
        assert_eq!(
            malformed(&format!("{RS256}.{}.{}", "x".repeat(2000), "y".repeat(342))),
            None
        );
    }

    #[test]
    fn anything_else_is_refused_saying_why() {
        let cases = [
            ("opaque-static-token".to_owned(), "three parts"),
            ("a.b".to_owned(), "three parts"),
            (format!("{RS256}.e30.c2ln.x"), "three parts"),
            (format!("{RS256}..c2ln"), "non-empty base64url"),
            (format!("{RS256}.e30.c2l+"), "non-empty base64url"),
            (format!("{RS256}.e30.c2ln="), "non-empty base64url"),
            ("bm90IGpzb24.e30.c2ln".to_owned(), "(alg)"),
            ("eyJ0eXAiOiJKV1QifQ.e30.c2ln".to_owned(), "(alg)"),
            ("eyJhbGciOjF9.e30.c2ln".to_owned(), "(alg)"),
            ("eyJhbGciOiJub25lIn0.e30.c2ln".to_owned(), "unsigned"),
            ("Z.e30.c2ln".to_owned(), "(alg)"),
            (format!("{}.e30.c2ln", "e".repeat(2000)), "(alg)"),
            (
                format!("{RS256}.{}.c2ln", "x".repeat(MAX_TOKEN_BYTES)),
                "longer",
            ),
        ];
        for (token, why) in cases {
            let reason = malformed(&token).unwrap_or_else(|| panic!("{token:.60} passed"));
            assert!(reason.contains(why), "{token:.60}: {reason}");
            assert!(reason.starts_with("the bearer token is not a JWT"));
            assert!(
                reason
                    .bytes()
                    .all(|b| (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\'),
                "{reason}"
            );
        }
    }
}
