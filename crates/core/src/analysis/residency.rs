//! What was on chip while each op ran, from a trace's events alone. A
//! simulated trace carries a `live_bytes` counter per step; an instrumented
//! one (a runtime's JSONL stream, a profiler import) has only its events, and
//! without this its overview chart would be blank.

use crate::trace::Trace;

/// Most bytes resident in `pool` at any moment of each op's span
/// `[start_ns, end_ns]` (indexed by op id), counting what was already there
/// when the op started. `alloc`, `reload` and `recompute` add a tensor's
/// bytes, `free` and `evict` remove them (never below zero, should a stream
/// begin mid-run). O((events + ops) log events).
pub fn resident_by_step(trace: &Trace, pool: &str) -> Vec<u64> {
    // Resident bytes after each of the pool's events, in time order.
    let events = resident_over_time(trace, pool);
    let after: Vec<u64> = events.iter().map(|s| s.1).collect();
    let tree = super::range_max::RangeMax::build(&after);
    trace
        .ops
        .iter()
        .map(|op| {
            let i0 = events.partition_point(|e| e.0 < op.start_ns);
            let i1 = events.partition_point(|e| e.0 <= op.end_ns.max(op.start_ns));
            let before = i0.checked_sub(1).map_or(0, |i| after[i]);
            before.max(tree.max(&after, i0, i1).unwrap_or(0))
        })
        .collect()
}

/// Bytes resident in `pool` over time: one `(t_ns, bytes)` sample per
/// event of that pool, counted as [`resident_by_step`] counts them (the
/// step function a per-pool timeline lane draws). O(events log events).
pub fn resident_over_time(trace: &Trace, pool: &str) -> Vec<(u64, u64)> {
    // In-place outputs count the bytes they share with an operand once.
    let deltas = crate::trace::residency::deltas(&trace.events, &trace.ops, trace.tensors.len());
    let mut events: Vec<(u64, i128)> = trace
        .events
        .iter()
        .zip(deltas)
        .filter(|(e, _)| e.pool == pool)
        .map(|(e, d)| (e.t_ns, d))
        .collect();
    // Traces are in time order by contract; a stable sort keeps same-time
    // events in stream order should one not be.
    if !events.is_sorted_by_key(|e| e.0) {
        events.sort_by_key(|e| e.0);
    }
    crate::trace::residency::walk(events).collect()
}

/// [`resident_by_step`] for the trace's first pool (the one whose capacity
/// the views and the report draw), or `None` for a trace without pools.
pub fn first_pool_resident_by_step(trace: &Trace) -> Option<Vec<u64>> {
    trace
        .pools
        .first()
        .map(|p| resident_by_step(trace, &p.name))
}
