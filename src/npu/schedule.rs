//! Problem 1: a topological order of every node with low peak residency
//! (running L1 + UB bytes), where L0A, L0B and L0C each hold at most one
//! buffer at a time.
//!
//! The scheduler is a list scheduler over *op groups*: an op together with
//! the ALLOC nodes that feed it. FREE nodes run as soon as they are ready
//! (they only give memory back); ALLOCs run only with the op that first
//! writes their buffer (as late as possible). Among ready groups it takes
//! the one that allocates the fewest L1/UB bytes, then the one that frees
//! most, then the earliest in the file. An L0 buffer is only allocated when
//! every op that will use it can get its other L0 buffers (they are live,
//! or their type is free), which rules out the L0 deadlock (an L0A held for
//! a MATMUL whose L0C is taken by another tile). O((n + e) log n).

use super::model::{BufType, Kernel, NodeKind};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Peak of the running L1 + UB residency; spill ids (>= n) are ignored.
pub fn peak_residency(k: &Kernel, order: &[usize]) -> u64 {
    let (mut cur, mut peak) = (0i64, 0i64);
    for &i in order {
        match k.nodes.get(i).map(|n| &n.kind) {
            Some(NodeKind::Alloc { size, ty, .. }) if !ty.is_l0() => cur += *size as i64,
            Some(NodeKind::Free { size, ty, .. }) if !ty.is_l0() => cur -= *size as i64,
            _ => {}
        }
        peak = peak.max(cur);
    }
    peak.max(0) as u64
}

/// Tie-breaking among equally cheap groups.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Tiebreak {
    /// Earliest node id (the file's program order).
    #[default]
    FileOrder,
    /// Longest remaining path first (helps the pipes overlap).
    CriticalPath,
}

#[derive(Debug, Clone, Copy, Default)]
pub struct ScheduleOptions {
    pub tiebreak: Tiebreak,
    /// Allow a group to run while it raises residency above this many bytes
    /// only when nothing cheaper is ready (0: no limit).
    pub seed: u64,
}

/// Longest path (in cycles) from each node to a sink.
pub fn tail_lengths(k: &Kernel) -> Vec<u64> {
    let order = k.topological_order().unwrap_or_default();
    let mut tail = vec![0u64; k.len()];
    for &i in order.iter().rev() {
        let own = match &k.nodes[i].kind {
            NodeKind::Op { cycles, .. } => *cycles,
            _ => 0,
        };
        let best = k.succ[i].iter().map(|&s| tail[s]).max().unwrap_or(0);
        tail[i] = own + best;
    }
    tail
}

