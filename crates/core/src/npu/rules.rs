//! The benchmark's own rules, checked on top of the trace contract
//! (`trace::verify` checks residency, overlap, capacity and use while
//! spilled for every trace; these are what only the benchmark asks): every
//! node scheduled once after its predecessors, spill ids numbered in
//! schedule order with each SPILL_IN after its SPILL_OUT, one offset per
//! buffer, L0 buffers never spilled and one L0 buffer per L0 type at a time.

use super::model::{Kernel, NodeKind};
use super::Solution;
use crate::trace::verify::Violation;

/// Schedule positions of every id (`usize::MAX` for none), or the first
/// broken rule among: unknown id, duplicate, missing, edge order.
fn positions(k: &Kernel, sol: &Solution) -> Result<Vec<usize>, Violation> {
    let n = k.len();
    let total = n + 2 * sol.spills.len();
    let mut pos = vec![usize::MAX; total];
    for (p, &i) in sol.order.iter().enumerate() {
        if i >= total {
            return Err(Violation::new(
                "unknown-id",
                format!(
                    "schedule line {}: node {i} does not exist (case has {n} nodes and {} spills)",
                    p + 1,
                    sol.spills.len()
                ),
            ));
        }
        if pos[i] != usize::MAX {
            let d = format!(
                "node {i} is scheduled twice (lines {} and {})",
                pos[i] + 1,
                p + 1
            );
            return Err(Violation::new("duplicate", d));
        }
        pos[i] = p;
    }
    if let Some(i) = (0..total).find(|&i| pos[i] == usize::MAX) {
        return Err(Violation::new(
            "missing",
            format!("node {i} is not scheduled"),
        ));
    }
    for a in 0..n {
        for &b in &k.succ[a] {
            if pos[a] > pos[b] {
                let (na, nb) = (&k.nodes[a].op, &k.nodes[b].op);
                return Err(Violation::new(
                    "order",
                    format!("edge {a} -> {b}: node {b} ({nb}) is scheduled before node {a} ({na})"),
                ));
            }
        }
    }
    Ok(pos)
}

/// The k-th SPILL_OUT in the schedule is id n + 2k; each IN follows its OUT;
/// spilled buffers exist and are not L0 buffers.
fn spill_ids(k: &Kernel, sol: &Solution, pos: &[usize]) -> Result<(), Violation> {
    let n = k.len();
    let mut outs: Vec<(usize, usize)> =
        (0..sol.spills.len()).map(|s| (pos[n + 2 * s], s)).collect();
    outs.sort_unstable();
    for (rank, &(_, s)) in outs.iter().enumerate() {
        let (out, inn) = (n + 2 * s, n + 2 * s + 1);
        if rank != s {
            return Err(Violation::new("spill-ids", format!("spill {} (ids {out}, {inn}) is the {}th SPILL_OUT in the schedule; ids must follow that order", s + 1, rank + 1)));
        }
        if pos[inn] < pos[out] {
            return Err(Violation::new(
                "spill-pair",
                format!("SPILL_IN {inn} comes before its SPILL_OUT {out}"),
            ));
        }
    }
    for (s, &(buf, _)) in sol.spills.iter().enumerate() {
        let Some(&b) = k.buf_index.get(&buf) else {
            let d = format!("spill {}: buffer {buf} does not exist", s + 1);
            return Err(Violation::new("unknown-buffer", d));
        };
        if k.buffers[b].ty.is_l0() {
            return Err(Violation::new(
                "spill-l0",
                format!(
                    "spill {} of L0 buffer {buf}: L0 buffers are not spilled",
                    s + 1
                ),
            ));
        }
    }
    Ok(())
}

/// Exactly one first offset per buffer, every one of them a buffer of the case.
fn offsets(k: &Kernel, sol: &Solution) -> Result<(), Violation> {
    let mut seen = vec![false; k.buffers.len()];
    for &(buf, _) in &sol.offsets {
        let Some(&b) = k.buf_index.get(&buf) else {
            let d = format!("memory: buffer {buf} does not exist");
            return Err(Violation::new("unknown-buffer", d));
        };
        if std::mem::replace(&mut seen[b], true) {
            let d = format!("memory: buffer {buf} listed twice");
            return Err(Violation::new("duplicate-offset", d));
        }
    }
    match seen.iter().position(|&s| !s) {
        Some(b) => Err(Violation::new(
            "missing-offset",
            format!("memory: no offset for buffer {}", k.buffers[b].id),
        )),
        None => Ok(()),
    }
}

/// A node whose L0 type is held by another buffer when it allocates, named
/// (the schedulers use this on orders without spills or offsets).
pub fn l0_violation(k: &Kernel, order: &[usize]) -> Option<String> {
    let mut live: [Option<u32>; 5] = [None; 5];
    for &i in order {
        match k.nodes.get(i).map(|n| &n.kind) {
            Some(NodeKind::Alloc { buf, ty, .. }) if ty.is_l0() => {
                if let Some(other) = live[ty.index()] {
                    return Some(format!(
                        "{} holds buffer {other} when buffer {buf} is allocated (node {i})",
                        ty.as_str()
                    ));
                }
                live[ty.index()] = Some(*buf);
            }
            Some(NodeKind::Free { buf, ty, .. })
                if ty.is_l0() && live[ty.index()] == Some(*buf) =>
            {
                live[ty.index()] = None;
            }
            _ => {}
        }
    }
    None
}

/// Every benchmark rule above, first broken one returned.
pub fn check(k: &Kernel, sol: &Solution) -> Result<(), Violation> {
    let pos = positions(k, sol)?;
    spill_ids(k, sol, &pos)?;
    offsets(k, sol)?;
    match l0_violation(k, &sol.order) {
        Some(d) => Err(Violation::new("l0-double", d)),
        None => Ok(()),
    }
}
