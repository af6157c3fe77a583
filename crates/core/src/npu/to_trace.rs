//! A kernel DAG with a solution as a `spillscope.trace/1` trace, so the
//! explorer, `verify`, `diff` and `report` work on kernels too: one pool per
//! buffer type, buffers as tensors, op nodes as ops (their pipe in
//! `op_type`, e.g. `MATMUL@CUBE`), ALLOC/FREE as alloc/free, SPILL_OUT as
//! evict and SPILL_IN as reload with their DMA spans. Times are cycles
//! (1 cycle shown as 1 ns).

use super::check::evaluate_timed;
use super::model::{BufType, Kernel, NodeKind};
use super::{Metrics, Solution};
use crate::trace::{
    Counter, Event, EventKind, Meta, NpuCaseInfo, Pool, Producer, Source, Summary, TensorKind,
    Trace, TraceOp, TraceTensor, Unit, SCHEMA,
};
use crate::{Error, Result};

/// Builds the trace of `sol` (checked first: a broken solution is an error
/// naming the rule).
pub fn to_trace(k: &Kernel, sol: &Solution) -> Result<Trace> {
    let (m, span) =
        evaluate_timed(k, sol).map_err(|v| Error::Config(format!("npu solution: {v}")))?;
    Ok(build(k, sol, &span, &m))
}

/// The trace of `sol` with the schedule position as its time (every node
/// at its own instant, ops of no length), which `trace::verify` replays in
/// exactly the schedule's order. Needs only `rules::check` to have passed.
pub(super) fn schedule_replay(k: &Kernel, sol: &Solution) -> Trace {
    let mut span = vec![(0, 0); k.len() + 2 * sol.spills.len()];
    for (p, &i) in sol.order.iter().enumerate() {
        span[i] = (p as u64, p as u64);
    }
    build(k, sol, &span, &Metrics::default())
}

