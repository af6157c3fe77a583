//! Per-operator (and per op type) ranking of where spill costs land, from
//! the ledger: each op's evictions (write-backs), reloads, streamed bytes
//! and stall, beside its share of the run.

use crate::trace::ledger::{Ledger, Part};
use crate::trace::{Bound, Trace};
use serde::Serialize;

/// One op's share of the spill cost (its parts of the ledger).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Hotspot {
    pub op: usize,
    pub name: String,
    pub op_type: String,
    /// Evictions it caused, and what they wrote back.
    pub evictions: u64,
    pub evicted_bytes: u64,
    /// Reloads it needed, and their bytes.
    pub reloads: u64,
    pub reloaded_bytes: u64,
    /// Bytes it streamed in (from a spilled copy) and out.
    pub streamed_in_bytes: u64,
    pub streamed_out_bytes: u64,
    /// The sum of its four spill parts.
    pub traffic_bytes: u64,
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
    /// All four spill parts.
    #[default]
    Traffic,
    /// Write-backs of the evictions it caused.
    Evicted,
    /// Reloaded bytes.
    Reloaded,
    /// Streamed in + out.
    Streamed,
    Stall,
    Share,
    OpType,
    Bound,
}

impl HotspotKey {
    pub const ALL: [HotspotKey; 8] = [
        HotspotKey::Traffic,
        HotspotKey::Evicted,
        HotspotKey::Reloaded,
        HotspotKey::Streamed,
        HotspotKey::Stall,
        HotspotKey::Share,
        HotspotKey::OpType,
        HotspotKey::Bound,
    ];
    pub fn label(self) -> &'static str {
        match self {
            HotspotKey::Traffic => "traffic",
            HotspotKey::Evicted => "evicted",
            HotspotKey::Reloaded => "reloaded",
            HotspotKey::Streamed => "streamed",
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
pub fn hotspots(tr: &Trace, ledger: &Ledger) -> Vec<Hotspot> {
    let latency = tr.summary.latency_ns.max(1) as f64;
    let per_op = ledger.per_op(tr);
    tr.ops
        .iter()
        .zip(per_op)
        .map(|(o, p)| {
            let operand_bytes: u64 = o
                .inputs
                .iter()
                .chain(o.outputs.iter())
                .filter_map(|&t| tr.tensors.get(t))
                .map(|t| t.bytes)
                .sum();
            Hotspot {
                op: o.id,
                name: o.name.clone(),
                op_type: o.op_type.clone(),
                evictions: p.get(Part::EvictedOut).count,
                evicted_bytes: p.get(Part::EvictedOut).bytes,
                reloads: p.get(Part::Reloaded).count,
                reloaded_bytes: p.get(Part::Reloaded).bytes,
                streamed_in_bytes: p.get(Part::StreamedIn).bytes,
                streamed_out_bytes: p.get(Part::StreamedOut).bytes,
                traffic_bytes: p.traffic_bytes(),
                stall_ns: o.stall_ns,
                duration_ns: o.end_ns.saturating_sub(o.start_ns),
                latency_share: o.end_ns.saturating_sub(o.start_ns) as f64 / latency,
                bound: o.bound,
                intensity: o
                    .flops
                    .filter(|_| operand_bytes > 0)
                    .map(|f| f / operand_bytes as f64),
            }
        })
        .collect()
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
            HotspotKey::Traffic => a.traffic_bytes.cmp(&b.traffic_bytes),
            HotspotKey::Evicted => a.evicted_bytes.cmp(&b.evicted_bytes),
            HotspotKey::Reloaded => a.reloaded_bytes.cmp(&b.reloaded_bytes),
            HotspotKey::Streamed => (a.streamed_in_bytes + a.streamed_out_bytes)
                .cmp(&(b.streamed_in_bytes + b.streamed_out_bytes)),
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

/// Totals per op type, sorted by spill traffic.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TypeHotspot {
    pub op_type: String,
    pub ops: usize,
    pub evicted_bytes: u64,
    pub reloaded_bytes: u64,
    pub streamed_bytes: u64,
    pub traffic_bytes: u64,
    pub stall_ns: u64,
    pub latency_share: f64,
}

pub fn by_op_type(hs: &[Hotspot]) -> Vec<TypeHotspot> {
    let mut m: std::collections::BTreeMap<&str, TypeHotspot> = Default::default();
    for h in hs {
        let e = m.entry(h.op_type.as_str()).or_insert_with(|| TypeHotspot {
            op_type: h.op_type.clone(),
            ops: 0,
            evicted_bytes: 0,
            reloaded_bytes: 0,
            streamed_bytes: 0,
            traffic_bytes: 0,
            stall_ns: 0,
            latency_share: 0.0,
        });
        e.ops += 1;
        e.evicted_bytes += h.evicted_bytes;
        e.reloaded_bytes += h.reloaded_bytes;
        e.streamed_bytes += h.streamed_in_bytes + h.streamed_out_bytes;
        e.traffic_bytes += h.traffic_bytes;
        e.stall_ns += h.stall_ns;
        e.latency_share += h.latency_share;
    }
    let mut v: Vec<TypeHotspot> = m.into_values().collect();
    v.sort_by(|a, b| {
        b.traffic_bytes
            .cmp(&a.traffic_bytes)
            .then(b.stall_ns.cmp(&a.stall_ns))
    });
    v
}
