//! Eviction → reload round trips per tensor, and oscillation: a tensor that
//! bounces out and back again and again (the seed's 72 round trips of one
//! residual tensor under LRU).

use crate::trace::{EventKind, Trace};
use serde::Serialize;

/// One trip out to DRAM and back.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RoundTrip {
    pub tensor: usize,
    pub bytes: u64,
    pub evict_t_ns: u64,
    pub evict_op: Option<usize>,
    /// `None` if it never came back.
    pub reload_t_ns: Option<u64>,
    pub reload_op: Option<usize>,
    /// Ops that ran between the eviction and the reload.
    pub ops_skipped: usize,
    /// Whether the eviction wrote the tensor out (dirty) or just dropped it.
    pub written: bool,
}

/// A tensor's round trips with its totals and oscillation flag.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TensorTrips {
    pub tensor: usize,
    pub name: String,
    pub bytes: u64,
    pub trips: Vec<RoundTrip>,
    /// Bytes moved by its trips (written + read back).
    pub bytes_moved: u64,
    /// Stall of the ops that waited for its reloads.
    pub stall_ns: u64,
    pub oscillating: bool,
    /// Ops during which it was pushed out, most frequent first.
    pub evicted_by: Vec<(usize, usize)>,
}

/// How many round trips make a tensor "oscillating".
pub const OSCILLATION_TRIPS: usize = 3;

/// All round trips, grouped per tensor, sorted by bytes moved (largest first).
pub fn round_trips(tr: &Trace) -> Vec<TensorTrips> {
    let n = tr.tensors.len();
    let mut open: Vec<Option<RoundTrip>> = vec![None; n];
    let mut per: Vec<Vec<RoundTrip>> = vec![Vec::new(); n];
    for e in &tr.events {
        if e.tensor >= n {
            continue;
        }
        match e.kind {
            EventKind::Evict => {
                if let Some(rt) = open[e.tensor].take() {
                    per[e.tensor].push(rt);
                }
                open[e.tensor] = Some(RoundTrip {
                    tensor: e.tensor,
                    bytes: e.bytes,
                    evict_t_ns: e.t_ns,
                    evict_op: e.op,
                    reload_t_ns: None,
                    reload_op: None,
                    ops_skipped: 0,
                    written: e.dma_start_ns.is_some(),
                });
            }
            EventKind::Reload => {
                if let Some(mut rt) = open[e.tensor].take() {
                    rt.reload_t_ns = Some(e.t_ns);
                    rt.reload_op = e.op;
                    rt.ops_skipped = match (rt.evict_op, e.op) {
                        (Some(a), Some(b)) if b > a => b - a - 1,
                        _ => 0,
                    };
                    per[e.tensor].push(rt);
                }
            }
            _ => {}
        }
    }
    for (t, rt) in open.into_iter().enumerate() {
        if let Some(rt) = rt {
            per[t].push(rt);
        }
    }
    let mut out: Vec<TensorTrips> = per
        .into_iter()
        .enumerate()
        .filter(|(_, v)| !v.is_empty())
        .map(|(t, trips)| {
            let bytes_moved = trips
                .iter()
                .map(|r| if r.written { r.bytes } else { 0 } + if r.reload_t_ns.is_some() { r.bytes } else { 0 })
                .sum();
            let stall_ns = trips
                .iter()
                .filter_map(|r| r.reload_op)
                .filter_map(|o| tr.ops.get(o))
                .map(|o| o.stall_ns)
                .sum();
            let mut counts: std::collections::HashMap<usize, usize> = std::collections::HashMap::new();
            for r in &trips {
                if let Some(o) = r.evict_op {
                    *counts.entry(o).or_default() += 1;
                }
            }
            let mut by: Vec<(usize, usize)> = counts.into_iter().collect();
            by.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
            let completed = trips.iter().filter(|r| r.reload_t_ns.is_some()).count();
            TensorTrips {
                tensor: t,
                name: tr.tensors[t].name.clone(),
                bytes: tr.tensors[t].bytes,
                oscillating: completed >= OSCILLATION_TRIPS,
                trips,
                bytes_moved,
                stall_ns,
                evicted_by: by,
            }
        })
        .collect();
    out.sort_by(|a, b| {
        b.bytes_moved
            .cmp(&a.bytes_moved)
            .then(b.trips.len().cmp(&a.trips.len()))
            .then(a.tensor.cmp(&b.tensor))
    });
    out
}
