//! Valid lower bounds on spill traffic (`traffic_bytes`: evicted out +
//! reloaded + streamed in + streamed out, docs/trace-format.md), so every
//! policy's result is shown beside what no policy can beat.
//!
//! Only activations (and graph outputs) count: a graph input can always be
//! read from DRAM where it is used, which is a compulsory load, not spill,
//! and weights are not spill either. So neither appears below, which only
//! lowers the bounds.
//!
//! * Per-op working set: while op `i` runs, its activation operands must be
//!   on chip unless streamed; at least `ws_i - capacity` bytes of them are
//!   streamed in or out *during op i* (an input not resident is in DRAM
//!   only because it was spilled). These streams are disjoint across ops, so
//!   `sum_i max(0, ws_i - C)` is valid.
//! * Live excess: at step `i`, at least `live_i - C` bytes of live
//!   activations are off chip, and each was written to DRAM (evicted with a
//!   write-back or streamed out) at least once. So `max_i max(0, live_i - C)`
//!   is valid.
//!
//! The bound reported is the larger of the two. Raw (unaligned) sizes are
//! used, which only lowers it, so it stays valid under any alignment.

use super::{Graph, Liveness, TensorKind};

/// Whether a tensor's bytes can be spill traffic.
fn spillable(kind: TensorKind) -> bool {
    matches!(kind, TensorKind::Activation | TensorKind::Output)
}

/// Per-op activation working set in bytes (distinct inputs and outputs).
pub fn working_sets(g: &Graph) -> Vec<u64> {
    (0..g.ops.len())
        .map(|i| {
            g.operands(i)
                .into_iter()
                .filter(|&t| spillable(g.tensors.kind(t)))
                .map(|t| g.tensors.bytes(t))
                .sum()
        })
        .collect()
}

/// `sum_i max(0, ws_i - C)`. Each term is within the graph's 2^53 bytes;
/// the sum saturates rather than wraps, and cannot saturate beside a run
/// that passed its own range check (the bound is below that run's traffic).
pub fn working_set_bound(g: &Graph, capacity: u64) -> u64 {
    working_sets(g)
        .iter()
        .fold(0u64, |a, &w| a.saturating_add(w.saturating_sub(capacity)))
}

/// `max_i max(0, live_i - C)`, graph inputs left out of `live_i`.
pub fn live_excess_bound(g: &Graph, live: &Liveness, capacity: u64) -> u64 {
    let mut profile = live.live_bytes.clone();
    for t in &g.tensors {
        if t.kind == TensorKind::Input {
            if let Some(iv) = live.intervals.get(t.id) {
                for bytes in &mut profile[iv.start..=iv.end] {
                    *bytes = bytes.saturating_sub(t.bytes);
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

/// [`lower_bound_traffic`] for tensors split over several pools
/// (`pool_of[t]` indexes `capacities`). Each pool's working-set excess is
/// streamed bytes of its own tensors, so the excesses add up across pools;
/// each pool's live excess is its own tensors written to DRAM, disjoint
/// from any other pool's, so the per-pool live bounds add up too. One
/// pool gives exactly [`lower_bound_traffic`].
pub fn lower_bound_traffic_pools(g: &Graph, pool_of: &[usize], capacities: &[u64]) -> u64 {
    lower_bound_traffic_pools_live(g, &Liveness::compute(g), pool_of, capacities)
}

/// [`lower_bound_traffic_pools`] with `g`'s liveness already computed (a
/// simulation holds it: a second copy was 32 MB at 10^6 ops).
pub fn lower_bound_traffic_pools_live(
    g: &Graph,
    live: &Liveness,
    pool_of: &[usize],
    capacities: &[u64],
) -> u64 {
    if capacities.len() == 1 {
        return working_set_bound(g, capacities[0]).max(live_excess_bound(g, live, capacities[0]));
    }
    let n = g.ops.len();
    let mut ws = 0u64;
    let mut live_bound = 0u64;
    for (p, &cap) in capacities.iter().enumerate() {
        let mine = |t: usize| pool_of.get(t) == Some(&p);
        for i in 0..n {
            let w: u64 = g
                .operands(i)
                .into_iter()
                .filter(|&t| mine(t) && spillable(g.tensors.kind(t)))
                .map(|t| g.tensors.bytes(t))
                .sum();
            ws = ws.saturating_add(w.saturating_sub(cap));
        }
        // This pool's live bytes per step (graph inputs left out, as in
        // `live_excess_bound`), by a difference array over the intervals.
        let mut delta = vec![0i128; n + 1];
        for t in g
            .tensors
            .iter()
            .filter(|t| mine(t.id) && t.kind != TensorKind::Input)
        {
            if let Some(iv) = live.intervals.get(t.id) {
                delta[iv.start] += i128::from(t.bytes);
                delta[iv.end + 1] -= i128::from(t.bytes);
            }
        }
        let mut cur = 0i128;
        let mut worst = 0u64;
        for d in &delta[..n] {
            cur += d;
            worst = worst.max((cur.max(0) as u64).saturating_sub(cap));
        }
        live_bound = live_bound.saturating_add(worst);
    }
    ws.max(live_bound)
}

/// The per-op lower bound on spill traffic at `capacity`.
pub fn lower_bound_traffic(g: &Graph, capacity: u64) -> u64 {
    let live = Liveness::compute(g);
    working_set_bound(g, capacity).max(live_excess_bound(g, &live, capacity))
}
