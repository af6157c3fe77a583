//! spillscope: make memory SPILL in neural-network graphs measurable.
//!
//! The pipeline runs one way: [`graph`] (IR + liveness) → [`sim`] (allocator,
//! spill policy) with [`cost`] (roofline, bus) → [`trace`] (the one data
//! model) → [`analysis`] → [`report`]. None of these modules know about
//! terminals or flags: the front ends (the explorer, `spillscope-explorer`,
//! and the command line, `spillscope-cli`) are crates of their own that
//! depend on this one, so a terminal or flag in here is a compile error.
//! Features: `onnx` and `tflite`, the model front ends (on by default).

pub mod analysis;
pub mod cancel;
pub(crate) mod cols;
pub mod cost;
pub mod error;
pub mod graph;
pub mod input;
pub mod limits;
pub mod names;
pub mod npu;
pub mod output;
pub(crate) mod plain;
pub mod report;
pub mod run;
pub mod safe_text;
pub mod session;
pub mod sim;
pub mod trace;
pub mod units;

pub use error::{Error, Result};
