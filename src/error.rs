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
    #[error("{path}: not a valid {format}: {detail}")]
    Parse {
        path: PathBuf,
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
    #[error("{0}")]
    Quantity(#[from] crate::units::QuantityError),
    #[error("trace {path}: {detail}")]
    Trace { path: PathBuf, detail: String },
    #[error("{0}")]
    Unsupported(String),
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
            format,
            detail: detail.to_string(),
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
