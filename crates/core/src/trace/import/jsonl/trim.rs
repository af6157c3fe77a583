//! Bounding a live stream's memory: once a stream holds more events than
//! its window keeps, the oldest fall out into running totals
//! ([`crate::trace::window`]) and the ops and tensors nothing in the
//! window refers to go with them.
//!
//! Events are classified as they fall out with the same rules the whole
//! trace's replay uses ([`classify`], [`dram_after`]), in time order, and
//! each tensor's state after them is kept; so the totals plus the window's
//! own ledger are the whole stream's ledger. (An event that arrives after
//! events later than it already fell out is counted in arrival order.)

use crate::trace::build::TraceBuilder;
use crate::trace::ledger::{classify, Ledger, Moved, Parts};
use crate::trace::residency;
use crate::trace::verify::dram_after;
use crate::trace::window::StreamWindow;
use std::collections::{BTreeMap, HashMap, HashSet};

/// What fell out of a stream's window so far, on the stream's own clock.
#[derive(Debug, Clone, Default)]
pub(super) struct Retired {
    pub events: u64,
    pub ops: u64,
    /// The stream time the window starts at, once something fell out.
    pub cut_ns: Option<u64>,
    pub ledger: BTreeMap<String, Parts>,
    pub stall_ns: u64,
    pub peak_live: u64,
    pub high_water: BTreeMap<String, u64>,
    /// By the builder's tensor id: the tensor's state after the events that
    /// fell out (spilled before; DRAM holds a current copy).
    pub spilled: Vec<bool>,
    pub dram: Vec<bool>,
}

impl Retired {
    /// The window record of a trace kept to `keep` events whose time 0 is
    /// stream time `t0`.
    pub fn window(&self, keep: usize, t0: u64) -> StreamWindow {
        let ids = |v: &[bool]| -> Vec<usize> {
            v.iter()
                .enumerate()
                .filter_map(|(i, &on)| on.then_some(i))
                .collect()
        };
        StreamWindow {
            keep: keep as u64,
            from_ns: self.cut_ns.map_or(0, |c| c.saturating_sub(t0)),
            events_before: self.events,
            ops_before: self.ops,
            ledger_before: self.ledger.clone(),
            stall_before_ns: self.stall_ns,
            peak_live_before: self.peak_live,
            high_water_before: self.high_water.clone(),
            spilled_before: ids(&self.spilled),
            in_dram_before: ids(&self.dram),
        }
    }
}

/// How far past `keep` a stream may grow before it is trimmed back to
/// `keep`: a quarter more, so trimming (linear in the window) costs a
/// constant per event read.
fn limit(keep: usize) -> usize {
    keep.saturating_add(keep / 4).max(1)
}

/// Trims `b` back to about its last `keep` events and ops when it holds
/// more than a quarter over that. `open` holds the ops still running per
/// thread; they stay, renumbered.
pub(super) fn trim(
    b: &mut TraceBuilder,
    open: &mut HashMap<u64, Vec<usize>>,
    r: &mut Retired,
    keep: usize,
) {
    let over_events = b.events.len() > limit(keep);
    let over_ops = b.ops.len() > limit(keep);
    if !over_events && !over_ops {
        return;
    }
    b.events.sort_by_time();
    let mut cut = 0;
    if over_events {
        cut = b.events.t_ns(b.events.len() - keep.max(1));
    }
    if over_ops {
        cut = cut.max(b.ops[b.ops.len() - keep.max(1)].start_ns);
    }
    let split = b.events.partition_time(|t| t < cut);
    if split == 0 && !b.ops.iter().any(|o| o.end_ns < cut) {
        // Everything shares the latest time: nothing is older yet.
        return;
    }
    fold_peak(b, r, split);
    let rows = retire_events(b, r, split);
    let op_of = keep_ops(b, open, r, &rows, cut);
    let tensor_of = keep_tensors(b, r, &rows, &op_of);
    b.events.retain_rows(&rows);
    b.renumber(&op_of, &tensor_of);
    forget_streams(b);
    for list in [&mut r.spilled, &mut r.dram] {
        *list = (0..tensor_of.len())
            .filter(|&t| tensor_of[t].is_some())
            .map(|t| list[t])
            .collect();
    }
    for stack in open.values_mut() {
        for id in stack.iter_mut() {
            // Running ops are always kept.
            *id = op_of[*id].unwrap_or(*id);
        }
    }
    r.cut_ns = Some(r.cut_ns.map_or(cut, |c| c.max(cut)));
}

/// An op's `streamed` list names what its stream events streamed: where
/// those fell out of the window, so do the names (else the ledger would
/// derive them again from the list, as for traces without stream events).
fn forget_streams(b: &mut TraceBuilder) {
    let mut kept: HashSet<(usize, usize)> = HashSet::new();
    for e in b.events.iter().filter(|e| e.kind.is_stream()) {
        if let Some(o) = e.op {
            kept.insert((o, e.tensor));
        }
    }
    for o in &mut b.ops {
        let id = o.id;
        o.streamed.retain(|&t| kept.contains(&(id, t)));
    }
}

