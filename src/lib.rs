//! spillscope: make memory SPILL in neural-network graphs measurable.
//!
//! The pipeline runs one way: [`graph`] (IR + liveness) → [`sim`] (allocator,
//! spill policy) with [`cost`] (roofline, bus) → [`trace`] (the one data
//! model) → [`analysis`] → [`report`]. None of these modules know about
//! terminals or flags; the front ends (`tui`, the explorer, and `cli`, the
//! command line) are behind the default-on features of the same names, so
//! `default-features = false` gives a library with no terminal stack.

pub mod analysis;
#[cfg(feature = "cli")]
pub mod cli;
pub mod cost;
pub mod error;
pub mod graph;
pub mod input;
pub mod limits;
pub mod names;
pub mod npu;
pub mod output;
pub mod report;
pub mod run;
pub mod sim;
pub mod trace;
#[cfg(feature = "tui")]
pub mod tui;
pub mod units;

pub use error::{Error, Result};