/// The scheduler described in the module docs.
pub fn schedule(k: &Kernel, opts: ScheduleOptions) -> crate::Result<Vec<usize>> {
    let n = k.len();
    let tail = match opts.tiebreak {
        Tiebreak::CriticalPath => tail_lengths(k),
        Tiebreak::FileOrder => Vec::new(),
    };
    // Which buffer each ALLOC/FREE node is.
    let buf_of = |i: usize| -> Option<usize> {
        match &k.nodes[i].kind {
            NodeKind::Alloc { buf, .. } | NodeKind::Free { buf, .. } => {
                k.buf_index.get(buf).copied()
            }
            _ => None,
        }
    };
    // Per op: its ALLOC predecessors; non-ALLOC predecessor count.
    let mut allocs_of: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut waiting: Vec<usize> = vec![0; n];
    for i in 0..n {
        for &p in &k.pred[i] {
            if matches!(k.nodes[p].kind, NodeKind::Alloc { .. })
                && matches!(k.nodes[i].kind, NodeKind::Op { .. })
            {
                allocs_of[i].push(p);
            } else {
                waiting[i] += 1;
            }
        }
    }
    // An ALLOC whose only successors are its FREE (never used) still runs:
    // treat it as its own group.
    let l1ub_bytes = |i: usize| -> u64 {
        allocs_of[i]
            .iter()
            .map(|&a| match &k.nodes[a].kind {
                NodeKind::Alloc { size, ty, .. } if !ty.is_l0() => *size,
                _ => 0,
            })
            .sum()
    };
    // Bytes freed soon: buffers this op is the last unscheduled user of.
    let mut users_left: Vec<usize> = k.buffers.iter().map(|b| b.users.len()).collect();
    let frees_after = |i: usize, users_left: &[usize]| -> u64 {
        match &k.nodes[i].kind {
            NodeKind::Op { bufs, .. } => bufs
                .iter()
                .filter_map(|b| k.buf_index.get(b))
                .filter(|&&bi| users_left[bi] == 1 && !k.buffers[bi].ty.is_l0())
                .map(|&bi| k.buffers[bi].size)
                .sum(),
            _ => 0,
        }
    };
    let mut live_l0: [Option<usize>; 5] = [None; 5];
    let mut allocated = vec![false; k.buffers.len()];
    // Can op `i` run now, given L0 occupancy (and the lookahead rule)?
    let l0_ok = |i: usize, live_l0: &[Option<usize>; 5], done: &[bool]| -> bool {
        let mine: Vec<usize> = allocs_of[i].iter().filter_map(|&a| buf_of(a)).collect();
        for &b in &mine {
            let ty = k.buffers[b].ty;
            if !ty.is_l0() {
                continue;
            }
            if live_l0[ty.index()].is_some() {
                return false;
            }
            // Every later user of b must be waiting only on b's producer and
            // on sibling producers of its other L0 buffers (else b would sit
            // in its L0 while unrelated work that needs the same L0 waits).
            for &u in k.buffers[b].users.iter().filter(|&&u| u != i) {
                for &p in &k.pred[u] {
                    if done[p] || p == i || matches!(k.nodes[p].kind, NodeKind::Alloc { .. }) {
                        continue;
                    }
                    let bid = k.buffers[b].id;
                    let sibling = match (&k.nodes[p].kind, &k.nodes[u].kind) {
                        (NodeKind::Op { bufs: pb, .. }, NodeKind::Op { bufs: ub, .. }) => {
                            pb.contains(&bid)
                                || pb.iter().any(|x| {
                                    ub.contains(x)
                                        && k.buf_index.get(x).is_some_and(|&xi| {
                                            k.buffers[xi].ty.is_l0() && k.buffers[xi].ty != ty
                                        })
                                })
                        }
                        _ => false,
                    };
                    if !sibling {
                        return false;
                    }
                }
            }
            // Every later user of b must be able to get its other L0 buffers.
            for &u in &k.buffers[b].users {
                let NodeKind::Op { bufs, .. } = &k.nodes[u].kind else {
                    continue;
                };
                for ob in bufs.iter().filter_map(|x| k.buf_index.get(x)) {
                    let ot = k.buffers[*ob].ty;
                    if *ob == b || !ot.is_l0() || mine.contains(ob) {
                        continue;
                    }
                    // Deadlock: ob's type is held by h, and h is only freed
                    // after an op that needs another buffer of b's type.
                    let Some(h) = live_l0[ot.index()] else {
                        continue;
                    };
                    if h == *ob {
                        continue;
                    }
                    let h_needs_ty = k.buffers[h].users.iter().filter(|&&v| !done[v]).any(|&v| {
                        matches!(&k.nodes[v].kind, NodeKind::Op { bufs, .. } if bufs.iter().filter_map(|x| k.buf_index.get(x)).any(|&x| x != b && k.buffers[x].ty == ty))
                    });
                    if h_needs_ty {
                        return false;
                    }
                }
            }
        }
        true
    };
    type Key = (u64, Reverse<u64>, Reverse<u64>, usize);
    let key = |i: usize, users_left: &[usize]| -> Key {
        let crit = tail.get(i).copied().unwrap_or(0);
        let file = match opts.tiebreak {
            Tiebreak::FileOrder => 0,
            Tiebreak::CriticalPath => crit,
        };
        (
            l1ub_bytes(i),
            Reverse(frees_after(i, users_left)),
            Reverse(file),
            i,
        )
    };
    let mut heap: BinaryHeap<Reverse<Key>> = BinaryHeap::new();
    let mut blocked: Vec<usize> = Vec::new();
    let mut free_ready: Vec<usize> = Vec::new();
    let mut done = vec![false; n];
    let mut order: Vec<usize> = Vec::with_capacity(n);
    for i in 0..n {
        match k.nodes[i].kind {
            NodeKind::Op { .. } if waiting[i] == 0 => heap.push(Reverse(key(i, &users_left))),
            NodeKind::Alloc { .. } => {
                // ALLOCs that feed no op are scheduled right before their FREE.
                if !k.succ[i]
                    .iter()
                    .any(|&s| matches!(k.nodes[s].kind, NodeKind::Op { .. }))
                {
                    waiting[i] = usize::MAX;
                }
            }
            _ => {}
        }
    }
    let mut emit = |i: usize,
                    order: &mut Vec<usize>,
                    done: &mut Vec<bool>,
                    waiting: &mut Vec<usize>,
                    free_ready: &mut Vec<usize>,
                    heap: &mut BinaryHeap<Reverse<Key>>,
                    users_left: &mut Vec<usize>,
                    live_l0: &mut [Option<usize>; 5],
                    allocated: &mut Vec<bool>| {
        done[i] = true;
        order.push(i);
        match &k.nodes[i].kind {
            NodeKind::Alloc { ty, .. } => {
                if let Some(b) = buf_of(i) {
                    allocated[b] = true;
                    if ty.is_l0() {
                        live_l0[ty.index()] = Some(b);
                    }
                }
            }
            NodeKind::Free { ty, .. } => {
                if ty.is_l0() {
                    live_l0[ty.index()] = None;
                }
            }
            NodeKind::Op { bufs, .. } => {
                for b in bufs.iter().filter_map(|x| k.buf_index.get(x)) {
                    users_left[*b] = users_left[*b].saturating_sub(1);
                }
            }
        }
        for &s in &k.succ[i] {
            if matches!(k.nodes[s].kind, NodeKind::Alloc { .. }) {
                continue;
            }
            if matches!(k.nodes[i].kind, NodeKind::Alloc { .. })
                && matches!(k.nodes[s].kind, NodeKind::Op { .. })
            {
                continue; // counted in allocs_of, not in waiting
            }
            waiting[s] -= 1;
            if waiting[s] == 0 {
                match k.nodes[s].kind {
                    NodeKind::Free { .. } => free_ready.push(s),
                    _ => heap.push(Reverse(key(s, users_left))),
                }
            }
        }
    };
    let mut retried = false;
    while order.len() < n {
        // FREEs first: they only give memory back (and unblock L0).
        if let Some(f) = free_ready.pop() {
            // A FREE whose ALLOC never ran (unused buffer): run the ALLOC now.
            if let Some(b) = buf_of(f) {
                let a = k.buffers[b].alloc;
                if !done[a] {
                    emit(
                        a,
                        &mut order,
                        &mut done,
                        &mut waiting,
                        &mut free_ready,
                        &mut heap,
                        &mut users_left,
                        &mut live_l0,
                        &mut allocated,
                    );
                }
            }
            emit(
                f,
                &mut order,
                &mut done,
                &mut waiting,
                &mut free_ready,
                &mut heap,
                &mut users_left,
                &mut live_l0,
                &mut allocated,
            );
            let was_l0 = matches!(&k.nodes[f].kind, NodeKind::Free { ty, .. } if ty.is_l0());
            if was_l0 {
                for b in blocked.drain(..) {
                    heap.push(Reverse(key(b, &users_left)));
                }
            }
            continue;
        }
        if heap.is_empty() && !blocked.is_empty() {
            if !retried {
                // The lookahead may have turned ops away whose reasons are gone.
                retried = true;
                for b in blocked.drain(..) {
                    heap.push(Reverse(key(b, &users_left)));
                }
                continue;
            }
            // Nothing passes the lookahead: take the cheapest op whose L0
            // types are free (the hard rule still holds).
            let free_now = |i: usize| {
                allocs_of[i].iter().filter_map(|&a| buf_of(a)).all(|b| {
                    let ty = k.buffers[b].ty;
                    !ty.is_l0() || live_l0[ty.index()].is_none()
                })
            };
            if let Some(pos) = (0..blocked.len())
                .filter(|&p| free_now(blocked[p]))
                .min_by_key(|&p| key(blocked[p], &users_left))
            {
                let i = blocked.swap_remove(pos);
                for a in allocs_of[i].clone() {
                    if !done[a] {
                        emit(
                            a,
                            &mut order,
                            &mut done,
                            &mut waiting,
                            &mut free_ready,
                            &mut heap,
                            &mut users_left,
                            &mut live_l0,
                            &mut allocated,
                        );
                    }
                }
                emit(
                    i,
                    &mut order,
                    &mut done,
                    &mut waiting,
                    &mut free_ready,
                    &mut heap,
                    &mut users_left,
                    &mut live_l0,
                    &mut allocated,
                );
                retried = false;
                continue;
            }
        }
        let Some(Reverse(kk)) = heap.pop() else {
            // Unused buffers: ALLOC+FREE pairs that no op touches.
            if let Some(a) = (0..n).find(|&i| !done[i] && waiting[i] == usize::MAX) {
                emit(
                    a,
                    &mut order,
                    &mut done,
                    &mut waiting,
                    &mut free_ready,
                    &mut heap,
                    &mut users_left,
                    &mut live_l0,
                    &mut allocated,
                );
                continue;
            }
            if std::env::var_os("NPU_DEBUG").is_some() {
                eprintln!(
                    "live_l0 {:?}",
                    live_l0.map(|b| b.map(|b| (k.buffers[b].id, k.buffers[b].ty)))
                );
                for &b in blocked.iter().take(5) {
                    eprintln!(
                        "blocked {} {} allocs {:?} bufs {:?}",
                        b, k.nodes[b].op, allocs_of[b], k.nodes[b].kind
                    );
                }
                for (i, nd) in k
                    .nodes
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| !done[*i])
                    .take(8)
                {
                    eprintln!(
                        "not done {i} {} waiting {} preds {:?}",
                        nd.op,
                        waiting[i],
                        k.pred[i].iter().map(|&p| (p, done[p])).collect::<Vec<_>>()
                    );
                }
            }
            return Err(crate::Error::Config(format!(
                "npu schedule: stuck after {} of {n} nodes (L0 buffers cannot be ordered)",
                order.len()
            )));
        };
        let i = kk.3;
        if done[i] {
            continue;
        }
        // Stale priority (frees changed): re-queue with the current key.
        let now = key(i, &users_left);
        if now != kk {
            heap.push(Reverse(now));
            continue;
        }
        if !l0_ok(i, &live_l0, &done) {
            blocked.push(i);
            continue;
        }
        for a in allocs_of[i].clone() {
            if !done[a] {
                emit(
                    a,
                    &mut order,
                    &mut done,
                    &mut waiting,
                    &mut free_ready,
                    &mut heap,
                    &mut users_left,
                    &mut live_l0,
                    &mut allocated,
                );
            }
        }
        emit(
            i,
            &mut order,
            &mut done,
            &mut waiting,
            &mut free_ready,
            &mut heap,
            &mut users_left,
            &mut live_l0,
            &mut allocated,
        );
        retried = false;
    }
    Ok(order)
}

