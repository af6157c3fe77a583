//! Pipe timing: a machine of independent units (an NPU's MTE1/2/3, FIXP,
//! CUBE and VECTOR pipes; any accelerator's DMA queues and compute units).
//! Each unit runs its nodes one at a time in schedule order, units run in
//! parallel, a node starts when its unit is free and every predecessor has
//! ended; nodes without a unit (ALLOC, FREE) take no unit. The total is the
//! latest end. Used by the NPU benchmark's problem 3 and its checker.

/// A node as the timer sees it: the unit it runs on (an index below the
/// machine's unit count), if any, and how long it takes.
#[derive(Debug, Clone, Copy)]
pub struct Timed {
    pub unit: Option<usize>,
    pub cycles: u64,
}

/// Start and end cycle of every node (indexed like `nodes`), and the total.
/// `order` must be topological for `preds` (the checker ensures it).
pub fn pipe_times(
    order: &[usize],
    nodes: &[Timed],
    preds: &[Vec<usize>],
) -> (Vec<(u64, u64)>, u64) {
    let units = nodes
        .iter()
        .filter_map(|t| t.unit)
        .max()
        .map_or(0, |u| u + 1);
    let mut unit_free = vec![0u64; units];
    let mut span = vec![(0u64, 0u64); nodes.len()];
    let mut total = 0;
    for &i in order {
        let ready = preds[i].iter().map(|&p| span[p].1).max().unwrap_or(0);
        let start = match nodes[i].unit {
            Some(u) => ready.max(unit_free[u]),
            None => ready,
        };
        let end = start + nodes[i].cycles;
        if let Some(u) = nodes[i].unit {
            unit_free[u] = end;
        }
        span[i] = (start, end);
        total = total.max(end);
    }
    (span, total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_serialise_and_run_in_parallel() {
        let t = |unit, cycles| Timed { unit, cycles };
        // 0 and 1 on unit 0 (serial), 2 on unit 1 (parallel), 3 after 1
        // and 2 with no unit.
        let nodes = [t(Some(0), 10), t(Some(0), 5), t(Some(1), 7), t(None, 0)];
        let preds = vec![vec![], vec![], vec![], vec![1, 2]];
        let (span, total) = pipe_times(&[0, 1, 2, 3], &nodes, &preds);
        assert_eq!(span, vec![(0, 10), (10, 15), (0, 7), (15, 15)]);
        assert_eq!(total, 15);
    }
}