/// The highest resident bytes over the events before `split` joins the
/// peak of what fell out. (The window's own walk is exact from its start:
/// it keeps the placements of what was resident then.)
fn fold_peak(b: &TraceBuilder, r: &mut Retired, split: usize) {
    let deltas = residency::deltas(&b.events, &b.ops, b.tensors.len());
    let steps = b.events.times().zip(deltas);
    let peak = residency::walk(steps).take(split).map(|(_, v)| v).max();
    r.peak_live = r.peak_live.max(peak.unwrap_or(0));
}

/// Retires the events before `split`, except each resident tensor's events
/// since its last placement; returns the rows kept (in order).
fn retire_events(b: &mut TraceBuilder, r: &mut Retired, split: usize) -> Vec<u32> {
    let n_t = b.tensors.len();
    r.spilled.resize(n_t, false);
    r.dram.resize(n_t, false);
    // Each tensor's last placement before the window, if it is still
    // resident when the window starts.
    let mut placed: Vec<Option<usize>> = vec![None; n_t];
    for (i, e) in b.events.range(0..split).enumerate() {
        if e.kind.places() {
            placed[e.tensor] = Some(i);
        } else if e.kind.removes() {
            placed[e.tensor] = None;
        }
    }
    let mut rows = Vec::with_capacity(b.events.len() - split);
    for i in 0..b.events.len() {
        let t = b.events.tensor(i);
        if i >= split || placed.get(t).copied().flatten().is_some_and(|p| i >= p) {
            rows.push(i as u32);
            continue;
        }
        let e = b.events.at(i);
        let kind = b
            .tensors
            .get(t)
            .map_or(crate::graph::TensorKind::Activation, |x| x.kind);
        if let Some(p) = classify(kind, &mut r.spilled[t], &Moved::of(&e)) {
            r.ledger
                .entry(e.pool.to_string())
                .or_default()
                .add(p, Ledger::bytes(&e));
        }
        r.dram[t] = dram_after(kind, r.dram[t], &e);
        if let Some(off) = e.offset {
            let hw = r.high_water.entry(e.pool.to_string()).or_default();
            *hw = (*hw).max(off.saturating_add(e.bytes));
        }
        if !b.pools.iter().any(|p| p.name == e.pool) {
            // Its pool stays listed after its last event fell out.
            let pool = e.pool.to_string();
            b.pool(&pool, 0, 1);
        }
        r.events += 1;
    }
    rows
}

/// Which ops stay: those still running or ending at or after `cut`, those
/// a kept event belongs to, and their parents. The others fall out (their
/// stall joins the totals). Returns each op's new id.
fn keep_ops(
    b: &TraceBuilder,
    open: &HashMap<u64, Vec<usize>>,
    r: &mut Retired,
    rows: &[u32],
    cut: u64,
) -> Vec<Option<usize>> {
    let mut keep: Vec<bool> = b.ops.iter().map(|o| o.end_ns >= cut).collect();
    for &id in open.values().flatten() {
        keep[id] = true;
    }
    for &i in rows {
        if let Some(o) = b.events.at(i as usize).op.filter(|&o| o < keep.len()) {
            keep[o] = true;
        }
    }
    // Parents come before their children: one backward pass keeps every
    // ancestor of a kept op.
    for i in (0..b.ops.len()).rev() {
        if let Some(p) = b.ops[i].parent.filter(|_| keep[i]) {
            keep[p] = true;
        }
    }
    let mut next = 0;
    keep.iter()
        .zip(&b.ops)
        .map(|(&k, o)| {
            if k {
                next += 1;
                Some(next - 1)
            } else {
                r.ops += 1;
                r.stall_ns = r.stall_ns.saturating_add(o.stall_ns);
                None
            }
        })
        .collect()
}

/// Which tensors stay: those a kept event or op refers to, and those whose
/// history matters to what comes (spilled before, or in DRAM). Returns
/// each tensor's new id.
fn keep_tensors(
    b: &TraceBuilder,
    r: &Retired,
    rows: &[u32],
    op_of: &[Option<usize>],
) -> Vec<Option<usize>> {
    let mut keep: Vec<bool> = (0..b.tensors.len())
        .map(|t| r.spilled[t] || r.dram[t])
        .collect();
    for &i in rows {
        keep[b.events.tensor(i as usize)] = true;
    }
    for (o, _) in b.ops.iter().zip(op_of).filter(|(_, k)| k.is_some()) {
        for &t in o.inputs.iter().chain(&o.outputs).chain(&o.streamed) {
            if let Some(k) = keep.get_mut(t) {
                *k = true;
            }
        }
    }
    let mut next = 0;
    keep.iter()
        .map(|&k| {
            k.then(|| {
                next += 1;
                next - 1
            })
        })
        .collect()
}