/// The first L0 rule broken by `order`, if any: a second buffer of an L0
/// type allocated while another is live.
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
            Some(NodeKind::Free { buf, ty, .. }) if ty.is_l0() => {
                if live[ty.index()] == Some(*buf) {
                    live[ty.index()] = None;
                }
            }
            _ => {}
        }
    }
    let _ = BufType::ALL;
    None
}

/// Demand-driven order: walks `targets` and schedules each one just in time
/// with its unscheduled ancestors (post-order DFS), so a COPY_IN runs right
/// before the first op that needs it and every FREE right after its last
/// user. An L0 ALLOC whose type is held first finishes the holder (its
/// remaining users and FREE). Errors name the buffers of an L0 cycle.
pub fn demand_schedule(k: &Kernel, targets: &[usize]) -> crate::Result<Vec<usize>> {
    let n = k.len();
    let mut done = vec![false; n];
    let mut on_stack = vec![false; n];
    let mut order = Vec::with_capacity(n);
    let mut live_l0: [Option<usize>; 5] = [None; 5];
    let buf_of = |i: usize| -> Option<usize> {
        match &k.nodes[i].kind {
            NodeKind::Alloc { buf, .. } | NodeKind::Free { buf, .. } => {
                k.buf_index.get(buf).copied()
            }
            _ => None,
        }
    };
    for t in targets.iter().copied().chain(0..n) {
        if done[t] {
            continue;
        }
        let mut stack: Vec<(usize, bool)> = vec![(t, false)];
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
                let mut ps: Vec<usize> = k.pred[v].iter().copied().filter(|&p| !done[p]).collect();
                ps.sort_unstable_by(|a, b| b.cmp(a));
                for p in ps {
                    stack.push((p, false));
                }
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
                    if let Some(h) = live_l0[ty.index()] {
                        // Finish the holder first.
                        let f = k.buffers[h].free;
                        if on_stack[f] {
                            return Err(crate::Error::Config(format!(
                                "npu schedule: {} buffers {} and {} are needed at once",
                                ty.as_str(),
                                k.buffers[h].id,
                                buf_of(v).map(|b| k.buffers[b].id).unwrap_or(0)
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
                order.push(x);
                match &k.nodes[x].kind {
                    NodeKind::Alloc { ty, .. } if ty.is_l0() => live_l0[ty.index()] = buf_of(x),
                    NodeKind::Free { ty, .. } if ty.is_l0() => live_l0[ty.index()] = None,
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
    }
    Ok(order)
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
