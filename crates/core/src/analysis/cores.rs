//! Per-core figures of a multi-core run (`--cores`): where the ops ran
//! (the placement a `--split graph` list schedule chose, which a schedule
//! config's `[placement]` can pin), how busy each core was, and how much
//! of its stall the shared bus cost. A multi-core trace names core c's
//! ops `core{c}/NAME` and gives them the unit `core{c}`; nothing else is
//! needed, so a trace read back gives the same rows.

use super::hotspots::Hotspot;
use crate::trace::{OpRef, Trace};
use serde::Serialize;
use std::collections::BTreeMap;

/// One core's share of a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CoreRow {
    pub core: u32,
    /// Ops it ran.
    pub ops: u64,
    /// Its first and last op by start time (graph names).
    pub first_op: String,
    pub last_op: String,
    /// Time its ops took, stalls included; `busy_ns / latency` is how much
    /// of the run the core worked.
    pub busy_ns: u64,
    pub stall_ns: u64,
    /// The part of `stall_ns` spent waiting because another core held the
    /// bus.
    pub contention_ns: u64,
    /// Its ops' spill traffic (the ledger's, per op, summed).
    pub traffic_bytes: u64,
}

/// The core an op of a multi-core trace ran on (its unit `core{c}`).
pub fn core_of(o: OpRef<'_>) -> Option<u32> {
    o.unit
        .as_ref()?
        .as_str()
        .strip_prefix("core")?
        .split('/')
        .next()?
        .parse()
        .ok()
}

/// Each core's row, in core order; empty for a run on one core. `hs` is
/// the trace's hotspots (one per op, in op order).
pub fn per_core(tr: &Trace, hs: &[Hotspot]) -> Vec<CoreRow> {
    let cores = tr.summary.cores;
    if cores < 2 {
        return Vec::new();
    }
    let mut rows: Vec<CoreRow> = (0..cores)
        .map(|core| CoreRow {
            core,
            ops: 0,
            first_op: String::new(),
            last_op: String::new(),
            busy_ns: 0,
            stall_ns: 0,
            contention_ns: 0,
            traffic_bytes: 0,
        })
        .collect();
    // (start, op index) of each core's first and last op.
    type Span = Option<((u64, usize), (u64, usize))>;
    let mut span: Vec<Span> = vec![None; cores as usize];
    for (i, o) in tr.ops.iter().enumerate() {
        let Some(c) = core_of(o).filter(|&c| c < cores) else {
            continue;
        };
        let r = &mut rows[c as usize];
        r.ops += 1;
        r.busy_ns += o.end_ns.saturating_sub(o.start_ns);
        r.stall_ns += o.stall_ns;
        r.contention_ns += o.contention_ns.unwrap_or(0);
        r.traffic_bytes += hs.get(i).map_or(0, |h| h.traffic_bytes);
        let s = &mut span[c as usize];
        let key = (o.start_ns, i);
        *s = Some(match *s {
            None => (key, key),
            Some((lo, hi)) => (lo.min(key), hi.max(key)),
        });
    }
    for (r, s) in rows.iter_mut().zip(span) {
        if let Some(((_, a), (_, b))) = s {
            r.first_op = graph_op(tr.ops.at(a)).to_string();
            r.last_op = graph_op(tr.ops.at(b)).to_string();
        }
    }
    rows
}

/// The graph's name of an op of a multi-core trace.
fn graph_op<'a>(o: OpRef<'a>) -> &'a str {
    crate::sim::cores::graph_name(o.name)
}

/// Where each of the graph's ops ran: op name -> core, as a schedule
/// config's `[placement]` takes it (so a placement found once can be
/// pinned). Empty unless the run split the graph over cores: under a
/// batch split every core runs every op.
pub fn placement(tr: &Trace) -> BTreeMap<String, u32> {
    let mut out = BTreeMap::new();
    if tr.summary.cores < 2 {
        return out;
    }
    for o in &tr.ops {
        if let Some(c) = core_of(o) {
            if out.insert(graph_op(o).to_string(), c).is_some() {
                // An op on two cores: a batch split, no placement.
                return BTreeMap::new();
            }
        }
    }
    out
}
