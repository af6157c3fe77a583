//! Importing real runtime traces into the one data model: ONNX Runtime
//! profiles, PyTorch profiler traces, generic Chrome traces (including
//! spillscope's own export) and the spillscope JSONL event stream.

pub mod chrome;
pub mod generic;
pub mod jsonl;
pub mod ort;
pub mod torch;

use super::Trace;
use crate::graph::Graph;
use crate::{Error, Result};
use std::io::Read;
use std::path::Path;

/// The formats `import` understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// A spillscope.trace/1 file (no import needed).
    Spillscope,
    Ort,
    Torch,
    Chrome,
    Jsonl,
}

impl std::str::FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        Ok(match s {
            "spillscope" | "trace" => Format::Spillscope,
            "ort" | "onnxruntime" => Format::Ort,
            "torch" | "pytorch" => Format::Torch,
            "chrome" | "perfetto" => Format::Chrome,
            "jsonl" => Format::Jsonl,
            _ => {
                return Err(format!(
                    "unknown format {s:?} (use ort, torch, chrome, jsonl)"
                ))
            }
        })
    }
}

/// Options shared by the importers.
#[derive(Debug, Clone, Default)]
pub struct ImportOptions {
    /// ORT: which run (1-based); default the last (steady state).
    pub run: Option<usize>,
    /// Link ops to this graph's tensors (ORT node names = ONNX node names).
    pub model: Option<Graph>,
    /// Refuse inputs with more events than this.
    pub max_events: Option<usize>,
}

impl ImportOptions {
    pub fn max_events(&self) -> usize {
        self.max_events.unwrap_or(50_000_000)
    }
}

/// Guesses the format from the first bytes of the file.
pub fn detect(path: &Path) -> Result<Format> {
    let mut head = vec![0u8; 64 * 1024];
    let n = std::fs::File::open(path)
        .and_then(|mut f| f.read(&mut head))
        .map_err(|e| Error::io(path, e))?;
    let text = String::from_utf8_lossy(&head[..n]);
    let trimmed = text.trim_start();
    if trimmed.starts_with('{') {
        if text.contains("\"traceEvents\"") {
            if text.contains("\"[memory]\"")
                || text.contains("\"cpu_op\"")
                || text.contains("profile_memory")
            {
                return Ok(Format::Torch);
            }
            return Ok(Format::Chrome);
        }
        if text.contains("spillscope.trace/") {
            return Ok(Format::Spillscope);
        }
        // JSONL: the first line is a whole object with a `kind`.
        let first_line = trimmed.lines().next().unwrap_or("");
        if let Ok(serde_json::Value::Object(m)) =
            serde_json::from_str::<serde_json::Value>(first_line)
        {
            if m.contains_key("kind") {
                return Ok(Format::Jsonl);
            }
        }
        return Ok(Format::Chrome);
    }
    if trimmed.starts_with('[') {
        if text.contains("_kernel_time")
            || text.contains("\"model_run\"")
            || text.contains("\"SequentialExecutor")
        {
            return Ok(Format::Ort);
        }
        return Ok(Format::Chrome);
    }
    Err(Error::parse(
        path,
        "trace",
        "not JSON, JSONL or a Chrome trace (use --from to say which)",
    ))
}

/// Imports `path` as `format` (or detected), returning the trace and warnings.
pub fn import(
    path: &Path,
    format: Option<Format>,
    opts: &ImportOptions,
) -> Result<(Trace, Vec<String>)> {
    crate::input::check_size(path)?;
    let format = match format {
        Some(f) => f,
        None => detect(path)?,
    };
    match format {
        Format::Spillscope => Ok((Trace::load(path)?, Vec::new())),
        Format::Ort => ort::import(path, opts),
        Format::Torch => torch::import(path, opts),
        Format::Chrome => generic::import(path, opts),
        Format::Jsonl => jsonl::import(path, opts),
    }
}

/// Nanoseconds from microseconds (Chrome `ts`), relative to `t0` µs.
pub fn us_to_ns(ts: f64, t0: f64) -> u64 {
    ((ts - t0) * 1000.0).round().max(0.0) as u64
}
