//! Typed errors of the library. Each says which file, node or tensor is at
//! fault so the binary can print one clear line.
//!
//! A foundation: imports only `units`.

use std::path::PathBuf;

/// Everything the library can refuse, with the culprit named.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}{}: not a valid {format}: {detail}", path.display(), Pos::show(pos))]
    Parse {
        path: PathBuf,
        /// Where in the file, when the parser says.
        pos: Option<Pos>,
        format: &'static str,
        detail: String,
    },
    #[error("graph: node {node:?}: {detail}")]
    Node { node: String, detail: String },
    #[error("graph: tensor {tensor:?}: {detail}")]
    Tensor { tensor: String, detail: String },
    #[error("graph: cycle through node {node:?}")]
    Cycle { node: String },
    #[error("hardware: {0}")]
    Hardware(String),
    #[error("config: {0}")]
    Config(String),
    /// An output that cannot be written as asked (it exists, it is a
    /// dangling link, a FIFO nobody reads), its path in the message.
    #[error("{0}")]
    Output(String),
    /// A file of the wrong kind for the command (a trace where a model is
    /// expected, or the reverse), with the command that reads it.
    #[error("{}: {what} ({hint})", path.display())]
    WrongInput {
        path: PathBuf,
        what: String,
        hint: String,
    },
    #[error("{0}")]
    Quantity(#[from] crate::units::QuantityError),
    #[error("trace {path}: {detail}")]
    Trace { path: PathBuf, detail: String },
    #[error("{0}")]
    Unsupported(String),
    /// An input that would not fit the memory budget
    /// ([`crate::input::check_budget`]).
    #[error("{}: {detail}", path.display())]
    TooLarge { path: PathBuf, detail: String },
    /// Stale work stopped because its input changed ([`crate::cancel`]):
    /// never shown to a user, whose newer request is running.
    #[error("cancelled: a newer request replaced this one")]
    Cancelled,
}

impl Error {
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }
    pub fn parse(path: impl Into<PathBuf>, format: &'static str, detail: impl ToString) -> Self {
        Error::Parse {
            path: path.into(),
            pos: None,
            format,
            detail: detail.to_string(),
        }
    }

    /// A parse error at a line and column of the file.
    pub fn parse_at(
        path: impl Into<PathBuf>,
        pos: Option<Pos>,
        format: &'static str,
        detail: impl ToString,
    ) -> Self {
        Error::Parse {
            path: path.into(),
            pos,
            format,
            detail: detail.to_string(),
        }
    }

    /// A TOML file's parse error, at the line and column its span starts
    /// (`text` is the file's contents).
    pub fn toml(
        path: impl Into<PathBuf>,
        format: &'static str,
        text: &str,
        e: &toml::de::Error,
    ) -> Self {
        let pos = e.span().map(|s| Pos::of_byte(text.as_bytes(), s.start));
        Error::parse_at(path, pos, format, e.message().trim())
    }

    /// A JSON file's parse error, at its line and column.
    pub fn json(path: impl Into<PathBuf>, format: &'static str, e: &serde_json::Error) -> Self {
        let pos = (e.line() > 0).then(|| Pos {
            line: e.line(),
            column: e.column(),
        });
        // serde_json appends " at line L column C": the position leads instead.
        let msg = e.to_string();
        let msg = match msg.rfind(" at line ") {
            Some(i) if pos.is_some() => msg[..i].to_string(),
            _ => msg,
        };
        Error::parse_at(path, pos, format, msg)
    }
}

/// A position in a text file, 1-based, as editors and compilers print it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pos {
    pub line: usize,
    pub column: usize,
}

impl Pos {
    /// The line and column of byte `at` of `text`.
    pub fn of_byte(text: &[u8], at: usize) -> Pos {
        let at = at.min(text.len());
        let before = &text[..at];
        let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
        let line_start = before
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1);
        let column = String::from_utf8_lossy(&before[line_start..])
            .chars()
            .count()
            + 1;
        Pos { line, column }
    }

    /// The byte of `text` at this position (its end when past it).
    pub fn byte_in(self, text: &[u8]) -> usize {
        let mut line = 1;
        let mut start = 0;
        for (i, &b) in text.iter().enumerate() {
            if line == self.line {
                break;
            }
            if b == b'\n' {
                line += 1;
                start = i + 1;
            }
        }
        (start + self.column.saturating_sub(1)).min(text.len())
    }

    /// Where `key = ...` first appears in a TOML text (for errors found
    /// after parsing, such as an unknown key of a merged table).
    pub fn of_key(text: &str, key: &str) -> Option<Pos> {
        for (i, line) in text.lines().enumerate() {
            let trimmed = line.trim_start();
            let rest = trimmed
                .strip_prefix(key)
                .or_else(|| trimmed.strip_prefix(&format!("\"{key}\"")));
            if rest.is_some_and(|r| r.trim_start().starts_with('=')) {
                return Some(Pos {
                    line: i + 1,
                    column: line.len() - trimmed.len() + 1,
                });
            }
        }
        None
    }

    /// `:LINE:COL` for messages (empty without a position).
    fn show(pos: &Option<Pos>) -> String {
        pos.map(|p| format!(":{}:{}", p.line, p.column))
            .unwrap_or_default()
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
