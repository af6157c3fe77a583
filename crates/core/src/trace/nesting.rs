//! Ops inside ops. Runtime profilers record calls within calls (PyTorch:
//! `aten::conv2d` > `aten::convolution` > `aten::_convolution` >
//! `aten::mkldnn_convolution`, with `aten::empty` allocations under them);
//! listing every level counts the same time and memory several times. A
//! trace keeps each op's `parent`; views and reports work on a *cut*: at
//! level 1 the top-level ops, at level N the ops N-1 calls deep plus
//! shallower ops that have nothing that deep under them. A cut's ops never
//! overlap, so their durations add up to no more than the run.
//!
//! Owns the nesting queries and [`collapse`]; imports only the trace model.

use super::{Ops, Trace, TraceOp};

/// Depth and children of each op.
#[derive(Debug, Clone, Default)]
pub struct Nesting {
    /// 0 for top-level ops.
    pub depth: Vec<u32>,
    pub children: Vec<Vec<usize>>,
}

/// Every op's depth (0 at the top level), telling `child(parent, op)` of
/// each op inside another. Parents come first; a parent at or after its
/// child (a broken file) is ignored rather than looped on.
fn depths(ops: &Ops, mut child: impl FnMut(usize, usize)) -> Vec<u32> {
    let mut depth = vec![0u32; ops.len()];
    for (i, p) in ops.parents().enumerate() {
        if let Some(p) = p.filter(|&p| p < i) {
            depth[i] = depth[p] + 1;
            child(p, i);
        }
    }
    depth
}

impl Nesting {
    pub fn of(ops: &Ops) -> Nesting {
        let mut children = vec![Vec::new(); ops.len()];
        let depth = depths(ops, |p, i| children[p].push(i));
        Nesting { depth, children }
    }

    /// [`Nesting::levels`] of `ops` without the nesting: a flat trace
    /// (no parent column) answers at once, a nested one walks its parents
    /// keeping only their depths (every open asks this; building the whole
    /// nesting of a 3.75M-op trace cost a third of its open from the
    /// cache).
    pub fn levels_of(ops: &Ops) -> u32 {
        if !ops.has_parents() {
            return 1;
        }
        depths(ops, |_, _| {})
            .into_iter()
            .max()
            .map_or(1, |d| d + 1)
    }

    /// Any op inside another?
    pub fn nested(&self) -> bool {
        self.depth.iter().any(|&d| d > 0)
    }

    /// Levels of calls (1 when nothing is nested).
    pub fn levels(&self) -> u32 {
        self.depth.iter().copied().max().map(|d| d + 1).unwrap_or(1)
    }

    /// The ops of the cut at `level` (>= 1), in trace order.
    pub fn cut(&self, level: u32) -> Vec<usize> {
        let d = level.max(1) - 1;
        (0..self.depth.len())
            .filter(|&i| self.depth[i] == d || (self.depth[i] < d && self.children[i].is_empty()))
            .collect()
    }

    /// For each op, the op of the cut at `level` that holds it (itself or
    /// an ancestor); `None` for ops above the cut (they have ops of the
    /// cut inside them).
    pub fn owner(&self, ops: &Ops, level: u32) -> Vec<Option<usize>> {
        let d = level.max(1) - 1;
        let in_cut = {
            let mut v = vec![false; ops.len()];
            for i in self.cut(level) {
                v[i] = true;
            }
            v
        };
        let mut owner = vec![None; ops.len()];
        for i in 0..ops.len() {
            owner[i] = if in_cut[i] {
                Some(i)
            } else if self.depth[i] > d {
                ops.at(i)
                    .parent
                    .and_then(|p| owner.get(p).copied().flatten())
            } else {
                None
            };
        }
        owner
    }

    /// Time in each op outside its children.
    pub fn self_ns(&self, ops: &Ops) -> Vec<u64> {
        ops.iter()
            .enumerate()
            .map(|(i, o)| {
                let inner: u64 = self.children[i]
                    .iter()
                    .map(|&c| {
                        let c = ops.at(c);
                        c.end_ns.saturating_sub(c.start_ns)
                    })
                    .sum();
                o.end_ns.saturating_sub(o.start_ns).saturating_sub(inner)
            })
            .collect()
    }
}

