//! Vela's plan beside a spillscope run of the same `.tflite`: which feature
//! maps each leaves in DRAM, the DRAM feature-map bytes per op and in all,
//! and the lower bound beside both. Tensors match by name (Vela keeps the
//! TFLite names of the tensors it does not rewrite). Where Vela's graph is
//! not the TFLite graph (PAD fused into a convolution, softmax and mean
//! decomposed into several ops, reshapes removed, scratch and weight
//! buffers, channels padded to 16, cascades), the comparison says so and
//! leaves those tensors out of the agreement instead of counting them as
//! disagreement.

use crate::trace::import::vela::VelaInfo;
use crate::trace::ledger::{Ledger, Part};
use crate::trace::{Importer, Producer, TensorKind, Trace};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};

/// Why a tensor is not compared one to one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum GraphDifference {
    /// Vela split an op into several (softmax, mean): its intermediates.
    VelaSplit,
    /// Vela's op-local scratch (int32 accumulators, `#N`).
    VelaScratch,
    /// Vela's weight double buffers in SRAM.
    WeightBuffer,
    /// Matched, but Vela keeps a cascade's rolling buffer, smaller than the
    /// whole tensor.
    Cascaded,
    /// A TFLite tensor Vela fused into a neighbour and never stores (a PAD
    /// into a convolution, an activation into the op before it).
    FusedByVela,
    /// A reshape's output: Vela's graph has no such op.
    NotInVela,
    /// Matched, but Vela stores more bytes (channels padded to 16).
    Padded,
}

impl GraphDifference {
    pub fn describe(self) -> &'static str {
        match self {
            GraphDifference::VelaSplit => "Vela's own intermediates (softmax/mean decomposed)",
            GraphDifference::VelaScratch => "Vela's op-local scratch",
            GraphDifference::WeightBuffer => "Vela's weight buffers",
            GraphDifference::Cascaded => "cascaded by Vela (a rolling buffer, never whole)",
            GraphDifference::FusedByVela => "fused by Vela into a neighbour (never stored)",
            GraphDifference::NotInVela => "reshapes Vela removes",
            GraphDifference::Padded => "padded by Vela (NHCWB16 channels)",
        }
    }
}

/// One op's DRAM feature-map bytes on both sides.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OpBytes {
    /// The op's output tensor (the name both sides share).
    pub output: String,
    pub vela_bytes: u64,
    pub sim_bytes: u64,
}

/// Vela's plan against a spillscope run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VelaComparison {
    pub vela: VelaInfo,
    pub sim_policy: String,
    pub sim_capacity_bytes: u64,
    /// Intermediate feature maps found on both sides.
    pub matched: usize,
    /// Of those, how many both leave on chip / both spill / only one spills.
    pub both_on_chip: usize,
    pub both_spilled: Vec<String>,
    pub only_vela_spilled: Vec<String>,
    pub only_sim_spilled: Vec<String>,
    /// Same decision / matched, percent.
    pub agreement_pct: f64,
    /// DRAM feature-map bytes of the matched intermediates, like for like:
    /// Vela's raw stream bytes, spillscope's ledger traffic.
    pub vela_matched_bytes: u64,
    pub sim_matched_bytes: u64,
    /// DRAM feature-map bytes of all intermediates (graph input and output
    /// apart), the tensors only one side has included.
    pub vela_dram_bytes: u64,
    pub sim_dram_bytes: u64,
    /// Graph input reads and output writes in DRAM, which Vela always does
    /// and spillscope counts as input loads / does not do (output on chip).
    pub vela_io_bytes: u64,
    pub sim_io_bytes: u64,
    /// The spillscope run's lower bound on its traffic at the same SRAM.
    pub bound_bytes: u64,
    pub bound_method: String,
    pub ops: Vec<OpBytes>,
    /// Bytes of the .tflite's tensors Vela's graph never stores (fused,
    /// reshapes).
    pub not_stored_bytes: u64,
    /// Tensors left out of the agreement, by reason.
    pub differences: BTreeMap<String, Vec<String>>,
}

