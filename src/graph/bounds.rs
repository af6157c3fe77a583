//! Valid lower bounds on spill traffic, so every policy's result is shown
//! beside what no policy can beat.
//!
//! * Per-op working set: while op `i` runs, its activation operands (inputs
//!   and outputs, weights excluded) must be on chip unless streamed; at least
//!   `ws_i - capacity` bytes of them cross the DRAM bus *during op i*. These
//!   transfers are disjoint across ops, so `sum_i max(0, ws_i - C)` is valid.
//! * Live excess: at step `i`, at least `live_i - C` bytes of live tensors are
//!   off chip; each such byte crosses the bus at least once (an activation
//!   off chip was written out; a graph input off chip is read back for its
//!   use at or after `i`). A graph input nobody reads never has to move, so
//!   it is left out of `live_i` here. So `max_i max(0, live_i - C)` is valid.
//!
//! The bound reported is the larger of the two. Raw (unaligned) sizes are
//! used, which only lowers it, so it stays valid under any alignment.

use super::{Graph, Liveness, TensorKind};

/// Per-op activation working set in bytes (distinct inputs and outputs).
pub fn working_sets(g: &Graph) -> Vec<u64> {
    (0..g.ops.len())
        .map(|i| {
            g.operands(i)
                .into_iter()
                .filter(|&t| g.tensors[t].kind != TensorKind::Weight)
                .map(|t| g.tensors[t].bytes)
                .sum()
        })
        .collect()
}

/// `sum_i max(0, ws_i - C)`.
pub fn working_set_bound(g: &Graph, capacity: u64) -> u64 {
    working_sets(g)
        .iter()
        .map(|&w| w.saturating_sub(capacity))
        .sum()
}

/// `max_i max(0, live_i - C)`, with unread graph inputs left out of `live_i`.
pub fn live_excess_bound(g: &Graph, live: &Liveness, capacity: u64) -> u64 {
    let mut profile = live.live_bytes.clone();
    for t in &g.tensors {
        if t.kind == TensorKind::Input && t.consumers.is_empty() {
            if let Some(iv) = live.intervals[t.id] {
                for bytes in &mut profile[iv.start..=iv.end] {
                    *bytes -= t.bytes;
                }
            }
        }
    }
    profile
        .iter()
        .map(|&l| l.saturating_sub(capacity))
        .max()
        .unwrap_or(0)
}

/// The reported lower bound on spill traffic at `capacity`.
pub fn lower_bound_traffic(g: &Graph, capacity: u64) -> u64 {
    let live = Liveness::compute(g);
    working_set_bound(g, capacity).max(live_excess_bound(g, &live, capacity))
}
