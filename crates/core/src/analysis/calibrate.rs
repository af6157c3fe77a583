//! Checking the simulator against reality: measured per-op durations from a
//! runtime profile replace the roofline estimate (`sim --calibrate`), and the
//! report says how far the estimate was, per op type. Also liveness from
//! reality: free points taken from an instrumented trace (`--free-at`).

use crate::cost::{op_time_ns, HardwareProfile};
use crate::graph::Graph;
use crate::trace::{EventKind, Trace};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};

/// Measured duration per op name (the first occurrence of each name).
pub fn measured_durations(tr: &Trace) -> HashMap<String, u64> {
    let mut m = HashMap::new();
    for o in &tr.ops {
        m.entry(o.name.to_string())
            .or_insert(o.end_ns.saturating_sub(o.start_ns));
    }
    m
}

/// Roofline estimate vs measurement for one op type.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TypeCalibration {
    pub op_type: String,
    pub ops: usize,
    pub roofline_ns: u64,
    pub measured_ns: u64,
    /// measured / roofline: above 1 the roofline was optimistic.
    pub ratio: f64,
}

/// Per op type, over the graph ops that have a measurement.
pub fn roofline_vs_measured(
    g: &Graph,
    hw: &HardwareProfile,
    measured: &HashMap<String, u64>,
) -> (Vec<TypeCalibration>, usize) {
    let mut by: BTreeMap<String, (usize, f64, u64)> = BTreeMap::new();
    let mut matched = 0;
    for o in &g.ops {
        let Some(&m) = measured.get(o.name) else {
            continue;
        };
        matched += 1;
        let bytes: u64 = g.operands(o.id).iter().map(|&t| g.tensors.bytes(t)).sum();
        let r = op_time_ns(hw, o.flops, bytes).time_ns;
        let e = by.entry(o.op_type.into()).or_default();
        e.0 += 1;
        e.1 += r;
        e.2 += m;
    }
    let mut v: Vec<TypeCalibration> = by
        .into_iter()
        .map(|(op_type, (ops, r, m))| TypeCalibration {
            op_type,
            ops,
            roofline_ns: r.round() as u64,
            measured_ns: m,
            ratio: if r > 0.0 { m as f64 / r } else { 0.0 },
        })
        .collect();
    v.sort_by_key(|t| std::cmp::Reverse(t.measured_ns));
    (v, matched)
}

/// `(tensor name, step)` free points from an instrumented trace: the step
/// of the graph op (matched by name) during which the runtime freed it.
pub fn free_points(g: &Graph, tr: &Trace) -> Vec<(String, usize)> {
    let step: HashMap<&str, usize> = g.ops.iter().map(|o| (o.name, o.id)).collect();
    let mut out: HashMap<String, usize> = HashMap::new();
    for e in tr.events.iter().filter(|e| e.kind == EventKind::Free) {
        let (Some(t), Some(op)) = (tr.tensors.get(e.tensor), e.op.and_then(|o| tr.ops.get(o)))
        else {
            continue;
        };
        if g.tensor_by_name(t.name).is_none() {
            continue;
        }
        if let Some(&s) = step.get(op.name) {
            let v = out.entry(t.name.into()).or_insert(s);
            *v = (*v).max(s);
        }
    }
    let mut v: Vec<(String, usize)> = out.into_iter().collect();
    v.sort();
    v
}