/// Vela's info when `tr` is an imported Vela plan.
pub fn vela_info(tr: &Trace) -> Option<&VelaInfo> {
    match &tr.meta.producer {
        Producer::Instrumented(i) if i.importer == Importer::Vela => i.vela.as_deref(),
        _ => None,
    }
}

/// Per tensor: DRAM bytes moved (feature maps only, from the ledger, so
/// input loads count as the summary counts them) and whether it ever lived
/// in DRAM while live (evicted or streamed out); per op the bytes of its
/// intermediates.
pub(crate) fn dram_use(tr: &Trace) -> (Vec<u64>, Vec<bool>, Vec<u64>) {
    let n = tr.tensors.len();
    let (mut bytes, mut spilled, mut per_op) =
        (vec![0u64; n], vec![false; n], vec![0u64; tr.ops.len()]);
    Ledger::of(tr).each(tr, |part, t, op, moved| {
        let Some(tt) = tr.tensors.get(t) else {
            return;
        };
        if tt.kind == TensorKind::Weight {
            return;
        }
        bytes[t] += moved;
        if matches!(part, Part::EvictedOut | Part::StreamedOut) {
            spilled[t] = true;
        }
        let intermediate = !matches!(tt.kind, TensorKind::Input | TensorKind::Output);
        if let (Some(o), true) = (op, intermediate) {
            if let Some(x) = per_op.get_mut(o) {
                *x += moved;
            }
        }
    });
    (bytes, spilled, per_op)
}

/// Why a Vela-only tensor has no TFLite counterpart.
fn vela_only_reason(name: &str) -> GraphDifference {
    if name.starts_with("WB_") {
        GraphDifference::WeightBuffer
    } else if name.starts_with('#') {
        GraphDifference::VelaScratch
    } else {
        GraphDifference::VelaSplit
    }
}

