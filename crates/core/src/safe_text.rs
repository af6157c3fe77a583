//! Text that cannot drive a terminal. Names come from other people's files
//! (models, traces, profiles): a tensor named `ESC[2J` clears the screen
//! it is printed on, `ESC]52;c;…BEL` writes the clipboard, `ESC]0;…` the
//! window title, and bidirectional overrides reorder what a reader sees.
//! Every human-readable output (tables, markdown, text reports, diffs,
//! notes, warnings, errors) passes through [`escape`] on its way out.
//!
//! One rule serves text and JSON alike: each unsafe character becomes the
//! six visible characters `\u001b` (its code point, four hex digits). In
//! text that shows what was there; in JSON, where the serializer already
//! escapes C0 controls, the remaining unsafe characters (C1 controls,
//! bidirectional controls) only occur inside strings, where `\u009b` is a
//! valid escape that reads back as the same character. Output stays valid
//! JSON and says the same thing.
//!
//! A foundation: imports nothing of the crate.

use std::borrow::Cow;
use std::fmt::Write as _;

/// Whether `c` must not reach a terminal as itself. `keep_lines` keeps
/// `\n` and `\t` (whole outputs); names keep neither.
pub fn is_unsafe(c: char, keep_lines: bool) -> bool {
    if keep_lines && (c == '\n' || c == '\t') {
        return false;
    }
    // C0, DEL and C1 controls; the bidirectional embeddings, overrides and
    // isolates; line and paragraph separators.
    c.is_control()
        || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
        || matches!(c, '\u{2028}' | '\u{2029}')
}

/// `text` with every unsafe character written as `\uXXXX`; newlines and
/// tabs kept. Borrowed when nothing needed escaping (the usual case).
pub fn escape(text: &str) -> Cow<'_, str> {
    escape_with(text, true)
}

/// A writer that passes text on as [`escape`] would have it, however the
/// text is split across writes: bytes wait until a character is whole,
/// then go out escaped in runs of 64 KiB. What it is given must be UTF-8
/// (anything else is an error at the end, not passed through).
pub struct Escaping<W: std::io::Write> {
    inner: W,
    pending: Vec<u8>,
}

/// Bytes an [`Escaping`] writer gathers before it escapes and passes them.
const ESCAPE_RUN: usize = 1 << 16;

impl<W: std::io::Write> Escaping<W> {
    pub fn new(inner: W) -> Escaping<W> {
        Escaping {
            inner,
            pending: Vec::with_capacity(ESCAPE_RUN + 4),
        }
    }

    /// Escapes and passes on every whole character gathered.
    fn pass(&mut self) -> std::io::Result<()> {
        let whole = match std::str::from_utf8(&self.pending) {
            Ok(s) => s.len(),
            Err(e) if e.error_len().is_none() => e.valid_up_to(),
            Err(e) => return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, e)),
        };
        let text = std::str::from_utf8(&self.pending[..whole])
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
        self.inner.write_all(escape(text).as_bytes())?;
        self.pending.drain(..whole);
        Ok(())
    }
}

impl<W: std::io::Write> std::io::Write for Escaping<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.pending.extend_from_slice(buf);
        if self.pending.len() >= ESCAPE_RUN {
            self.pass()?;
        }
        Ok(buf.len())
    }

    /// Passes everything on; a character cut short at the end is an error.
    fn flush(&mut self) -> std::io::Result<()> {
        self.pass()?;
        if !self.pending.is_empty() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "text ends inside a UTF-8 character",
            ));
        }
        self.inner.flush()
    }
}

/// A name (one line): every control escaped, newlines and tabs included.
pub fn escape_name(name: &str) -> Cow<'_, str> {
    escape_with(name, false)
}

