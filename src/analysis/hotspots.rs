//! Per-operator (and per op type) ranking of where spill costs land.

use crate::trace::{Bound, EventKind, TensorKind, Trace};
use serde::Serialize;

/// One op's share of the spill cost.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Hotspot {
    pub op: usize,
    pub name: String,
    pub op_type: String,
    /// Bytes written to DRAM while it ran (evictions it caused + streamed outputs).
    pub spilled_bytes: u64,
    /// Reloads it needed (reload events + streamed activation inputs).
    pub reloads: u64,
    pub reloaded_bytes: u64,
    pub stall_ns: u64,
    pub duration_ns: u64,
    /// Op duration / end-to-end latency.
    pub latency_share: f64,
    /// The roofline bound, if known.
    pub bound: Option<Bound>,
    /// FLOPs per operand byte, if FLOPs are known.
    pub intensity: Option<f64>,
}

/// Which column the hotspot table is sorted by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
pub enum HotspotKey {
    #[default]
    Spilled,
    Reloads,
    Stall,
    Share,
    OpType,
    Bound,
}

impl HotspotKey {
    pub const ALL: [HotspotKey; 6] = [
        HotspotKey::Spilled,
        HotspotKey::Reloads,
        HotspotKey::Stall,
        HotspotKey::Share,
        HotspotKey::OpType,
        HotspotKey::Bound,
    ];
    pub fn label(self) -> &'static str {
        match self {
            HotspotKey::Spilled => "spilled",
            HotspotKey::Reloads => "reloads",
            HotspotKey::Stall => "stall",
            HotspotKey::Share => "share",
            HotspotKey::OpType => "type",
            HotspotKey::Bound => "bound",
        }
    }
    pub fn next(self) -> Self {
        let i = Self::ALL.iter().position(|&k| k == self).unwrap_or(0);
        Self::ALL[(i + 1) % Self::ALL.len()]
    }
}

/// Hotspots of every op, in op order.
pub fn hotspots(tr: &Trace) -> Vec<Hotspot> {
    let latency = tr.summary.latency_ns.max(1) as f64;
    let mut hs: Vec<Hotspot> = tr
        .ops
        .iter()
        .map(|o| {
            let operand_bytes: u64 = o
                .inputs
                .iter()
                .chain(o.outputs.iter())
                .filter_map(|&t| tr.tensors.get(t))
                .map(|t| t.bytes)
                .sum();
            let mut h = Hotspot {
                op: o.id,
                name: o.name.clone(),
                op_type: o.op_type.clone(),
                spilled_bytes: 0,
                reloads: 0,
                reloaded_bytes: 0,
                stall_ns: o.stall_ns,
                duration_ns: o.end_ns.saturating_sub(o.start_ns),
                latency_share: o.end_ns.saturating_sub(o.start_ns) as f64 / latency,
                bound: o.bound,
                intensity: o
                    .flops
                    .filter(|_| operand_bytes > 0)
                    .map(|f| f / operand_bytes as f64),
            };
            for &t in &o.streamed {
                let Some(tt) = tr.tensors.get(t) else {
                    continue;
                };
                if o.outputs.contains(&t) {
                    h.spilled_bytes += tt.bytes;
                } else if tt.kind != TensorKind::Weight {
                    h.reloads += 1;
                    h.reloaded_bytes += tt.bytes;
                }
            }
            h
        })
        .collect();
    for e in &tr.events {
        let Some(h) = e.op.and_then(|o| hs.get_mut(o)) else {
            continue;
        };
        match e.kind {
            EventKind::Evict if e.dma_start_ns.is_some() => h.spilled_bytes += e.bytes,
            EventKind::Reload => {
                h.reloads += 1;
                h.reloaded_bytes += e.bytes;
            }
            _ => {}
        }
    }
    hs
}

/// Sorts hotspots by `key`, largest first unless `ascending`.
pub fn sort_hotspots(hs: &mut [Hotspot], key: HotspotKey, ascending: bool) {
    hs.sort_by(|a, b| compare(a, b, key, ascending));
}

/// Display order (indices into `hs`) by `key`, without moving the rows.
pub fn order_hotspots(hs: &[Hotspot], key: HotspotKey, ascending: bool) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..hs.len()).collect();
    idx.sort_by(|&a, &b| compare(&hs[a], &hs[b], key, ascending));
    idx
}

fn compare(a: &Hotspot, b: &Hotspot, key: HotspotKey, ascending: bool) -> std::cmp::Ordering {
    {
        let o = match key {
            HotspotKey::Spilled => a.spilled_bytes.cmp(&b.spilled_bytes),
            HotspotKey::Reloads => a.reloads.cmp(&b.reloads),
            HotspotKey::Stall => a.stall_ns.cmp(&b.stall_ns),
            HotspotKey::Share => a
                .latency_share
                .partial_cmp(&b.latency_share)
                .unwrap_or(std::cmp::Ordering::Equal),
            HotspotKey::OpType => a.op_type.cmp(&b.op_type),
            HotspotKey::Bound => a.bound.cmp(&b.bound),
        };
        let o = if ascending { o } else { o.reverse() };
        o.then(a.op.cmp(&b.op))
    }
}

/// Totals per op type, sorted by spilled + reloaded bytes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TypeHotspot {
    pub op_type: String,
    pub ops: usize,
    pub spilled_bytes: u64,
    pub reloaded_bytes: u64,
    pub stall_ns: u64,
    pub latency_share: f64,
}

pub fn by_op_type(hs: &[Hotspot]) -> Vec<TypeHotspot> {
    let mut m: std::collections::BTreeMap<&str, TypeHotspot> = Default::default();
    for h in hs {
        let e = m.entry(h.op_type.as_str()).or_insert_with(|| TypeHotspot {
            op_type: h.op_type.clone(),
            ops: 0,
            spilled_bytes: 0,
            reloaded_bytes: 0,
            stall_ns: 0,
            latency_share: 0.0,
        });
        e.ops += 1;
        e.spilled_bytes += h.spilled_bytes;
        e.reloaded_bytes += h.reloaded_bytes;
        e.stall_ns += h.stall_ns;
        e.latency_share += h.latency_share;
    }
    let mut v: Vec<TypeHotspot> = m.into_values().collect();
    v.sort_by(|a, b| {
        (b.spilled_bytes + b.reloaded_bytes)
            .cmp(&(a.spilled_bytes + a.reloaded_bytes))
            .then(b.stall_ns.cmp(&a.stall_ns))
    });
    v
}
