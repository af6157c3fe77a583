//! Problem 3: pipe timing. Each pipe runs its nodes one at a time in
//! schedule order, pipes run in parallel, a node starts when its pipe is
//! free and every predecessor has ended; ALLOC and FREE take no time and no
//! pipe. The total is the latest end.

use super::model::Pipe;

/// A node as the timer sees it.
#[derive(Debug, Clone, Copy)]
pub struct Timed {
    pub pipe: Option<Pipe>,
    pub cycles: u64,
}

/// Start and end cycle of every node (indexed like `nodes`), and the total.
/// `order` must be topological for `preds` (the checker ensures it).
pub fn pipe_times(
    order: &[usize],
    nodes: &[Timed],
    preds: &[Vec<usize>],
) -> (Vec<(u64, u64)>, u64) {
    let mut span = vec![(0u64, 0u64); nodes.len()];
    let mut pipe_free = [0u64; 6];
    let mut total = 0;
    for &i in order {
        let ready = preds[i].iter().map(|&p| span[p].1).max().unwrap_or(0);
        let start = match nodes[i].pipe {
            Some(p) => ready.max(pipe_free[p.index()]),
            None => ready,
        };
        let end = start + nodes[i].cycles;
        if let Some(p) = nodes[i].pipe {
            pipe_free[p.index()] = end;
        }
        span[i] = (start, end);
        total = total.max(end);
    }
    (span, total)
}