fn escape_with(text: &str, keep_lines: bool) -> Cow<'_, str> {
    let Some(first) = text.find(|c| is_unsafe(c, keep_lines)) else {
        return Cow::Borrowed(text);
    };
    let mut out = String::with_capacity(text.len() + 16);
    out.push_str(&text[..first]);
    for c in text[first..].chars() {
        if is_unsafe(c, keep_lines) {
            // Every unsafe character is below U+10000.
            let _ = write!(out, "\\u{:04x}", c as u32);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// At most the first 80 characters of a value quoted in a message, with
/// its length when it was longer, controls escaped: an error about a
/// 10 MB value is one line, not 10 MB.
pub fn excerpt(value: &str) -> String {
    const KEEP: usize = 80;
    let n = value.chars().count();
    if n <= KEEP {
        return escape_name(value).into_owned();
    }
    let head: String = value.chars().take(KEEP).collect();
    format!("{}… ({n} characters)", escape_name(&head))
}

/// A message with every quoted value (`"…"` or `` `…` ``) longer than 80
/// characters cut to its first 80 and its length, and the whole held to
/// 2,000 characters: an error about a 10 MB name is still one short line.
pub fn cap_quoted(message: &str) -> String {
    const KEEP: usize = 80;
    const WHOLE: usize = 2000;
    let chars: Vec<char> = message.chars().collect();
    let mut out = String::with_capacity(message.len().min(WHOLE + 64));
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        out.push(c);
        i += 1;
        if c != '"' && c != '`' {
            continue;
        }
        // The value runs to the next unescaped closing quote (or the end).
        let start = i;
        let mut j = i;
        while j < chars.len() && !(chars[j] == c && chars[j - 1] != '\\') {
            j += 1;
        }
        let len = j - start;
        if len > KEEP {
            out.extend(&chars[start..start + KEEP]);
            out.push('…');
            if j < chars.len() {
                out.push(c);
            }
            out.push_str(&format!(" ({len} characters)"));
            i = (j + 1).min(chars.len());
        } else {
            out.extend(&chars[start..j.min(chars.len())]);
            if j < chars.len() {
                out.push(c);
            }
            i = j + 1;
        }
    }
    if out.chars().count() > WHOLE {
        let n = out.chars().count();
        out = out.chars().take(WHOLE).collect::<String>() + &format!("… ({n} characters)");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_escaped_in_pieces_is_text_escaped_whole() {
        use std::io::Write;
        let text = "a\u{1b}[31m\u{202e}é\u{2028}\n\t\u{7f}\u{85}日本\u{2066}z\u{0}";
        let want = escape(text).into_owned();
        // Split at every byte, characters cut in two included.
        for cut in 0..=text.len() {
            let mut out = Vec::new();
            let mut w = Escaping::new(&mut out);
            w.write_all(&text.as_bytes()[..cut]).unwrap();
            w.write_all(&text.as_bytes()[cut..]).unwrap();
            w.flush().unwrap();
            assert_eq!(String::from_utf8(out).unwrap(), want, "cut at {cut}");
        }
        // Past a run's worth, a byte at a time.
        let long: String = text.repeat(ESCAPE_RUN / text.len() * 3);
        let mut out = Vec::new();
        let mut w = Escaping::new(&mut out);
        for b in long.as_bytes() {
            w.write_all(std::slice::from_ref(b)).unwrap();
        }
        w.flush().unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), escape(&long));
        // What is not UTF-8 is refused, not passed on.
        let mut w = Escaping::new(Vec::new());
        w.write_all(b"ok \xff").unwrap();
        assert!(w.flush().is_err());
        let mut w = Escaping::new(Vec::new());
        w.write_all("日".as_bytes().split_at(2).0).unwrap();
        assert!(w.flush().is_err());
    }

    #[test]
    fn controls_become_visible_and_safe_text_is_borrowed() {
        assert!(matches!(escape("conv1 / Relu\n"), Cow::Borrowed(_)));
        assert_eq!(escape("a\u{1b}[2Jb\n"), "a\\u001b[2Jb\n");
        assert_eq!(
            escape("\u{1b}]52;c;ZXZpbA==\u{7}"),
            "\\u001b]52;c;ZXZpbA==\\u0007"
        );
        assert_eq!(
            escape("x\u{9b}31m\u{202e}y\r"),
            "x\\u009b31m\\u202ey\\u000d"
        );
        assert_eq!(escape_name("a\nb\tc"), "a\\u000ab\\u0009c");
    }

    #[test]
    fn escaped_json_reads_back_the_same_value() {
        let name = "t\u{9b}2J\u{202e}\u{1b}]0;x\u{7}";
        let json = serde_json::to_string(&serde_json::json!({ "name": name })).unwrap();
        let safe = escape(&json);
        assert!(!safe.chars().any(|c| is_unsafe(c, true)));
        let back: serde_json::Value = serde_json::from_str(&safe).unwrap();
        assert_eq!(back["name"], name);
    }

    #[test]
    fn long_quoted_values_in_messages_are_capped() {
        let v = "y".repeat(10_000_000);
        let m = format!("graph: tensor \"{v}\": unknown dtype `{v}`, expected one of `f32`");
        let c = cap_quoted(&m);
        assert!(c.len() < 400, "{}", c.len());
        assert!(c.contains("(10000000 characters)"), "{c}");
        assert!(c.ends_with("expected one of `f32`"), "{c}");
        assert_eq!(cap_quoted("short \"a\" `b`"), "short \"a\" `b`");
        assert!(cap_quoted(&"z".repeat(5000)).chars().count() < 2100);
    }

    #[test]
    fn excerpts_are_capped() {
        let long = "x".repeat(10_000_000);
        let e = excerpt(&long);
        assert!(e.len() < 120, "{e}");
        assert!(e.ends_with("(10000000 characters)"));
        assert_eq!(excerpt("ab\u{1b}"), "ab\\u001b");
    }
}
