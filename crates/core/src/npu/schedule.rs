//! Problem 1: a topological order of every node with low peak residency
//! (running L1 + UB bytes), where L0A, L0B and L0C each hold at most one
//! buffer at a time.
//!
//! The scheduler is demand-driven: it walks target ops (in file order, or
//! the order a search chose) and schedules each just in time with its
//! unscheduled ancestors, post-order, so an ALLOC and its COPY_IN run right
//! before the first op that needs them and every FREE right after its last
//! user. An L0 ALLOC whose type is held first finishes the holder. Linear in
//! nodes + edges.

use super::model::{Kernel, NodeKind};

/// Peak of the running L1 + UB residency; spill ids (>= n) are ignored.
pub fn peak_residency(k: &Kernel, order: &[usize]) -> u64 {
    peak_profile(k, order).0
}

/// The peak residency and how many positions of `order` reach it (the
/// count breaks ties for searches that minimise the peak), in one pass:
/// the incremental peak search's own stretch measure, over the whole order.
pub fn peak_profile(k: &Kernel, order: &[usize]) -> (u64, u64) {
    let (p, _) = super::peak::stretch(k, order, 0);
    (p.max.max(0) as u64, p.count)
}

pub use super::rules::l0_violation;

/// Demand-driven order: walks `targets` and schedules each one just in time
/// with its unscheduled ancestors (post-order DFS), so a COPY_IN runs right
/// before the first op that needs it and every FREE right after its last
/// user. An L0 ALLOC whose type is held first finishes the holder (its
/// remaining users and FREE). Errors name the buffers of an L0 cycle.
pub fn demand_schedule(k: &Kernel, targets: &[usize]) -> crate::Result<Vec<usize>> {
    let mut d = Demand::new(k);
    for &t in targets {
        d.target(t)?;
    }
    d.finish()?;
    Ok(d.order)
}

/// The demand scheduler between two targets: which nodes are done, which
/// buffer holds each L0 type, and the order so far. Kept as a value so a
/// search can resume scheduling at any point instead of starting over.
#[derive(Debug, Clone)]
pub struct Demand<'k> {
    k: &'k Kernel,
    pub done: Vec<bool>,
    /// Empty between targets (every node expanded is emitted or errors).
    on_stack: Vec<bool>,
    /// Buffer index holding each L0 type.
    pub live_l0: [Option<usize>; 5],
    pub order: Vec<usize>,
    stack: Vec<(usize, bool)>,
}

impl<'k> Demand<'k> {
    pub fn new(k: &'k Kernel) -> Self {
        Demand {
            k,
            done: vec![false; k.len()],
            on_stack: vec![false; k.len()],
            live_l0: [None; 5],
            order: Vec::with_capacity(k.len()),
            stack: Vec::new(),
        }
    }

    /// Resumes at a point of another run of the same case: `done(x)` says
    /// which nodes were scheduled by then, `live_l0` what held L0 there; the
    /// order restarts empty (a search re-scheduling a stretch; memory reused).
    pub fn resume(&mut self, done: impl Fn(usize) -> bool, live_l0: [Option<usize>; 5]) {
        for (x, d) in self.done.iter_mut().enumerate() {
            *d = done(x);
        }
        self.on_stack.fill(false);
        self.live_l0 = live_l0;
        self.order.clear();
    }

    /// Every node not scheduled yet, in id order (what follows the targets).
    pub fn finish(&mut self) -> crate::Result<()> {
        for t in 0..self.k.len() {
            self.target(t)?;
        }
        Ok(())
    }

    /// Schedules `t` with its unscheduled ancestors (nothing if done).
    pub fn target(&mut self, t: usize) -> crate::Result<()> {
        let k = self.k;
        if self.done[t] {
            return Ok(());
        }
        let mut stack = std::mem::take(&mut self.stack);
        stack.clear();
        stack.push((t, false));
        let r = self.walk(k, &mut stack);
        self.stack = stack;
        r
    }

