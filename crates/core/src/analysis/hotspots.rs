//! Per-operator (and per op type) ranking of where spill costs land, from
//! the ledger: each op's evictions (write-backs), reloads, streamed bytes
//! and stall, beside its share of the run; and, for runtime traces that
//! record no spills, where time and memory go: self and total time, bytes
//! and count of allocations, and bytes live at the peak.

pub(crate) use super::op_figures::{op_figures, OpFigures};
use crate::trace::ledger::Ledger;
use crate::trace::{Bound, Trace};
use serde::Serialize;

pub use super::hotspot_table::Hotspots;

/// One op's share of the spill cost (its parts of the ledger).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Hotspot {
    pub op: usize,
    /// The op's name and type (inline up to 24 bytes: a row per op, so a
    /// heap string each would cost a million allocations at 10^6 ops).
    pub name: compact_str::CompactString,
    pub op_type: compact_str::CompactString,
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
    /// The part of the stall spent waiting because another core held the
    /// DRAM bus (multi-core runs; 0 otherwise).
    pub contention_ns: u64,
    /// When it started (ops of a runtime trace often share a name: this
    /// tells them apart).
    pub start_ns: u64,
    pub duration_ns: u64,
    /// Op duration / end-to-end latency (on several cores, / latency x
    /// cores: a share of the time the cores ran).
    pub latency_share: f64,
    /// The roofline bound, if known.
    pub bound: Option<Bound>,
    /// FLOPs per operand byte, if FLOPs are known.
    pub intensity: Option<f64>,
    /// Time in the op outside the ops nested in it (= `duration_ns` when
    /// nothing is nested).
    pub self_ns: u64,
    /// Allocations made while it ran (`alloc` events naming it): bytes and
    /// count.
    pub alloc_bytes: u64,
    pub allocs: u64,
    /// Bytes it allocated that are still live at the trace's peak of live
    /// bytes (its contribution to the peak; 0 without frees).
    pub peak_bytes: u64,
    /// The ops this row stands for: 1, or the calls of one name when
    /// grouped by [`by_name`] (a runtime profile calls `aten::conv2d` once
    /// per layer).
    pub calls: u64,
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
    /// Waiting because another core held the bus (multi-core runs).
    Contention,
    Share,
    OpType,
    Bound,
    SelfTime,
    TotalTime,
    Allocated,
    Allocs,
    AtPeak,
    /// Start time (trace order).
    Start,
    /// The calls a row stands for (rows grouped by op name).
    Calls,
}

impl HotspotKey {
    pub const ALL: [HotspotKey; 16] = [
        HotspotKey::Traffic,
        HotspotKey::Evicted,
        HotspotKey::Reloaded,
        HotspotKey::Streamed,
        HotspotKey::Stall,
        HotspotKey::Contention,
        HotspotKey::Share,
        HotspotKey::OpType,
        HotspotKey::Bound,
        HotspotKey::SelfTime,
        HotspotKey::TotalTime,
        HotspotKey::Allocated,
        HotspotKey::Allocs,
        HotspotKey::AtPeak,
        HotspotKey::Start,
        HotspotKey::Calls,
    ];
    /// The keys for a trace with spill events (contention only where
    /// several cores ran: [`Self::for_trace`]).
    pub const SPILL: [HotspotKey; 9] = [
        HotspotKey::Traffic,
        HotspotKey::Evicted,
        HotspotKey::Reloaded,
        HotspotKey::Streamed,
        HotspotKey::Stall,
        HotspotKey::Contention,
        HotspotKey::Share,
        HotspotKey::OpType,
        HotspotKey::Bound,
    ];
    /// The keys for a trace without spill events: time and memory.
    pub const MEASURED: [HotspotKey; 7] = [
        HotspotKey::SelfTime,
        HotspotKey::TotalTime,
        HotspotKey::Allocated,
        HotspotKey::Allocs,
        HotspotKey::AtPeak,
        HotspotKey::Start,
        HotspotKey::OpType,
    ];
    /// [`Self::SPILL`] and [`Self::MEASURED`] for rows grouped by op name:
    /// the calls column sorts too.
    pub const SPILL_BY_NAME: [HotspotKey; 10] = [
        HotspotKey::Traffic,
        HotspotKey::Evicted,
        HotspotKey::Reloaded,
        HotspotKey::Streamed,
        HotspotKey::Stall,
        HotspotKey::Contention,
        HotspotKey::Share,
        HotspotKey::OpType,
        HotspotKey::Bound,
        HotspotKey::Calls,
    ];
    pub const MEASURED_BY_NAME: [HotspotKey; 8] = [
        HotspotKey::SelfTime,
        HotspotKey::TotalTime,
        HotspotKey::Allocated,
        HotspotKey::Allocs,
        HotspotKey::AtPeak,
        HotspotKey::Start,
        HotspotKey::OpType,
        HotspotKey::Calls,
    ];
    pub fn label(self) -> &'static str {
        match self {
            HotspotKey::Traffic => "traffic",
            HotspotKey::Evicted => "evicted",
            HotspotKey::Reloaded => "reloaded",
            HotspotKey::Streamed => "streamed",
            HotspotKey::Stall => "stall",
            HotspotKey::Contention => "bus contention",
            HotspotKey::Share => "share",
            HotspotKey::OpType => "type",
            HotspotKey::Bound => "bound",
            HotspotKey::SelfTime => "self time",
            HotspotKey::TotalTime => "total time",
            HotspotKey::Allocated => "allocated",
            HotspotKey::Allocs => "allocations",
            HotspotKey::AtPeak => "at peak",
            HotspotKey::Start => "start",
            HotspotKey::Calls => "calls",
        }
    }
    /// The keys of `keys` that mean something for a trace run on `cores`
    /// cores (contention only with several).
    pub fn for_cores(keys: &[HotspotKey], cores: u32) -> Vec<HotspotKey> {
        keys.iter()
            .copied()
            .filter(|&k| cores > 1 || k != HotspotKey::Contention)
            .collect()
    }

    pub fn next(self) -> Self {
        let i = Self::ALL.iter().position(|&k| k == self).unwrap_or(0);
        Self::ALL[(i + 1) % Self::ALL.len()]
    }
    /// The next key among `keys` (wrapping), the first when `self` is not
    /// one of them.
    pub fn next_in(self, keys: &[HotspotKey]) -> Self {
        match keys.iter().position(|&k| k == self) {
            Some(i) => keys[(i + 1) % keys.len()],
            None => keys.first().copied().unwrap_or(self),
        }
    }
}

