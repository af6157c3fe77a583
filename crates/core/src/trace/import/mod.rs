//! Importing real runtime traces into the one data model: ONNX Runtime
//! profiles, PyTorch profiler traces, generic Chrome traces (including
//! spillscope's own export) and the spillscope JSONL event stream.
//!
//! Owns: the importers. May import `graph` (to link ops to a model's
//! tensors) and the trace model.

pub mod chrome;
pub mod executorch;
pub mod generic;
pub mod jsonl;
pub mod ort;
pub mod ort_link;
pub mod torch;
pub mod vela;

use super::Trace;
use crate::graph::Graph;
use crate::{Error, Result};
use std::path::Path;

/// The formats `import` understands: the library's one classification of
/// files (models among them, which `import` refuses with a hint).
pub use crate::input::{detect, Format};

/// Options shared by the importers.
#[derive(Debug, Clone, Default)]
pub struct ImportOptions {
    /// ORT: which run (1-based); default the last (steady state).
    pub run: Option<usize>,
    /// Link ops to this graph's tensors (ORT node names = ONNX node names).
    pub model: Option<std::sync::Arc<Graph>>,
    /// Refuse inputs with more events than this.
    pub max_events: Option<usize>,
    /// JSONL streams: hold at most about this many events (and ops); older
    /// ones fall out of the trace into running totals
    /// ([`crate::trace::window`]). `None`: hold them all (a live view
    /// defaults to [`crate::limits::LIVE_WINDOW_EVENTS`]).
    pub keep: Option<usize>,
    /// Spillscope traces: the binary cache to read them from and keep them
    /// in ([`crate::trace::store`]); `None` reads the JSON every time.
    pub store: Option<crate::trace::store::TraceStore>,
    /// ExecuTorch programs: arena 1's size (default: the program's).
    pub capacity: Option<u64>,
    /// ExecuTorch programs: time the plan's ops by this ETDump profile.
    pub etdump: Option<std::path::PathBuf>,
    /// ETDump profiles: the program whose plan gives them memory.
    pub program: Option<std::path::PathBuf>,
}

impl ImportOptions {
    pub fn max_events(&self) -> usize {
        self.max_events.unwrap_or(50_000_000)
    }
}

/// Imports `path` as `format` (or detected), returning the trace and warnings.
pub fn import(
    path: &Path,
    format: Option<Format>,
    opts: &ImportOptions,
) -> Result<(Trace, Vec<String>)> {
    crate::input::check_size(path)?;
    let (format, why) = match format {
        Some(f) => (f, None),
        None => crate::input::detect_why(path)?,
    };
    // A file read as a format its content suggested, that then does not
    // parse as one: say what was assumed and how to choose.
    let assumed = |e: Error| match (why, e) {
        (
            Some(w),
            Error::Parse {
                path,
                pos,
                format,
                detail,
            },
        ) => Error::Parse {
            path,
            pos,
            format,
            detail: format!("{detail} (read as {format} because {w}; --from FORMAT chooses)"),
        },
        (_, e) => e,
    };
    let (tr, notes) = import_as(path, format, opts).map_err(assumed)?;
    tr.check_ranges().map_err(|detail| Error::Trace {
        path: path.to_path_buf(),
        detail,
    })?;
    Ok((tr, notes))
}

fn import_as(path: &Path, format: Format, opts: &ImportOptions) -> Result<(Trace, Vec<String>)> {
    match format {
        Format::Spillscope => {
            let tr = match &opts.store {
                Some(store) => store.open(path)?.0,
                None => Trace::load(path)?,
            };
            let notes = tr.recomputed_note().into_iter().collect();
            Ok((tr, notes))
        }
        Format::Ort => ort::import(path, opts),
        Format::Torch => torch::import(path, opts),
        Format::Chrome => generic::import(path, opts),
        Format::Jsonl => jsonl::import(path, opts),
        Format::Vela => vela::import(path, opts),
        Format::Pte => executorch::import_program(path, opts),
        Format::Etdump => executorch::import_etdump(path, opts),
        Format::Onnx | Format::GraphJson | Format::Tflite => Err(Error::WrongInput {
            path: path.to_path_buf(),
            what: "a model, not a trace".into(),
            hint: "simulate it with `spillscope sim` or open it with `spillscope view`".into(),
        }),
        Format::Kernel => Err(Error::WrongInput {
            path: path.to_path_buf(),
            what: "an NPU kernel DAG, not a trace".into(),
            hint: "`spillscope npu import` turns it and a solution into the benchmark's trace; `spillscope sim CASE --hw npu-benchmark` simulates it as a graph".into(),
        }),
    }
}

/// Nanoseconds from microseconds (Chrome `ts`), relative to `t0` µs; a
/// time past [`crate::limits::MAX_NS`] stays there, for the import's range
/// check to refuse by name.
pub fn us_to_ns(ts: f64, t0: f64) -> u64 {
    crate::limits::ns_round((ts - t0) * 1000.0)
}
