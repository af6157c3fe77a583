//! spillscope: make memory SPILL in neural-network graphs measurable.
//!
//! The pipeline runs one way: [`graph`] (IR + liveness) → [`sim`] (allocator,
//! spill policy) with [`cost`] (roofline, bus) → [`trace`] (the one data
//! model) → [`analysis`]. None of these modules know about terminals.

pub mod analysis;
pub mod cli;
pub mod cost;
pub mod error;
pub mod graph;
pub mod input;
pub mod npu;
pub mod report;
pub mod sim;
pub mod trace;
pub mod tui;
pub mod units;

pub use error::{Error, Result};