/// Hotspots of every op, in op order (every row at once: for a table
/// kept while a trace is open, [`Hotspots`] holds a few bytes per op instead).
pub fn hotspots(tr: &Trace, ledger: &Ledger) -> Vec<Hotspot> {
    let latency = latency_ns(tr);
    let figures = op_figures(tr, ledger);
    (0..figures.len())
        .map(|i| row(tr, i, &figures.at(i), latency, true))
        .collect()
}

/// What a share of the run divides by: the end-to-end latency, on several
/// cores times the cores (every core's ops add up to at most 100 %, as on
/// one core).
pub(crate) fn latency_ns(tr: &Trace) -> f64 {
    tr.summary.latency_ns.max(1) as f64 * f64::from(tr.summary.cores.max(1))
}

/// Op `i`'s row: its own fields from the trace, the rest from `f`. A row
/// made only to be sorted (`whole` false) leaves out what no sort column
/// reads and costs the most: the name and type (copied) and the
/// intensity (a sum over the op's operands).
pub(crate) fn row(tr: &Trace, i: usize, f: &OpFigures, latency: f64, whole: bool) -> Hotspot {
    let o = tr.ops.at(i);
    let duration_ns = o.end_ns.saturating_sub(o.start_ns);
    let intensity = o.flops.filter(|_| whole).and_then(|flops| {
        let operand_bytes: u64 = o
            .inputs
            .iter()
            .chain(o.outputs.iter())
            .filter_map(|&t| tr.tensors.get(t))
            .map(|t| t.bytes)
            .sum();
        (operand_bytes > 0).then(|| flops / operand_bytes as f64)
    });
    Hotspot {
        op: o.id,
        name: if whole {
            o.name.into()
        } else {
            Default::default()
        },
        op_type: if whole {
            o.op_type.into()
        } else {
            Default::default()
        },
        evictions: u64::from(f.evictions),
        evicted_bytes: f.evicted_bytes,
        reloads: u64::from(f.reloads),
        reloaded_bytes: f.reloaded_bytes,
        streamed_in_bytes: f.streamed_in_bytes,
        streamed_out_bytes: f.streamed_out_bytes,
        traffic_bytes: f.traffic_bytes(),
        stall_ns: o.stall_ns,
        contention_ns: o.contention_ns.unwrap_or(0),
        start_ns: o.start_ns,
        duration_ns,
        latency_share: duration_ns as f64 / latency,
        bound: o.bound,
        intensity,
        self_ns: o.self_ns.unwrap_or(duration_ns),
        alloc_bytes: f.alloc_bytes,
        allocs: u64::from(f.allocs),
        peak_bytes: f.peak_bytes,
        calls: 1,
    }
}

