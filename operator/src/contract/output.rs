//! Bounded accumulation of a tool's plain output (its non-message stdout lines).
//!
//! A tool that exits 0 without a result message completes with its plain output as text; one
//! that exits non-zero completes with `isError: true` and the output's tail. Output can be
//! gigabytes, so only a head and a tail of fixed size are kept, with a count of what fell
//! between them.

/// Keeps the first `head_max` and the last `tail_max` bytes of the plain output.
#[derive(Debug, Clone)]
pub struct OutputBuffer {
    head_max: usize,
    tail_max: usize,
    head: String,
    /// Text after the head; compacted to `tail_max` bytes whenever it reaches twice that.
    tail: String,
    /// Bytes dropped from the front of `tail`.
    omitted: usize,
}

impl OutputBuffer {
    /// A buffer keeping at most `head_max` bytes from the start and `tail_max` from the end.
    pub fn new(head_max: usize, tail_max: usize) -> Self {
        Self {
            head_max,
            tail_max,
            head: String::new(),
            tail: String::new(),
            omitted: 0,
        }
    }

    /// Appends one line of output (a newline is added).
    pub fn push_line(&mut self, line: &str) {
        let needed = line.len() + 1;
        if self.tail.is_empty() && self.omitted == 0 && self.head.len() + needed <= self.head_max {
            self.head.push_str(line);
            self.head.push('\n');
            return;
        }
        self.tail.push_str(line);
        self.tail.push('\n');
        // Compacting only at twice the bound keeps appends amortized O(1) per byte.
        if self.tail.len() > self.tail_max.saturating_mul(2).max(1) {
            self.compact();
        }
    }

    /// Total bytes of output seen (including the added newlines).
    pub fn total_bytes(&self) -> usize {
        self.head.len() + self.omitted + self.tail.len()
    }

    /// The output for a successful exit: head, an omission marker if needed, and tail.
    pub fn text(&self) -> String {
        let tail = suffix(&self.tail, self.tail_max);
        let omitted = self.omitted + (self.tail.len() - tail.len());
        let mut out = self.head.clone();
        if omitted > 0 {
            out.push_str(&format!("[… {omitted} bytes of output omitted …]\n"));
        }
        out.push_str(tail);
        trim_newline(out)
    }

    /// The last `tail_max` bytes of the output (for a failed exit), marked if cut.
    pub fn tail_text(&self) -> String {
        let tail = suffix(&self.tail, self.tail_max);
        // Borrow from the head only when nothing lies between it and the kept tail.
        let contiguous = self.omitted == 0 && tail.len() == self.tail.len();
        let room = if contiguous {
            self.tail_max - tail.len()
        } else {
            0
        };
        let from_head = suffix(&self.head, room);
        let omitted = self.total_bytes() - tail.len() - from_head.len();
        let mut out = String::new();
        if omitted > 0 {
            out.push_str(&format!(
                "[… {omitted} earlier bytes of output omitted …]\n"
            ));
        }
        out.push_str(from_head);
        out.push_str(tail);
        trim_newline(out)
    }

    fn compact(&mut self) {
        let keep = suffix(&self.tail, self.tail_max).len();
        let cut = self.tail.len() - keep;
        self.omitted += cut;
        self.tail.drain(..cut);
    }
}

/// The longest suffix of `s` of at most `max` bytes that starts on a char boundary.
fn suffix(s: &str, max: usize) -> &str {
    let mut start = s.len().saturating_sub(max);
    while !s.is_char_boundary(start) {
        start += 1;
    }
    &s[start..]
}

fn trim_newline(mut s: String) -> String {
    if s.ends_with('\n') {
        s.pop();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fill(buffer: &mut OutputBuffer, lines: impl IntoIterator<Item = String>) {
        for line in lines {
            buffer.push_line(&line);
        }
    }

    #[test]
    fn small_output_is_kept_whole() {
        let mut b = OutputBuffer::new(100, 100);
        fill(&mut b, ["one".into(), "two".into()]);
        assert_eq!(b.text(), "one\ntwo");
        assert_eq!(b.tail_text(), "one\ntwo");
        assert_eq!(b.total_bytes(), 8);
    }

    #[test]
    fn empty_output_is_empty_text() {
        let b = OutputBuffer::new(10, 10);
        assert_eq!(b.text(), "");
        assert_eq!(b.tail_text(), "");
    }

    #[test]
    fn long_output_keeps_head_and_tail_with_a_marker() {
        let mut b = OutputBuffer::new(8, 8);
        fill(&mut b, (0..100).map(|i| format!("l{i:02}")));
        // 100 lines of 4 bytes: head "l00\nl01\n", tail "l98\nl99\n".
        assert_eq!(
            b.text(),
            "l00\nl01\n[… 384 bytes of output omitted …]\nl98\nl99"
        );
        assert_eq!(
            b.tail_text(),
            "[… 392 earlier bytes of output omitted …]\nl98\nl99"
        );
        assert_eq!(b.total_bytes(), 400);
    }

    #[test]
    fn tail_text_borrows_from_the_head_when_the_tail_is_short() {
        let mut b = OutputBuffer::new(8, 10);
        fill(&mut b, ["aaa".into(), "bbb".into(), "ccc".into()]);
        assert_eq!(b.text(), "aaa\nbbb\nccc");
        assert_eq!(
            b.tail_text(),
            "[… 2 earlier bytes of output omitted …]\na\nbbb\nccc"
        );
    }

    #[test]
    fn cuts_on_char_boundaries() {
        let mut b = OutputBuffer::new(0, 5);
        fill(&mut b, ["ééééé".into()]);
        let tail = b.tail_text();
        assert!(tail.ends_with("éé"), "{tail}");
        assert!(tail.starts_with("[… 6 earlier"), "{tail}");
    }

    #[test]
    fn memory_stays_bounded() {
        let mut b = OutputBuffer::new(16, 32);
        fill(&mut b, (0..10_000).map(|i| format!("line {i}")));
        assert!(b.head.len() <= 16 && b.tail.len() <= 64 + 16);
        assert!(b.text().len() < 16 + 32 + 64);
        assert!(b.text().ends_with("line 9999"));
    }
}