/// The trace of `sol` with node `i` running over `span[i]`.
fn build(k: &Kernel, sol: &Solution, span: &[(u64, u64)], m: &Metrics) -> Trace {
    let latency = m.total_cycles;
    let n = k.len();
    let mut pos = vec![0usize; span.len()];
    for (p, &i) in sol.order.iter().enumerate() {
        pos[i] = p;
    }
    let spill_buf: Vec<usize> = sol.spills.iter().map(|(b, _)| k.buf_index[b]).collect();

    // Ops: op nodes in schedule order.
    let mut op_index = vec![usize::MAX; n];
    let mut ops: Vec<TraceOp> = Vec::new();
    for &i in sol.order.iter().filter(|&&i| i < n) {
        if let NodeKind::Op { pipe, bufs, .. } = &k.nodes[i].kind {
            op_index[i] = ops.len();
            let tensors: Vec<usize> = bufs
                .iter()
                .filter_map(|b| k.buf_index.get(b).copied())
                .collect();
            ops.push(TraceOp {
                id: ops.len(),
                name: compact_str::format_compact!("{}#{i}", k.nodes[i].op),
                op_type: k.nodes[i].op.clone().into(),
                start_ns: span[i].0,
                end_ns: span[i].1,
                stall_ns: 0,
                inputs: tensors.clone(),
                outputs: Vec::new(),
                streamed: Vec::new(),
                flops: None,
                bound: None,
                unit: Some(Unit(pipe.as_str().into())),
                parent: None,
                self_ns: None,
                contention_ns: None,
            });
        }
    }
    let tensors: Vec<TraceTensor> = k
        .buffers
        .iter()
        .enumerate()
        .map(|(bi, b)| {
            let mut consumers: Vec<usize> = b
                .users
                .iter()
                .map(|&u| op_index[u])
                .filter(|&x| x != usize::MAX)
                .collect();
            consumers.sort_unstable();
            TraceTensor {
                id: bi,
                name: compact_str::format_compact!("buf{}", b.id),
                bytes: b.size,
                kind: if b.copy_in {
                    TensorKind::Input
                } else {
                    TensorKind::Activation
                },
                pool: b.ty.as_str().into(),
                producer: consumers.first().copied(),
                consumers,
            }
        })
        .collect();
    // Events.
    let mut events: Vec<Event> = Vec::new();
    let mut offset_now: Vec<u64> = vec![0; k.buffers.len()];
    for &(buf, off) in &sol.offsets {
        if let Some(&b) = k.buf_index.get(&buf) {
            offset_now[b] = off;
        }
    }
    // The op a memory node belongs to: the first op after it in the
    // schedule (or the last op), one backward pass.
    let mut next_op: Vec<Option<usize>> = vec![ops.len().checked_sub(1); sol.order.len() + 1];
    for p in (0..sol.order.len()).rev() {
        let x = sol.order[p];
        next_op[p] = if x < n && op_index[x] != usize::MAX {
            Some(op_index[x])
        } else {
            next_op[p + 1]
        };
    }
    let near_op = |i: usize| next_op[pos[i]];
    let ev = |t: u64, kind: EventKind, b: usize, off: u64, op: Option<usize>| Event {
        offset: Some(off),
        op,
        ..Event::plain(t, kind, b, k.buffers[b].size, k.buffers[b].ty.as_str())
    };
    for &i in &sol.order {
        if i >= n {
            let s = (i - n) / 2;
            let b = spill_buf[s];
            let mut e = if (i - n).is_multiple_of(2) {
                let mut e = ev(span[i].1, EventKind::Evict, b, offset_now[b], near_op(i));
                e.reason = Some("spill".into());
                // A copied-in buffer still has its DDR copy: nothing is written.
                let buf = &k.buffers[b];
                e.written_bytes = Some(if buf.copy_in { 0 } else { buf.size });
                e
            } else {
                offset_now[b] = sol.spills[s].1;
                let mut e = ev(span[i].0, EventKind::Reload, b, offset_now[b], near_op(i));
                e.reason = Some("spill".into());
                e
            };
            e.dma_start_ns = Some(span[i].0);
            e.dma_end_ns = Some(span[i].1);
            events.push(e);
            continue;
        }
        match &k.nodes[i].kind {
            NodeKind::Alloc { buf, .. } => {
                let b = k.buf_index[buf];
                events.push(ev(
                    span[i].0,
                    EventKind::Alloc,
                    b,
                    offset_now[b],
                    near_op(i),
                ));
            }
            NodeKind::Free { buf, .. } => {
                let b = k.buf_index[buf];
                events.push(ev(span[i].0, EventKind::Free, b, offset_now[b], near_op(i)));
            }
            _ => {}
        }
    }
    // Time order; at equal times by the op they belong to (the verifier's
    // checkpoint rule), frees and evictions before placements.
    let rank = |k: EventKind| match k {
        EventKind::Free | EventKind::Evict => 0,
        _ => 1,
    };
    events.sort_by_key(|e| (e.t_ns, e.op, rank(e.kind)));
    // Resident bytes over time, L1 + UB (the residency the benchmark counts).
    let mut resident: Vec<(u64, f64)> = Vec::new();
    let l1_ub = events
        .iter()
        .filter(|e| !k.buffers[e.tensor].ty.is_l0())
        .map(|e| crate::trace::residency::kind_delta(&e.row()));
    for (t, cur) in crate::trace::residency::walk(l1_ub) {
        match resident.last_mut() {
            Some(last) if last.0 == t => last.1 = cur as f64,
            _ => resident.push((t, cur as f64)),
        }
    }
    let peak_resident = resident.iter().map(|s| s.1 as u64).max().unwrap_or(0);
    // The ledger fields are filled from the events below.
    let summary = Summary {
        latency_ns: latency,
        peak_live_bytes: m.peak_residency,
        peak_resident_bytes: peak_resident,
        capacity_bytes: BufType::L1.capacity() + BufType::Ub.capacity(),
        ..Summary::default()
    };
    let mut tr = Trace {
        schema: SCHEMA.into(),
        source: Source::Simulator,
        meta: Meta {
            model: k.name.clone(),
            policy: "npu".into(),
            producer: Producer::NpuCase(NpuCaseInfo {
                time_unit: "cycles".into(),
                capacities: BufType::ALL
                    .iter()
                    .map(|t| (t.as_str().to_string(), t.capacity()))
                    .collect(),
                total_cycles: m.total_cycles,
                extra_traffic: m.extra_traffic,
                peak_residency: m.peak_residency,
            }),
            tool_version: env!("CARGO_PKG_VERSION").into(),
        },
        pools: BufType::ALL
            .iter()
            .map(|t| Pool {
                name: t.as_str().into(),
                capacity_bytes: t.capacity(),
                alignment: 1,
            })
            .collect(),
        tensors: tensors.into(),
        ops: ops.into(),
        events: events.into(),
        counters: vec![Counter {
            name: "resident_bytes".into(),
            unit: "bytes".into(),
            pool: None,
            samples: resident,
        }],
        summary,
        recomputed: Vec::new(),
    };
    tr.fill_ledger();
    tr
}