/// [`by_name`] when some name is called more than once; empty when every
/// name is called once (the grouping would copy every row: at a million
/// ops, 100 MB for nothing).
pub fn by_name_if_repeated(hs: &[Hotspot]) -> Vec<Hotspot> {
    match names_repeat(hs.iter().map(|h| h.name.as_str())) {
        true => by_name(hs),
        false => Vec::new(),
    }
}

/// Whether some name comes more than once.
pub(crate) fn names_repeat<'a>(names: impl Iterator<Item = &'a str>) -> bool {
    let mut seen: std::collections::HashSet<&str> = Default::default();
    let mut names = names;
    names.any(|n| !seen.insert(n))
}

/// One row per op name, in order of first call: counts, bytes, times and
/// shares summed over the name's calls; `op` and `start_ns` are the first
/// call's; `bound` is kept when every call has the same one; `intensity`
/// is dropped (a mean of ratios would read as a figure no op has).
///
/// Summing time is honest because the ops of one trace do not overlap
/// their own name's calls at one nesting level (a profile folded to a level
/// holds that level only).
pub fn by_name(hs: &[Hotspot]) -> Vec<Hotspot> {
    group_by_name(hs.iter().cloned())
}

/// [`by_name`] over rows made one at a time (a [`Hotspots`] table's).
pub(crate) fn group_by_name(rows: impl Iterator<Item = Hotspot>) -> Vec<Hotspot> {
    let mut at: std::collections::HashMap<compact_str::CompactString, usize> = Default::default();
    let mut out: Vec<Hotspot> = Vec::new();
    for h in rows {
        let Some(&i) = at.get(h.name.as_str()) else {
            at.insert(h.name.clone(), out.len());
            out.push(Hotspot {
                intensity: None,
                ..h
            });
            continue;
        };
        let g = &mut out[i];
        g.calls += h.calls;
        g.evictions += h.evictions;
        g.evicted_bytes += h.evicted_bytes;
        g.reloads += h.reloads;
        g.reloaded_bytes += h.reloaded_bytes;
        g.streamed_in_bytes += h.streamed_in_bytes;
        g.streamed_out_bytes += h.streamed_out_bytes;
        g.traffic_bytes += h.traffic_bytes;
        g.stall_ns += h.stall_ns;
        g.contention_ns += h.contention_ns;
        g.duration_ns += h.duration_ns;
        g.latency_share += h.latency_share;
        g.self_ns += h.self_ns;
        g.alloc_bytes += h.alloc_bytes;
        g.allocs += h.allocs;
        g.peak_bytes += h.peak_bytes;
        if g.bound != h.bound {
            g.bound = None;
        }
        if h.op_type != g.op_type {
            g.op_type = "mixed".into();
        }
    }
    out
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
    let va = sort_value(a, &a.op_type, key);
    let vb = sort_value(b, &b.op_type, key);
    in_order(&va, &vb, ascending).then(a.op.cmp(&b.op))
}

/// A row's value in one sort column (the type passed apart: a table's
/// rows made only to be sorted borrow it from the trace).
#[derive(Debug, PartialEq, PartialOrd)]
pub(crate) enum SortValue<'a> {
    Count(u64),
    Share(f64),
    Text(&'a str),
    Bound(Option<Bound>),
}

pub(crate) fn sort_value<'a>(h: &Hotspot, op_type: &'a str, key: HotspotKey) -> SortValue<'a> {
    use SortValue::Count;
    match key {
        HotspotKey::Traffic => Count(h.traffic_bytes),
        HotspotKey::Evicted => Count(h.evicted_bytes),
        HotspotKey::Reloaded => Count(h.reloaded_bytes),
        HotspotKey::Streamed => Count(h.streamed_in_bytes + h.streamed_out_bytes),
        HotspotKey::Stall => Count(h.stall_ns),
        HotspotKey::Contention => Count(h.contention_ns),
        HotspotKey::Share => SortValue::Share(h.latency_share),
        HotspotKey::OpType => SortValue::Text(op_type),
        HotspotKey::Bound => SortValue::Bound(h.bound),
        HotspotKey::SelfTime => Count(h.self_ns),
        HotspotKey::TotalTime => Count(h.duration_ns),
        HotspotKey::Allocated => Count(h.alloc_bytes),
        HotspotKey::Allocs => Count(h.allocs),
        HotspotKey::AtPeak => Count(h.peak_bytes),
        HotspotKey::Start => Count(h.start_ns),
        HotspotKey::Calls => Count(h.calls),
    }
}

/// `a` against `b`, largest first unless `ascending` (a share that is not
/// a number ties).
pub(crate) fn in_order(a: &SortValue, b: &SortValue, ascending: bool) -> std::cmp::Ordering {
    let o = a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal);
    if ascending {
        o
    } else {
        o.reverse()
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
            op_type: h.op_type.to_string(),
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
