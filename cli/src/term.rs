//! The terminal as the one way out: everything `kubectl mcp` prints goes through here, and text
//! that came from a tool, a server or the cluster is printed inert. An escape sequence in a
//! tool's output could otherwise clear the screen, move the cursor over the question being
//! answered, hide text, or show one URL while linking another (OSC 8); bidi controls could
//! reorder what is read (https://trojansource.codes/). See docs/SECURITY.md, "`kubectl mcp`".

use std::borrow::Cow;
use std::fmt::Write as _;
use std::io::Write as _;

/// Whether `c` is printed as an escape: the C0 controls, DEL, the C1 controls, and the
/// Unicode controls of text direction and line layout (U+061C, U+200E, U+200F, U+2028,
/// U+2029, U+202A–U+202E, U+2066–U+2069).
fn is_active(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{61c}'
                | '\u{200e}'
                | '\u{200f}'
                | '\u{2028}'..='\u{202e}'
                | '\u{2066}'..='\u{2069}'
        )
}

/// `text` with every control character written as its Rust escape, `\u{1b}` for ESC,
/// `\u{202e}` for RIGHT-TO-LEFT OVERRIDE: what was sent stays readable and nothing acts on
/// the terminal. `\n` and `\t` are kept, for text meant to span lines; a backslash is kept
/// as it is, so the escaped form is for reading, not for parsing back.
pub fn inert(text: &str) -> Cow<'_, str> {
    escape(text, |c| c == '\n' || c == '\t')
}

/// [`inert`] for text meant to be one line (a name, a status message, an error): `\n` is
/// escaped too, so no line can pass for one the CLI printed itself.
pub fn inert_line(text: &str) -> Cow<'_, str> {
    escape(text, |c| c == '\t')
}

fn escape(text: &str, kept: impl Fn(char) -> bool) -> Cow<'_, str> {
    if !text.chars().any(|c| is_active(c) && !kept(c)) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if is_active(c) && !kept(c) {
            let _ = write!(out, "{}", c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Prints `text` inert on standard output, then a newline.
pub fn say(text: &str) {
    println!("{}", inert(text));
}

/// Prints `text` inert on standard error, then a newline.
pub fn warn(text: &str) {
    eprintln!("{}", inert(text));
}

/// Prints `text` inert on standard output without a newline (a question), and flushes it.
pub fn ask(text: &str) {
    print!("{}", inert(text));
    let _ = std::io::stdout().flush();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_sequences_and_bidi_controls_are_printed_as_visible_escapes() {
        let link = "\u{1b}]8;;https://evil.example/\u{1b}\\https://good.example/\u{1b}]8;;\u{7}";
        assert_eq!(
            inert(link),
            "\\u{1b}]8;;https://evil.example/\\u{1b}\\https://good.example/\\u{1b}]8;;\\u{7}"
        );
        assert_eq!(inert("\u{1b}[2J\u{1b}[1;1H"), "\\u{1b}[2J\\u{1b}[1;1H");
        assert_eq!(inert("abc\u{202e}fed"), "abc\\u{202e}fed");
        assert_eq!(
            inert("\r\u{0}\u{7f}\u{9b}31m\u{85}\u{8}"),
            "\\u{d}\\u{0}\\u{7f}\\u{9b}31m\\u{85}\\u{8}"
        );
        for bidi in [
            '\u{61c}', '\u{200e}', '\u{200f}', '\u{2028}', '\u{2029}', '\u{202a}', '\u{202b}',
            '\u{202c}', '\u{202d}', '\u{202e}', '\u{2066}', '\u{2067}', '\u{2068}', '\u{2069}',
        ] {
            let shown = inert_line(&bidi.to_string()).into_owned();
            assert_eq!(shown, bidi.escape_unicode().to_string());
        }
    }

    #[test]
    fn newlines_are_kept_only_where_text_spans_lines() {
        assert_eq!(inert("a\n\tb"), "a\n\tb");
        assert_eq!(inert_line("a\n\tb"), "a\\u{a}\tb");
    }

    #[test]
    fn printable_text_is_unchanged_and_not_copied() {
        for text in [
            "",
            "Deleted r.txt",
            "naïve 漢字 🙂 \\u{1b}",
            "working: 3 of 4 s",
        ] {
            assert!(matches!(inert(text), Cow::Borrowed(t) if t == text));
            assert!(matches!(inert_line(text), Cow::Borrowed(t) if t == text));
        }
    }

    #[test]
    fn escaping_twice_changes_nothing() {
        let once = inert("\u{1b}[2J\u{202e}x").into_owned();
        assert_eq!(inert(&once), once);
    }
}
