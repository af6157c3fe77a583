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
    // One line, and a short one: a message with a newline in it would not
    // be, nor one that quotes a 10 MB value whole.
    let line = spillscope::safe_text::cap_quoted(&text.replace('\n', " "));
    note(&format!("spillscope: error: {line}\n"));
}

/// Whether `e` only says the reader of standard output went away.
pub fn is_closed_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// On SIGINT, SIGTERM or SIGHUP: the temporary file of a write in progress
/// is removed, then the process exits as a signal would end it (128 + the
/// signal). Not for the explorer, which restores the terminal on the same
/// signals itself.
pub fn clean_up_on_signals() {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) else {
        return;
    };
    std::thread::spawn(move || {
        if let Some(sig) = signals.forever().next() {
            spillscope::output::remove_pending();
            std::process::exit(128 + sig);
        }
    });
}

/// Names the temporary files killed runs left beside this run's outputs.
pub fn warn_stale() {
    for p in spillscope::output::take_stale() {
        warn(&format!(
            "{} was left by an interrupted run (its process is gone); remove it",
            p.display()
        ));
    }
}
