//! NPU kernel DAGs with multi-level buffers (L1, UB, L0A/L0B/L0C) and pipes
//! (MTE1/2/3, FIXP, CUBE, VECTOR), in the format of the public 2025 NPU
//! intra-core scheduling benchmark: schedule for low peak residency,
//! allocate addresses with SPILL, time the pipes, check any solution.
//!
//! Owns: the benchmark's scheduler and search (a strategy over the shared
//! core), its victim choice, its own rules (`rules`: ids, spill numbering,
//! L0) and its conversion to a trace. Shared with the graph simulator: the
//! kernel IR is a graph front end's (`graph::kernel`), the offset allocator
//! is `sim::allocator`, pipe timing is `cost::pipes`, and residency,
//! overlap, capacity and use-while-spilled are checked by `trace::verify`
//! on the solution's trace. May import `graph`, `sim::allocator`, `cost`,
//! `trace`, `input` and `output`; only the front ends import it.

pub mod alloc;
pub mod bands;
pub mod check;
pub mod gen;
pub mod rules;
/// The kernel DAG itself is a graph front end's (`graph::kernel`).
pub use crate::graph::kernel as model;
pub mod peak;
pub mod schedule;
pub mod solve;
pub mod to_trace;

pub use model::{BufType, Kernel, Node, NodeKind, Pipe};

/// A complete solution: the schedule (node ids, spill ids included), the
/// first offset of every buffer, and the spills in schedule order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Solution {
    pub order: Vec<usize>,
    /// `(buf_id, offset)` at ALLOC.
    pub offsets: Vec<(u32, u64)>,
    /// `(buf_id, new_offset)` per spill, in the order of their ids.
    pub spills: Vec<(u32, u64)>,
}

/// The figures a solution is judged by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct Metrics {
    /// Peak of the running L1 + UB residency over the schedule (spills
    /// ignored, as the benchmark defines it).
    pub peak_residency: u64,
    pub extra_traffic: u64,
    pub total_cycles: u64,
    pub spill_count: usize,
}
