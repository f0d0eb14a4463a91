//! Splitting a container's log byte stream into bounded lines.
//!
//! The log API hands out arbitrary byte chunks: a line may span chunks, hold invalid UTF-8,
//! be megabytes long or lack its final newline. The splitter keeps at most a fixed number of
//! bytes per line and remembers the full length, so memory stays bounded whatever a tool prints.

/// One line of container output, possibly cut to the splitter's bound.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawLine {
    /// The first bytes of the line without its terminator (`\n` or `\r\n`).
    pub bytes: Vec<u8>,
    /// The full length of the line in bytes; larger than `bytes.len()` when the line was cut.
    pub len: usize,
    /// True for a last line that the stream ended without terminating.
    pub unterminated: bool,
}

impl RawLine {
    /// Whether the line was longer than the bound and `bytes` holds only its start.
    pub fn is_truncated(&self) -> bool {
        self.len > self.bytes.len()
    }
}

/// Turns a byte stream into [`RawLine`]s of at most `max_line_bytes` kept bytes each.
#[derive(Debug)]
pub struct LineSplitter {
    max_line_bytes: usize,
    current: Vec<u8>,
    current_len: usize,
}

impl LineSplitter {
    /// A splitter that keeps at most `max_line_bytes` bytes of each line.
    pub fn new(max_line_bytes: usize) -> Self {
        Self {
            max_line_bytes,
            current: Vec::new(),
            current_len: 0,
        }
    }

    /// Feeds one chunk of the stream and returns every line it completed.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<RawLine> {
        let mut lines = Vec::new();
        let mut rest = chunk;
        while let Some(pos) = rest.iter().position(|&b| b == b'\n') {
            self.append(&rest[..pos]);
            lines.push(self.take(false));
            rest = &rest[pos + 1..];
        }
        self.append(rest);
        lines
    }

    /// Ends the stream, returning the partial last line if there is one.
    pub fn finish(&mut self) -> Option<RawLine> {
        (self.current_len > 0).then(|| self.take(true))
    }

    /// Forgets the partial last line (a new read of the log will deliver it whole).
    pub fn discard_partial(&mut self) {
        self.current.clear();
        self.current_len = 0;
    }

    fn append(&mut self, bytes: &[u8]) {
        let room = self.max_line_bytes.saturating_sub(self.current.len());
        self.current
            .extend_from_slice(&bytes[..bytes.len().min(room)]);
        self.current_len += bytes.len();
    }

    fn take(&mut self, unterminated: bool) -> RawLine {
        let mut bytes = std::mem::take(&mut self.current);
        let mut len = std::mem::take(&mut self.current_len);
        // A CRLF terminator is one terminator; a cut line's '\r' was never stored.
        if len == bytes.len() && bytes.last() == Some(&b'\r') && !unterminated {
            bytes.pop();
            len -= 1;
        }
        RawLine {
            bytes,
            len,
            unterminated,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(lines: &[RawLine]) -> Vec<String> {
        lines
            .iter()
            .map(|l| String::from_utf8_lossy(&l.bytes).into_owned())
            .collect()
    }

    #[test]
    fn splits_lines_across_chunks() {
        let mut s = LineSplitter::new(100);
        let mut lines = s.push(b"one\ntw");
        lines.extend(s.push(b"o\nthr"));
        lines.extend(s.push(b"ee\n"));
        assert_eq!(texts(&lines), ["one", "two", "three"]);
        assert!(lines.iter().all(|l| !l.is_truncated() && !l.unterminated));
        assert_eq!(s.finish(), None);
    }

    #[test]
    fn strips_crlf_and_keeps_empty_lines() {
        let mut s = LineSplitter::new(100);
        let lines = s.push(b"a\r\n\nb\r");
        assert_eq!(texts(&lines), ["a", ""]);
        let last = s.finish().unwrap();
        // An unterminated line keeps its '\r': it may be the start of a CRLF that never came.
        assert_eq!(last.bytes, b"b\r");
        assert!(last.unterminated);
    }

    #[test]
    fn cuts_long_lines_and_remembers_their_length() {
        let mut s = LineSplitter::new(4);
        let mut lines = s.push(b"abcdefgh");
        lines.extend(s.push(b"ij\nxy\n"));
        assert_eq!(texts(&lines), ["abcd", "xy"]);
        assert_eq!(lines[0].len, 10);
        assert!(lines[0].is_truncated());
        assert!(!lines[1].is_truncated());
    }

    #[test]
    fn returns_partial_last_line_on_finish() {
        let mut s = LineSplitter::new(100);
        assert!(s.push(b"no newline").is_empty());
        let last = s.finish().unwrap();
        assert_eq!(last.bytes, b"no newline");
        assert!(last.unterminated);
        assert_eq!(s.finish(), None);
    }

    #[test]
    fn keeps_invalid_utf8_bytes_verbatim() {
        let mut s = LineSplitter::new(100);
        let lines = s.push(b"\xff\xfe ok\n");
        assert_eq!(lines[0].bytes, b"\xff\xfe ok");
    }

    #[test]
    fn zero_bound_keeps_nothing_but_counts() {
        let mut s = LineSplitter::new(0);
        let lines = s.push(b"abc\n");
        assert!(lines[0].bytes.is_empty());
        assert_eq!(lines[0].len, 3);
    }
}