/// Compares Vela's imported plan `v` with spillscope's run `s`.
pub fn compare(v: &Trace, s: &Trace) -> Option<VelaComparison> {
    let info = vela_info(v)?.clone();
    let (vb, vs, vop) = dram_use(v);
    let (sb, ss, sop) = dram_use(s);
    let s_by_name: HashMap<&str, usize> = s.tensors.iter().map(|t| (t.name, t.id)).collect();
    let mut differences: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut note = |d: GraphDifference, name: &str| {
        differences
            .entry(d.describe().to_string())
            .or_default()
            .push(name.to_string());
    };
    let (mut matched, mut both_on_chip) = (0, 0);
    let (mut both, mut only_v, mut only_s) = (Vec::new(), Vec::new(), Vec::new());
    let mut seen_in_sim = vec![false; s.tensors.len()];
    let io = |k: TensorKind| matches!(k, TensorKind::Input | TensorKind::Output);
    let (mut vela_io, mut vela_dram) = (0u64, 0u64);
    let (mut vela_matched, mut sim_matched) = (0u64, 0u64);
    for t in v.tensors.iter().filter(|t| t.kind != TensorKind::Weight) {
        if io(t.kind) {
            vela_io += vb[t.id];
        } else {
            vela_dram += vb[t.id];
        }
        let Some(&si) = s_by_name.get(t.name) else {
            if !io(t.kind) {
                note(vela_only_reason(t.name), t.name);
            }
            continue;
        };
        seen_in_sim[si] = true;
        if io(t.kind) || io(s.tensors.at(si).kind) {
            continue;
        }
        if t.bytes > s.tensors.at(si).bytes {
            note(GraphDifference::Padded, t.name);
        } else if t.bytes < s.tensors.at(si).bytes && info.cascades > 0 {
            note(GraphDifference::Cascaded, t.name);
        }
        matched += 1;
        vela_matched += vb[t.id];
        sim_matched += sb[si];
        match (vs[t.id], ss[si]) {
            (false, false) => both_on_chip += 1,
            (true, true) => both.push(t.name.to_string()),
            (true, false) => only_v.push(t.name.to_string()),
            (false, true) => only_s.push(t.name.to_string()),
        }
    }
    let (mut sim_io, mut sim_dram) = (0u64, 0u64);
    let mut not_stored_bytes = 0u64;
    for t in s.tensors.iter().filter(|t| t.kind != TensorKind::Weight) {
        if io(t.kind) {
            sim_io += sb[t.id];
        } else {
            sim_dram += sb[t.id];
        }
        if seen_in_sim[t.id] {
            continue;
        }
        // Reshapes Vela drops; anything else it fused into a neighbour (a
        // PAD into a convolution, whose name then joins Vela's `A;;B/Pad`,
        // an activation into the op before it), so it is never stored.
        let reshape = t.producer.and_then(|p| s.ops.get(p)).is_some_and(|o| {
            matches!(
                o.op_type,
                "RESHAPE"
                    | "SQUEEZE"
                    | "EXPAND_DIMS"
                    | "Reshape"
                    | "Squeeze"
                    | "Unsqueeze"
                    | "Flatten"
            )
        });
        note(
            if reshape {
                GraphDifference::NotInVela
            } else {
                GraphDifference::FusedByVela
            },
            t.name,
        );
        not_stored_bytes += t.bytes;
    }
    let ops = op_rows(v, s, &vop, &sop);
    let agreement_pct = if matched == 0 {
        100.0
    } else {
        100.0 * (both_on_chip + both.len()) as f64 / matched as f64
    };
    Some(VelaComparison {
        vela: info,
        sim_policy: s.meta.policy.clone(),
        sim_capacity_bytes: s.summary.capacity_bytes,
        matched,
        both_on_chip,
        both_spilled: both,
        only_vela_spilled: only_v,
        only_sim_spilled: only_s,
        agreement_pct,
        vela_matched_bytes: vela_matched,
        sim_matched_bytes: sim_matched,
        vela_dram_bytes: vela_dram,
        sim_dram_bytes: sim_dram,
        vela_io_bytes: vela_io,
        sim_io_bytes: sim_io,
        bound_bytes: s.summary.lower_bound_traffic_bytes,
        bound_method: s.summary.lower_bound_method.as_str().to_string(),
        ops,
        not_stored_bytes,
        differences,
    })
}

/// Ops matched by their output tensor's name, sorted by |Vela - sim|.
fn op_rows(v: &Trace, s: &Trace, vop: &[u64], sop: &[u64]) -> Vec<OpBytes> {
    let out_name = |tr: &Trace, o: usize| -> Option<String> {
        (tr.ops
            .at(o)
            .outputs
            .first()
            .and_then(|&t| tr.tensors.get(t))
            .map(|t| t.name))
        .map(Into::into)
    };
    let mut s_ops: HashMap<String, usize> = HashMap::new();
    for o in 0..s.ops.len() {
        if let Some(n) = out_name(s, o) {
            s_ops.entry(n).or_insert(o);
        }
    }
    let mut rows: Vec<OpBytes> = Vec::new();
    let mut v_ops: HashMap<String, usize> = HashMap::new();
    for o in 0..v.ops.len() {
        if let Some(n) = out_name(v, o) {
            v_ops.entry(n).or_insert(o);
        }
    }
    let mut names: Vec<&String> = v_ops.keys().chain(s_ops.keys()).collect();
    names.sort();
    names.dedup();
    for n in names {
        let vb = v_ops.get(n).map(|&o| vop[o]).unwrap_or(0);
        let sb = s_ops.get(n).map(|&o| sop[o]).unwrap_or(0);
        if vb > 0 || sb > 0 {
            rows.push(OpBytes {
                output: n.clone(),
                vela_bytes: vb,
                sim_bytes: sb,
            });
        }
    }
    rows.sort_by_key(|r| {
        std::cmp::Reverse((r.vela_bytes as i64 - r.sim_bytes as i64).unsigned_abs())
    });
    rows
}
