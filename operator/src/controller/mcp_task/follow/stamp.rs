//! Lines of a log read with the kubelet's timestamps (`timestamps=true`): each line's place in
//! the container's whole log, whichever of its files the kubelet serves.
//!
//! The kubelet rotates a running container's log past `containerLogMaxSize` and serves only the
//! newest file, so a byte offset means something only within one read. The timestamp the runtime
//! gave each line (prefixed by the kubelet, once per line: a long line's continuation entries
//! get none) does not move with rotation: [`LinePos`] is that timestamp and how many lines
//! before it in the same read had the same one.

use k8s_openapi::jiff::Timestamp;

/// The longest timestamp prefix read: RFC 3339 with nanoseconds and an offset is 35 bytes.
const MAX_PREFIX: usize = 40;

/// Where a line sits in its container's log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LinePos {
    /// When the container runtime logged the line (the node's clock).
    pub time: Timestamp,
    /// How many lines before it had the same timestamp.
    pub nth: u32,
}

impl std::fmt::Display for LinePos {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:.9} #{}", self.time, self.nth)
    }
}

impl std::str::FromStr for LinePos {
    type Err = ();

    fn from_str(text: &str) -> Result<Self, ()> {
        let (time, nth) = text.split_once(" #").ok_or(())?;
        Ok(Self {
            time: time.parse().map_err(|_| ())?,
            nth: nth.parse().map_err(|_| ())?,
        })
    }
}

/// What [`Framer::push`] finds in a chunk, in order.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Piece<'a> {
    /// A line starts, at this place (`None`: it carried no timestamp the framer could read).
    Start(Option<LinePos>),
    /// Bytes of the current line, as the tool printed them (its newline included).
    Bytes(&'a [u8]),
    /// The current line ended with its newline.
    End,
}

/// Splits a timestamped log stream into line starts and the tool's own bytes, keeping at most
/// one timestamp's bytes of its own.
#[derive(Debug)]
pub(super) struct Framer {
    at_start: bool,
    prefix: Vec<u8>,
    last: Option<Timestamp>,
    nth: u32,
}

impl Default for Framer {
    fn default() -> Self {
        Self {
            at_start: true,
            prefix: Vec::new(),
            last: None,
            nth: 0,
        }
    }
}

impl Framer {
    /// Feeds one chunk of the stream, handing each [`Piece`] to `each`.
    pub(super) fn push(&mut self, chunk: &[u8], mut each: impl FnMut(Piece<'_>)) {
        let mut rest = chunk;
        while !rest.is_empty() {
            if !self.at_start {
                match rest.iter().position(|&b| b == b'\n') {
                    Some(i) => {
                        each(Piece::Bytes(&rest[..=i]));
                        each(Piece::End);
                        self.at_start = true;
                        rest = &rest[i + 1..];
                    }
                    None => {
                        each(Piece::Bytes(rest));
                        return;
                    }
                }
                continue;
            }
            let room = MAX_PREFIX - self.prefix.len();
            let window = &rest[..rest.len().min(room + 1)];
            match window.iter().position(|&b| b == b' ' || b == b'\n') {
                Some(i) if rest[i] == b' ' => {
                    self.prefix.extend_from_slice(&rest[..i]);
                    rest = &rest[i + 1..];
                    self.at_start = false;
                    let pos = self.position();
                    each(Piece::Start(pos));
                    if pos.is_none() {
                        // Not a timestamp: what was taken for one is the line's own text.
                        self.prefix.push(b' ');
                        each(Piece::Bytes(&self.prefix));
                    }
                    self.prefix.clear();
                }
                None if rest.len() <= room => {
                    self.prefix.extend_from_slice(rest);
                    return;
                }
                // A newline first, or no room left: this line carries no timestamp.
                _ => {
                    self.at_start = false;
                    each(Piece::Start(None));
                    if !self.prefix.is_empty() {
                        each(Piece::Bytes(&self.prefix));
                        self.prefix.clear();
                    }
                }
            }
        }
    }

    /// The stream ended: bytes kept as a would-be timestamp are a last line of their own.
    pub(super) fn finish(&mut self, mut each: impl FnMut(Piece<'_>)) {
        if self.at_start && !self.prefix.is_empty() {
            each(Piece::Start(None));
            each(Piece::Bytes(&self.prefix));
            self.prefix.clear();
            self.at_start = false;
        }
    }

    /// The place of the line whose timestamp is the prefix read.
    fn position(&mut self) -> Option<LinePos> {
        let time: Timestamp = std::str::from_utf8(&self.prefix).ok()?.parse().ok()?;
        if self.last == Some(time) {
            self.nth += 1;
        } else {
            self.last = Some(time);
            self.nth = 0;
        }
        Some(LinePos {
            time,
            nth: self.nth,
        })
    }
}