    fn walk(&mut self, k: &Kernel, stack: &mut Vec<(usize, bool)>) -> crate::Result<()> {
        let (done, on_stack) = (&mut self.done, &mut self.on_stack);
        while let Some((v, expanded)) = stack.pop() {
            if done[v] {
                continue;
            }
            if !expanded {
                if on_stack[v] {
                    continue;
                }
                on_stack[v] = true;
                stack.push((v, true));
                // ALLOCs last (as late as possible: after the subtrees of the
                // other predecessors), the rest smallest id first.
                // (Sorted in place on the stack: no allocation per node.)
                let mark = stack.len();
                stack.extend(k.pred[v].iter().filter(|&&p| !done[p]).map(|&p| (p, false)));
                let is_alloc = |p: usize| matches!(k.nodes[p].kind, NodeKind::Alloc { .. });
                stack[mark..].sort_unstable_by(|&(a, _), &(b, _)| {
                    is_alloc(b).cmp(&is_alloc(a)).then(b.cmp(&a))
                });
                continue;
            }
            if let Some(p) = k.pred[v].iter().copied().find(|&p| !done[p]) {
                // A predecessor was deferred (L0 ordering); come back after it.
                stack.push((v, true));
                if on_stack[p] {
                    return Err(crate::Error::Config(format!(
                    "npu schedule: node {v} ({}) waits on node {p} ({}), which waits on it through an L0 buffer",
                    k.nodes[v].op, k.nodes[p].op
                )));
                }
                stack.push((p, false));
                continue;
            }
            if let NodeKind::Alloc { ty, .. } = &k.nodes[v].kind {
                if ty.is_l0() {
                    if let Some(h) = self.live_l0[ty.index()] {
                        // Finish the holder first.
                        let f = k.buffers[h].free;
                        if on_stack[f] {
                            return Err(crate::Error::Config(format!(
                                "npu schedule: {} buffers {} and {} are needed at once",
                                ty.as_str(),
                                k.buffers[h].id,
                                buf_of(k, v).map(|b| k.buffers[b].id).unwrap_or(0)
                            )));
                        }
                        stack.push((v, true));
                        stack.push((f, false));
                        continue;
                    }
                }
            }
            // Emit v, then every FREE that became ready.
            let mut emit_now = vec![v];
            while let Some(x) = emit_now.pop() {
                if done[x] {
                    continue;
                }
                done[x] = true;
                on_stack[x] = false;
                self.order.push(x);
                match &k.nodes[x].kind {
                    NodeKind::Alloc { ty, .. } if ty.is_l0() => {
                        self.live_l0[ty.index()] = buf_of(k, x)
                    }
                    NodeKind::Free { ty, .. } if ty.is_l0() => self.live_l0[ty.index()] = None,
                    NodeKind::Op { bufs, .. } => {
                        for b in bufs.iter().filter_map(|b| k.buf_index.get(b)) {
                            let f = k.buffers[*b].free;
                            if !done[f] && k.pred[f].iter().all(|&p| done[p]) {
                                emit_now.push(f);
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    }
}

/// The buffer an ALLOC or FREE node names.
fn buf_of(k: &Kernel, i: usize) -> Option<usize> {
    match &k.nodes[i].kind {
        NodeKind::Alloc { buf, .. } | NodeKind::Free { buf, .. } => k.buf_index.get(buf).copied(),
        _ => None,
    }
}

/// Targets for [`demand_schedule`] in file order: ops that depend on other
/// ops (sources such as COPY_IN are pulled in by their consumers).
pub fn demand_targets(k: &Kernel) -> Vec<usize> {
    (0..k.len())
        .filter(|&i| {
            matches!(k.nodes[i].kind, NodeKind::Op { .. })
                && k.pred[i]
                    .iter()
                    .any(|&p| matches!(k.nodes[p].kind, NodeKind::Op { .. }))
        })
        .collect()
}
