//! gzip answers ([RFC 1952](https://www.rfc-editor.org/rfc/rfc1952)) for large `tasks/get`
//! answers, when the client accepts them (`Accept-Encoding`,
//! [RFC 9110 §12.5.3](https://www.rfc-editor.org/rfc/rfc9110#section-12.5.3)).
//!
//! The kept bytes of an answer are compressed once per task state ([`Compressed::of`]), into
//! raw DEFLATE blocks ([RFC 1951](https://www.rfc-editor.org/rfc/rfc1951)) that are not final
//! and end on a byte boundary (a sync flush). Each response is then one gzip member built
//! around them without compressing anything ([`Compressed::member`]): the header and the
//! request's own start (`{"jsonrpc":"2.0","id":<id>,"result":`) as a stored block, the
//! compressed blocks as they are, and the closing `}` as the final stored block. The member's
//! CRC-32 is that of the start moved past the kept bytes and combined with theirs, which costs
//! 32 steps whatever the answer's size ([`shift`]). What a poll costs no longer grows with
//! the answer's size beyond the compressed bytes themselves.

use axum::http::HeaderMap;
use axum::http::header::ACCEPT_ENCODING;
use bytes::Bytes;
use flate2::{Compress, Compression, FlushCompress};

/// CRC-32's polynomial, bit-reflected (RFC 1952 §8): bit 31 is x⁰, bit 0 is x³¹.
const POLY: u32 = 0xedb8_8320;

/// The member header: ID 1f 8b, method 8 (DEFLATE), no flags, no time, no extra flags, OS
/// unknown (RFC 1952 §2.3).
const HEADER: [u8; 10] = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];

/// The end of every answer, sent as the final stored block.
const END: u8 = b'}';

/// The kept bytes of one answer, compressed once, with what each response needs to wrap them.
#[derive(Debug)]
pub struct Compressed {
    /// Raw DEFLATE blocks of the kept bytes, none final, ending on a byte boundary.
    blocks: Bytes,
    /// CRC-32 of the kept bytes followed by [`END`].
    crc: u32,
    /// Their length.
    len: u64,
    /// x^(8·len) modulo the polynomial: multiplying a CRC-32 by it moves it past them.
    shift: u32,
}

impl Compressed {
    /// `kept` compressed, unless that leaves more than 9/10 of its size (random or already
    /// compressed data) or the compressor fails.
    pub fn of(kept: &[u8]) -> Option<Self> {
        let mut compress = Compress::new(Compression::default(), false);
        let mut blocks = Vec::with_capacity(kept.len() / 4 + 64);
        loop {
            let read = usize::try_from(compress.total_in()).ok()?;
            compress
                .compress_vec(&kept[read..], &mut blocks, FlushCompress::Sync)
                .ok()?;
            let read = usize::try_from(compress.total_in()).ok()?;
            // The flush is complete once everything is read and the output has room left.
            if read == kept.len() && blocks.len() < blocks.capacity() {
                break;
            }
            blocks.reserve(blocks.capacity().max(4096));
        }
        if blocks.len() > max_size(kept.len()) {
            return None;
        }
        let mut crc = crc32fast::Hasher::new();
        crc.update(kept);
        crc.update(&[END]);
        let len = kept.len() as u64 + 1;
        Some(Self {
            blocks: Bytes::from(blocks),
            crc: crc.finalize(),
            len,
            shift: shift(len),
        })
    }

    /// The gzip member of `start`, the kept bytes and `}`, in three pieces (only the first
    /// and last are new); `None` when `start` does not fit in one stored block.
    pub fn member(&self, start: &[u8]) -> Option<[Bytes; 3]> {
        let start_len = u16::try_from(start.len()).ok()?;
        let mut head = Vec::with_capacity(HEADER.len() + 5 + start.len());
        head.extend_from_slice(&HEADER);
        stored_block(&mut head, false, start_len);
        head.extend_from_slice(start);
        let crc = multiply(self.shift, crc32fast::hash(start)) ^ self.crc;
        // ISIZE is the length modulo 2³² (RFC 1952 §2.3.1).
        let size = (start.len() as u64 + self.len) as u32;
        let mut tail = Vec::with_capacity(5 + 1 + 8);
        stored_block(&mut tail, true, 1);
        tail.push(END);
        tail.extend_from_slice(&crc.to_le_bytes());
        tail.extend_from_slice(&size.to_le_bytes());
        Some([Bytes::from(head), self.blocks.clone(), Bytes::from(tail)])
    }

    /// Bytes held.
    pub fn size(&self) -> usize {
        self.blocks.len()
    }
}

/// The most bytes the compressed copy of `len` bytes may take (9/10 of them); a copy any
/// larger is not used.
pub fn max_size(len: usize) -> usize {
    len - len / 10
}

/// Appends a stored block's header (RFC 1951 §3.2.4) at a byte boundary: BFINAL and BTYPE 00
/// in the first byte (the rest of it padding), then LEN and its one's complement.
fn stored_block(out: &mut Vec<u8>, last: bool, len: u16) {
    out.push(u8::from(last));
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&(!len).to_le_bytes());
}

/// `a · b` modulo the polynomial, both bit-reflected.
fn multiply(a: u32, mut b: u32) -> u32 {
    let mut product = 0;
    for bit in (0..32).rev() {
        if a & (1 << bit) != 0 {
            product ^= b;
        }
        b = if b & 1 != 0 { (b >> 1) ^ POLY } else { b >> 1 };
    }
    product
}

