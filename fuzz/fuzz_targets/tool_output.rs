//! The operator's reading of a tool container's stdout (the tool contract, operator/src/contract):
//! the fuzz input is the log byte stream, fed in chunks whose sizes come from its first byte,
//! through the line splitter, the message parser and the per-task progress, with small bounds so
//! cut lines, oversized results and head/tail output trimming are all reached.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_task_operator::contract::{
    LineSplitter, MAX_LINE_BYTES, Progress, RawLine, parse_line, parse_signed_line,
};

fuzz_target!(|data: &[u8]| {
    let Some((&chunking, stream)) = data.split_first() else {
        return;
    };
    let chunk = usize::from(chunking % 64) + 1;

    // Small bounds: every limit is reachable with a short input.
    let mut small = Progress::with_bounds(256, 64, 128);
    // Production bounds: what the operator really runs with.
    let mut real = Progress::default();
    // A tool with messageNonce: only lines carrying the nonce are messages.
    let mut signed = Progress::with_bounds(256, 64, 128).with_nonce(Some("n0nce".to_owned()));
    for piece in stream.chunks(chunk) {
        let _ = small.push_bytes(piece);
        let _ = real.push_bytes(piece);
        let _ = signed.push_bytes(piece);
    }
    let _ = small.finish();
    let _ = real.finish();
    let _ = signed.finish();
    for progress in [&small, &real, &signed] {
        let _ = progress.output().text();
        let _ = progress.output().tail_text();
        let _ = progress.outstanding_input(|key| key.len() % 2 == 0);
        let _ = progress.terminal();
    }

    // The whole input as one line, as the parser sees a line the splitter kept.
    let whole = RawLine {
        bytes: stream.to_vec(),
        len: stream.len(),
        unterminated: false,
    };
    let _ = parse_line(&whole, MAX_LINE_BYTES);
    let _ = parse_signed_line(&whole, MAX_LINE_BYTES, Some("n0nce"));
    let mut splitter = LineSplitter::new(usize::from(chunking));
    for line in splitter.push(stream).into_iter().chain(splitter.finish()) {
        assert!(
            line.bytes.len() <= usize::from(chunking),
            "a kept line exceeds its bound"
        );
        assert!(
            line.len >= line.bytes.len(),
            "a line is shorter than what was kept of it"
        );
        let _ = parse_line(&line, usize::from(chunking));
    }
});
