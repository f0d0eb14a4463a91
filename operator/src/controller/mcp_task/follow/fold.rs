//! One read of a follower's log folded into its state: past the lines the state holds, or
//! replayed privately until it passes the checkpoint (see the parent module).

use super::stamp::{Framer, LinePos, Piece};
use super::{FollowState, News};
use crate::contract::{Progress, ProgressWarning};

/// Where one clean read of a log ended: its last line's place, how many bytes of that line it
/// read, and whether the line lacked its newline. Two reads of a stopped container's log that
/// end alike read it to the same end, whichever file each began in.
pub(super) type Digest = (Option<LinePos>, u64, bool);

/// Where the line being read goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sink {
    /// Already folded (a read again from an earlier line): dropped.
    Skip,
    /// Into this read's replay, which the state does not show yet.
    Replay,
    /// Into the state's progress.
    State,
}

/// One read of the log: folds into the state the lines past those it holds, or replays the log
/// into a progress of its own until it passes the state's checkpoint (then the replay becomes
/// the state's progress), so what the reconciler sees never goes back.
pub(super) struct Read {
    framer: Framer,
    /// The replay (`None`: the state is folded from the log; this read adds to it).
    replay: Option<Progress>,
    /// Bytes and last whole line of the replay.
    replay_bytes: u64,
    replay_at: Option<LinePos>,
    /// This read has folded a line the state lacked: every later line of it is new.
    caught_up: bool,
    sink: Sink,
    /// The place of the line being read, its bytes so far and whether its newline is missing.
    line: Option<LinePos>,
    line_bytes: u64,
    open: bool,
}

impl Read {
    /// A read of the log into `state` (a replay while the state waits for one).
    pub(super) fn new(state: &FollowState) -> Self {
        let replay = state.replay.as_ref().map(|r| state.resumed(&r.resume));
        Self {
            framer: Framer::default(),
            replay,
            replay_bytes: 0,
            replay_at: None,
            caught_up: false,
            sink: Sink::Skip,
            line: None,
            line_bytes: 0,
            open: false,
        }
    }

    /// Where this read ended, so far.
    pub(super) fn digest(&self) -> Digest {
        (self.line, self.line_bytes, self.open)
    }

    /// Whether `state` holds everything this read read (up to its end).
    pub(super) fn held_by(&self, state: &FollowState) -> bool {
        match (self.open, self.line) {
            (true, line) => state.partial == Some(line),
            (false, Some(line)) => state.at.is_some_and(|at| at >= line),
            (false, None) => true,
        }
    }

    /// Folds `chunk` in; returns the warnings to report.
    pub(super) fn push(&mut self, state: &mut FollowState, chunk: &[u8]) -> Vec<News> {
        let mut raised = Vec::new();
        let mut framer = std::mem::take(&mut self.framer);
        framer.push(chunk, |piece| match piece {
            Piece::Start(pos) => self.start_line(state, pos),
            Piece::Bytes(bytes) => raised.extend(self.fold(state, bytes)),
            Piece::End => self.end_line(state),
        });
        self.framer = framer;
        self.report(state, raised)
    }

    fn start_line(&mut self, state: &mut FollowState, pos: Option<LinePos>) {
        (self.line, self.line_bytes, self.open) = (pos, 0, true);
        if self.replay.is_some() {
            let passed = state.replay.as_ref().is_some_and(|r| {
                match r.checkpoint.at {
                    Some(checkpoint) => pos.is_some_and(|p| p > checkpoint),
                    // A checkpoint from before lines had places: its byte count.
                    None => self.replay_bytes >= r.checkpoint.bytes,
                }
            });
            if !passed {
                self.sink = Sink::Replay;
                return;
            }
            self.go_live(state);
        }
        let old = !self.caught_up && pos.is_some_and(|p| state.at.is_some_and(|at| p <= at));
        if old {
            self.sink = Sink::Skip;
            return;
        }
        if state.partial.take().is_some() {
            // This read delivers that line whole (or the log no longer has it).
            state.progress.discard_partial_line();
        }
        self.caught_up = true;
        self.sink = Sink::State;
    }

    fn fold(&mut self, state: &mut FollowState, bytes: &[u8]) -> Vec<ProgressWarning> {
        self.line_bytes += bytes.len() as u64;
        match self.sink {
            Sink::Skip => Vec::new(),
            Sink::Replay => {
                self.replay_bytes += bytes.len() as u64;
                // A replay re-reads what was reported before the failover: no warnings.
                self.replay
                    .as_mut()
                    .map(|p| drop(p.push_bytes(bytes)))
                    .unwrap_or_default();
                Vec::new()
            }
            Sink::State => {
                state.bytes += bytes.len() as u64;
                state.last_output = std::time::Instant::now();
                state.progress.push_bytes(bytes)
            }
        }
    }

    fn end_line(&mut self, state: &mut FollowState) {
        self.open = false;
        match self.sink {
            Sink::Skip => {}
            Sink::Replay => self.replay_at = self.replay_at.max(self.line),
            Sink::State => state.at = state.at.max(self.line),
        }
    }

    /// The replay becomes the state's progress.
    fn go_live(&mut self, state: &mut FollowState) {
        if let Some(replay) = self.replay.take() {
            state.progress = replay;
            state.bytes = self.replay_bytes;
            state.at = self.replay_at;
            state.partial = None;
            state.replay = None;
            state.last_output = std::time::Instant::now();
            self.caught_up = true;
        }
    }

    /// The read ended cleanly: a replay that read a stopped container's log to its end shows,
    /// and a line read only in part is held as such.
    pub(super) fn ended(&mut self, state: &mut FollowState, whole_log: bool) {
        let mut framer = std::mem::take(&mut self.framer);
        let mut raised = Vec::new();
        framer.finish(|piece| match piece {
            Piece::Start(pos) => self.start_line(state, pos),
            Piece::Bytes(bytes) => raised.extend(self.fold(state, bytes)),
            Piece::End => self.end_line(state),
        });
        // Warnings come from whole lines only; a partial one raises none yet.
        debug_assert!(raised.is_empty());
        if whole_log && self.replay.is_some() {
            if self.sink == Sink::Replay && self.open {
                let line = self.line;
                self.go_live(state);
                state.partial = Some(line);
            } else {
                self.go_live(state);
            }
            return;
        }
        if self.sink == Sink::State && self.open {
            state.partial = Some(self.line);
        }
    }

    /// Finishes this read (it is the whole log) and returns the warnings of its last line.
    pub(super) fn finishing(mut self, state: &mut FollowState) -> Vec<News> {
        let raised = match state.partial.take() {
            Some(line) => {
                state.at = state.at.max(line);
                state.progress.finish()
            }
            None => Vec::new(),
        };
        let mut news = self.report(state, raised);
        news.push(News::Output);
        news
    }

    fn report(&mut self, state: &mut FollowState, raised: Vec<ProgressWarning>) -> Vec<News> {
        raised
            .into_iter()
            .map(|warning| {
                state.reported += 1;
                News::Warning {
                    ordinal: state.reported,
                    warning,
                }
            })
            .collect()
    }
}
