//! Everything the binary prints goes through here: standard output,
//! warnings and notes on standard error, the error line. Each passes
//! through [`spillscope::safe_text::escape`] (names from models cannot drive
//! the terminal; JSON stays valid), and a failed write to standard output
//! is an error, not a silent loss: only a closed pipe (`| head`) is quiet,
//! as it is for coreutils.

use spillscope::safe_text::escape;
use std::io::Write;

/// Writes `text` to standard output, escaped. A closed pipe is `Ok`.
pub fn print(text: &str) -> spillscope::Result<()> {
    let mut out = std::io::stdout().lock();
    match out
        .write_all(escape(text).as_bytes())
        .and_then(|_| out.flush())
    {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(spillscope::Error::io("standard output", e))
        }
        _ => Ok(()),
    }
}

/// Text on standard error (notes after a table), escaped. Nothing to do
/// when standard error itself is gone.
pub fn note(text: &str) {
    let _ = std::io::stderr().lock().write_all(escape(text).as_bytes());
}

/// One `spillscope: warning: …` line.
pub fn warn(text: &str) {
    note(&format!("spillscope: warning: {text}\n"));
}

/// Each warning, the first 20 of them, then how many more.
pub fn warn_all(warnings: &[String]) {
    for w in warnings.iter().take(20) {
        warn(w);
    }
    if warnings.len() > 20 {
        warn(&format!("... and {} more", warnings.len() - 20));
    }
}

/// The one line of a failed command.
pub fn error(text: &str) {
    // One line: a message with a newline in it would not be.
    let line = text.replace('\n', " ");
    note(&format!("spillscope: error: {line}\n"));
}

/// Whether `e` only says the reader of standard output went away.
pub fn is_closed_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