/// x^(8·n) modulo the polynomial, by squaring: the CRC-32 of bytes A followed by n bytes B is
/// `multiply(shift(n), crc(A)) ^ crc(B)`.
fn shift(mut n: u64) -> u32 {
    let mut result = 1 << 31; // x⁰
    let mut power = 1 << (31 - 8); // x⁸, x¹⁶, x³², ...
    while n != 0 {
        if n & 1 != 0 {
            result = multiply(power, result);
        }
        power = multiply(power, power);
        n >>= 1;
    }
    result
}

/// Whether `headers` accept a gzip-coded response: `gzip` (or `x-gzip`) listed with a weight
/// above 0, or `*` with a weight above 0 where gzip is not listed. A header that is not text,
/// or a weight that is not a number, accepts nothing.
pub fn accepts(headers: &HeaderMap) -> bool {
    let (mut gzip, mut any) = (None, None);
    for value in headers.get_all(ACCEPT_ENCODING) {
        let Ok(value) = value.to_str() else {
            return false;
        };
        for item in value.split(',') {
            let mut parts = item.split(';');
            let coding = parts.next().unwrap_or_default().trim();
            let mut accepted = true;
            for parameter in parts {
                let Some((name, weight)) = parameter.split_once('=') else {
                    return false;
                };
                if name.trim().eq_ignore_ascii_case("q") {
                    let Ok(weight) = weight.trim().parse::<f32>() else {
                        return false;
                    };
                    accepted = weight > 0.0;
                }
            }
            let seen =
                if coding.eq_ignore_ascii_case("gzip") || coding.eq_ignore_ascii_case("x-gzip") {
                    &mut gzip
                } else if coding == "*" {
                    &mut any
                } else {
                    continue;
                };
            *seen = Some(seen.unwrap_or(false) || accepted);
        }
    }
    gzip.or(any).unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use axum::http::HeaderValue;

    use super::*;

    /// The bytes of a gzip member (or several), as a standard decoder reads them.
    fn gunzip(member: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        flate2::read::MultiGzDecoder::new(member)
            .read_to_end(&mut out)
            .expect("a valid gzip member");
        out
    }

    /// Text that compresses as prose or code does, not as one repeated byte.
    fn text(len: usize) -> Vec<u8> {
        let words = [
            "task",
            "status",
            "working",
            "completed",
            "poll",
            "\\n",
            "result",
            "42",
        ];
        let mut out = Vec::with_capacity(len + 16);
        let mut seed = 7u64;
        while out.len() < len {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            out.extend_from_slice(words[(seed >> 33) as usize % words.len()].as_bytes());
            out.push(b' ');
        }
        out.truncate(len);
        out
    }

    #[test]
    fn a_member_decodes_to_the_start_the_kept_bytes_and_the_end() {
        for len in [1000, 4096, 65_535, 65_536, 200_000, 512 * 1024] {
            let kept = text(len);
            let compressed = Compressed::of(&kept).expect("text compresses");
            assert!(compressed.size() < kept.len(), "{len}");
            for start in [
                &b"{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":"[..],
                b"",
                &[b'a'; 65_535],
            ] {
                let member: Vec<u8> = compressed.member(start).unwrap().concat();
                let mut whole = start.to_vec();
                whole.extend_from_slice(&kept);
                whole.push(b'}');
                assert_eq!(gunzip(&member), whole, "{len} bytes after {}", start.len());
            }
        }
    }

    #[test]
    fn a_start_longer_than_one_stored_block_gets_no_member() {
        let compressed = Compressed::of(&text(10_000)).unwrap();
        assert!(compressed.member(&[b'a'; 65_536]).is_none());
    }

    #[test]
    fn bytes_that_do_not_compress_are_not_kept_compressed() {
        let mut seed = 1u64;
        let random: Vec<u8> = (0..100_000)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                seed as u8
            })
            .collect();
        assert!(Compressed::of(&random).is_none());
    }

    #[test]
    fn the_shifted_crc_is_the_crc_of_the_concatenation() {
        let data = text(300_000);
        for split in [0, 1, 7, 1000, 65_536, 299_999, 300_000] {
            let (a, b) = data.split_at(split);
            let combined = multiply(shift(b.len() as u64), crc32fast::hash(a)) ^ crc32fast::hash(b);
            assert_eq!(combined, crc32fast::hash(&data), "split at {split}");
        }
    }

    fn with(values: &[&str]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for v in values {
            headers.append(ACCEPT_ENCODING, HeaderValue::from_str(v).unwrap());
        }
        headers
    }

    #[test]
    fn accept_encoding_is_read_with_its_weights() {
        for yes in [
            &["gzip"][..],
            &["GZIP"],
            &["x-gzip"],
            &["gzip, deflate, br"],
            &["br;q=1.0, gzip;q=0.5"],
            &["*"],
            &["identity, *;q=0.1"],
            &["deflate", "gzip"],
            &["gzip;q=0", "gzip"],
        ] {
            assert!(accepts(&with(yes)), "{yes:?}");
        }
        for no in [
            &[][..],
            &[""],
            &["identity"],
            &["br, deflate"],
            &["gzip;q=0"],
            &["gzip;q=0.000"],
            &["*;q=0"],
            &["gzip;q=0, *"],
            &["gzip;q=abc"],
            &["gzip;level"],
            &["gzipx"],
        ] {
            assert!(!accepts(&with(no)), "{no:?}");
        }
    }
}
