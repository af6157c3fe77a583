//! The one topological sort: Kahn's algorithm as a list scheduler. Each
//! caller says which ready op runs first (its key: smallest first) and may
//! hold ops back (no key) or change keys as ops run; the graph builder
//! (file order), the memory-aware order, explicit op orders and kernel DAGs
//! all schedule through it. O((ops + edges) log ops).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// What a caller of [`list_schedule`] decides.
pub trait Picker {
    type Key: Ord + Copy;
    /// The priority of ready op `i` now (smallest runs first); `None` holds
    /// it back until [`Picker::ran`] names it again.
    fn key(&self, i: usize) -> Option<Self::Key>;
    /// Op `i` ran: push into `changed` the ops whose key may have dropped
    /// (or that are no longer held back).
    fn ran(&mut self, _i: usize, _changed: &mut Vec<usize>) {}
}

/// Runs ops in dependency order: `succ[i]` lists the ops that read op `i`'s
/// outputs (once per edge) and `indegree[i]` counts the edges into `i`.
/// `Err` with the ops that did run when the rest cannot (a cycle, or ops
/// held back for good).
pub fn list_schedule<P: Picker>(
    succ: &[Vec<usize>],
    mut indegree: Vec<usize>,
    picker: &mut P,
) -> Result<Vec<usize>, Vec<usize>> {
    let n = succ.len();
    let mut heap: BinaryHeap<Reverse<(P::Key, usize)>> = BinaryHeap::new();
    for (i, &d) in indegree.iter().enumerate() {
        if d == 0 {
            if let Some(k) = picker.key(i) {
                heap.push(Reverse((k, i)));
            }
        }
    }
    let mut done = vec![false; n];
    let mut order = Vec::with_capacity(n);
    let mut changed = Vec::new();
    while let Some(Reverse((k, i))) = heap.pop() {
        if done[i] {
            continue;
        }
        // Keys can rise after an op was queued: re-check it (lazy heap).
        match picker.key(i) {
            None => continue,
            Some(now) if now != k => {
                heap.push(Reverse((now, i)));
                continue;
            }
            Some(_) => {}
        }
        done[i] = true;
        order.push(i);
        for &s in &succ[i] {
            indegree[s] -= 1;
            if indegree[s] == 0 {
                if let Some(k) = picker.key(s) {
                    heap.push(Reverse((k, s)));
                }
            }
        }
        changed.clear();
        picker.ran(i, &mut changed);
        for &c in &changed {
            if indegree[c] == 0 && !done[c] {
                if let Some(k) = picker.key(c) {
                    heap.push(Reverse((k, c)));
                }
            }
        }
    }
    if order.len() == n {
        Ok(order)
    } else {
        Err(order)
    }
}

/// The earliest ready op first (file order where it is topological).
pub struct Earliest;

impl Picker for Earliest {
    type Key = usize;
    fn key(&self, i: usize) -> Option<usize> {
        Some(i)
    }
}

/// Successor lists and in-degrees from each op's predecessors (duplicates
/// removed).
pub fn from_preds(preds: &[Vec<usize>]) -> (Vec<Vec<usize>>, Vec<usize>) {
    let mut succ: Vec<Vec<usize>> = vec![Vec::new(); preds.len()];
    let mut indegree = vec![0usize; preds.len()];
    for (i, p) in preds.iter().enumerate() {
        let mut p = p.clone();
        p.sort_unstable();
        p.dedup();
        indegree[i] = p.len();
        for q in p {
            succ[q].push(i);
        }
    }
    (succ, indegree)
}

/// Each op's producers of its inputs in `g` (one per input read).
pub fn op_preds(g: &super::Graph) -> Vec<Vec<usize>> {
    g.ops
        .iter()
        .map(|o| {
            o.inputs
                .iter()
                .filter_map(|&t| g.tensors.producer(t))
                .collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn earliest_keeps_a_topological_file_order_and_finds_cycles() {
        let (succ, indeg) = from_preds(&[vec![], vec![0], vec![0], vec![1, 2]]);
        assert_eq!(
            list_schedule(&succ, indeg, &mut Earliest),
            Ok(vec![0, 1, 2, 3])
        );
        // 1 reads 2, which comes later in the file.
        let (succ, indeg) = from_preds(&[vec![], vec![2], vec![0]]);
        assert_eq!(
            list_schedule(&succ, indeg, &mut Earliest),
            Ok(vec![0, 2, 1])
        );
        let (succ, indeg) = from_preds(&[vec![1], vec![0]]);
        assert_eq!(list_schedule(&succ, indeg, &mut Earliest), Err(vec![]));
    }
}