/// The trace at the cut `level`: only the cut's ops (renumbered, in trace
/// order, with `self_ns` set where children were folded in), each event and
/// tensor attributed to the cut op that holds the op it named. The summary
/// and ledger are recomputed from the events (they do not change: only the
/// attribution does). A trace without nesting comes back unchanged.
pub fn collapse(tr: &Trace, level: u32) -> Trace {
    let n = Nesting::of(&tr.ops);
    if !n.nested() {
        return tr.clone();
    }
    let cut = n.cut(level);
    let owner = n.owner(&tr.ops, level);
    let self_ns = n.self_ns(&tr.ops);
    let mut new_id = vec![None; tr.ops.len()];
    for (k, &i) in cut.iter().enumerate() {
        new_id[i] = Some(k);
    }
    let map = |o: usize| owner.get(o).copied().flatten().and_then(|c| new_id[c]);
    let mut ops: Vec<TraceOp> = cut
        .iter()
        .enumerate()
        .map(|(k, &i)| {
            let mut o = tr.ops.at(i).owned();
            o.id = k;
            o.parent = None;
            if !n.children[i].is_empty() {
                o.self_ns = Some(self_ns[i]);
            }
            o
        })
        .collect();
    // Operands of folded ops belong to the op that holds them.
    for (i, o) in tr.ops.iter().enumerate() {
        let Some(k) = map(i) else { continue };
        if new_id[i] == Some(k) {
            continue;
        }
        let dst = &mut ops[k];
        for (from, to) in [
            (o.inputs, &mut dst.inputs),
            (o.outputs, &mut dst.outputs),
            (o.streamed, &mut dst.streamed),
        ] {
            for &t in from {
                if !to.contains(&t) {
                    to.push(t);
                }
            }
        }
        dst.stall_ns += o.stall_ns;
    }
    let mut out = tr.clone();
    out.ops = ops.into();
    out.events.map_ops(map);
    out.tensors.update_all(|_, t| {
        t.producer = t.producer.and_then(map);
        let mut c: Vec<usize> = t.consumers.iter().filter_map(|&o| map(o)).collect();
        c.dedup();
        t.consumers = c;
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(name: &str, s: u64, e: u64, parent: Option<usize>) -> TraceOp {
        TraceOp {
            parent,
            ..TraceOp::span(name, name, s, e)
        }
    }

    #[test]
    fn cuts_tile_time_and_own_what_is_inside() {
        // conv2d [0,10) > convolution [1,9) > mkl [2,8); relu [10,12);
        // empty [3,4) inside mkl.
        let ops: Ops = vec![
            op("conv2d", 0, 10, None),
            op("convolution", 1, 9, Some(0)),
            op("mkl", 2, 8, Some(1)),
            op("empty", 3, 4, Some(2)),
            op("relu", 10, 12, None),
        ]
        .into();
        let n = Nesting::of(&ops);
        assert!(n.nested());
        assert_eq!(n.levels(), 4);
        assert_eq!(Nesting::levels_of(&ops), 4);
        // A parent after its child is ignored by both.
        let broken: Ops = vec![op("a", 0, 4, Some(1)), op("b", 1, 2, None)].into();
        assert_eq!(Nesting::levels_of(&broken), Nesting::of(&broken).levels());
        assert_eq!(Nesting::levels_of(&broken), 1);
        let flat: Ops = vec![op("a", 0, 1, None), op("b", 1, 2, None)].into();
        assert!(!flat.has_parents());
        assert_eq!(Nesting::levels_of(&flat), 1);
        assert_eq!(n.cut(1), vec![0, 4]);
        assert_eq!(n.cut(2), vec![1, 4]);
        assert_eq!(n.cut(9), vec![3, 4]);
        assert_eq!(
            n.owner(&ops, 1),
            vec![Some(0), Some(0), Some(0), Some(0), Some(4)]
        );
        assert_eq!(
            n.owner(&ops, 2),
            vec![None, Some(1), Some(1), Some(1), Some(4)]
        );
        assert_eq!(n.self_ns(&ops), vec![2, 2, 5, 1, 2]);
    }
}
