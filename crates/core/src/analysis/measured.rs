//! The figures a runtime profile can support, and only those: its latency,
//! where op time goes (ops at the level shown, their time against the run),
//! its allocations, the peak of live bytes when frees are recorded, the
//! allocator's own counters (ONNX Runtime), the spill ledger when the
//! runtime reports spills, what is missing and how to get it, and which
//! command builds a simulation calibrated with its op times. `import`, the
//! report and the explorer's Overview show this one summary.

use crate::trace::caps::{Capabilities, Missing};
use crate::trace::import::ort_link::LinkSummary;
use crate::trace::ledger::{Ledger, LedgerFields};
use crate::trace::{EventKind, Importer, Producer, Trace};
use crate::units::{count, fmt_bytes, fmt_ms};
use serde::Serialize;

/// A measured trace, summarised within what it records.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MeasuredSummary {
    pub model: String,
    pub importer: Option<Importer>,
    pub latency_ns: u64,
    /// Ops at the level shown (top-level calls for nested traces).
    pub ops: usize,
    /// Levels of nested calls among them (1: none nest; then the op time
    /// counts nested time again and its share means nothing).
    pub levels: u32,
    /// Their summed durations, and that over the run (at most 1 on one
    /// thread: ops at one level do not overlap).
    pub op_time_ns: u64,
    pub op_time_share: f64,
    pub allocations: u64,
    pub allocated_bytes: u64,
    /// With frees only: the peak of live bytes and when it was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peak_live_bytes: Option<u64>,
    /// The allocator's own counters, by name: their largest sample.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub allocator: Vec<(String, u64)>,
    /// When the runtime reports spills.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spill: Option<LedgerFields>,
    pub capabilities: Capabilities,
    pub missing: Vec<Missing>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub linked: Option<LinkSummary>,
    /// An ExecuTorch program's plan: its arenas and where its buffers went.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plan: Option<PlanSummary>,
}

/// What an ExecuTorch memory plan put where (from the trace's meta).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlanSummary {
    /// Bytes of each arena by `mem_id`.
    pub arena_bytes: Vec<u64>,
    pub on_chip_buffers: usize,
    pub dram_buffers: usize,
    /// Bytes of the buffers planned outside arena 1 (each written once).
    pub dram_bytes: u64,
    /// Of those, graph inputs the caller writes (no op streams them out).
    pub dram_input_bytes: u64,
    /// Planned values sharing another's memory (static views).
    pub shared_values: usize,
    /// The ETDump run the op times come from and how many it held; none:
    /// the cost model timed the ops.
    pub run: Option<(usize, usize)>,
}

impl PlanSummary {
    fn of(i: &crate::trace::import::executorch::ExecutorchInfo) -> PlanSummary {
        use crate::trace::import::executorch::plan::ON_CHIP_ARENA;
        let on_chip = i
            .buffers
            .iter()
            .filter(|b| b.arena == ON_CHIP_ARENA)
            .count();
        PlanSummary {
            arena_bytes: i.arena_bytes.clone(),
            on_chip_buffers: on_chip,
            dram_buffers: i.buffers.len() - on_chip,
            dram_bytes: i.dram_bytes(),
            dram_input_bytes: i.dram_input_bytes,
            shared_values: i.shared_values,
            run: i.run.zip(i.runs),
        }
    }

    fn rows(&self) -> Vec<(String, String)> {
        let arenas: Vec<String> = self
            .arena_bytes
            .iter()
            .enumerate()
            .skip(1)
            .map(|(k, &b)| format!("{k}: {}", fmt_bytes(b)))
            .collect();
        let mut v = vec![
            ("arenas".to_string(), arenas.join(", ")),
            (
                "buffers".to_string(),
                format!(
                    "{} in arena 1 (on chip), {} in DRAM ({}{}); {} views share memory",
                    self.on_chip_buffers,
                    self.dram_buffers,
                    fmt_bytes(self.dram_bytes),
                    if self.dram_input_bytes > 0 {
                        format!(", {} of it graph inputs", fmt_bytes(self.dram_input_bytes))
                    } else {
                        String::new()
                    },
                    self.shared_values
                ),
            ),
        ];
        v.push((
            "op times".to_string(),
            match self.run {
                Some((k, n)) => format!("measured: ETDump run {k} of {n}"),
                None => "the cost model's (default profile): no ETDump given".to_string(),
            },
        ));
        v
    }
}

/// Counters that are the allocator's view, not live tensors.
const ALLOCATOR_COUNTERS: [&str; 3] = [
    "allocator_in_use_bytes",
    "allocator_peak_bytes",
    "arena_held_bytes",
];

pub fn summary(tr: &Trace, caps: &Capabilities) -> MeasuredSummary {
    let latency = tr.summary.latency_ns;
    let op_time: u64 = tr
        .ops
        .iter()
        .map(|o| o.end_ns.saturating_sub(o.start_ns))
        .sum();
    // Weights (initializers) are not allocations of the run's tensors.
    let allocs = tr.events.iter().filter(|e| {
        e.kind == EventKind::Alloc
            && tr
                .tensors
                .get(e.tensor)
                .is_none_or(|t| t.kind != crate::trace::TensorKind::Weight)
    });
    let (allocations, allocated_bytes) =
        allocs.fold((0u64, 0u64), |(n, b), e| (n + 1, b + e.bytes));
    let (importer, linked, plan) = match &tr.meta.producer {
        Producer::Instrumented(i) => (
            Some(i.importer),
            i.linked.clone(),
            i.executorch.as_deref().map(PlanSummary::of),
        ),
        _ => (None, None, None),
    };
    MeasuredSummary {
        model: tr.meta.model.clone(),
        importer,
        latency_ns: latency,
        ops: tr.ops.len(),
        levels: crate::trace::nesting::Nesting::levels_of(&tr.ops),
        op_time_ns: op_time,
        op_time_share: op_time as f64 / latency.max(1) as f64,
        allocations,
        allocated_bytes,
        peak_live_bytes: caps.frees.then_some(tr.summary.peak_live_bytes),
        allocator: ALLOCATOR_COUNTERS
            .iter()
            .filter_map(|&n| {
                let c = tr.counters.iter().find(|c| c.name == n)?;
                let m = c.samples.iter().map(|s| s.1).fold(0.0, f64::max);
                Some((n.to_string(), m as u64))
            })
            .collect(),
        spill: caps.spill_events.then(|| Ledger::of(tr).fields()),
        capabilities: *caps,
        missing: caps.missing(tr),
        linked,
        plan,
    }
}

impl MeasuredSummary {
    /// `(label, value)` rows for text output.
    /// What the figures are: `measured`, or `planned` for a compiler's
    /// plan timed by the cost model (an ExecuTorch program without a
    /// profile).
    pub fn heading(&self) -> &'static str {
        match &self.plan {
            Some(p) if p.run.is_none() => "planned",
            _ => "measured",
        }
    }

    pub fn rows(&self) -> Vec<(String, String)> {
        let mut v = vec![
            ("latency".to_string(), fmt_ms(self.latency_ns)),
            (
                "ops".to_string(),
                if self.levels > 1 {
                    format!(
                        "{} in {} levels of nested calls (views and reports show the top level; --op-depth N another)",
                        self.ops, self.levels
                    )
                } else {
                    format!(
                        "{} ({}, {:.0}% of the run)",
                        self.ops,
                        fmt_ms(self.op_time_ns),
                        self.op_time_share * 100.0
                    )
                },
            ),
        ];
        if self.allocations > 0 {
            v.push((
                "allocated".to_string(),
                format!(
                    "{} in {}",
                    fmt_bytes(self.allocated_bytes),
                    count(self.allocations, "allocation")
                ),
            ));
        }
        if let Some(p) = self.peak_live_bytes {
            v.push(("peak live".to_string(), fmt_bytes(p)));
        }
        for (name, m) in &self.allocator {
            // ONNX Runtime's own figures (its arena, not live tensors).
            let label = match name.as_str() {
                "allocator_in_use_bytes" => "ORT in use",
                "allocator_peak_bytes" => "ORT peak",
                _ => "ORT arena",
            };
            v.push((label.to_string(), fmt_bytes(*m)));
        }
        if let Some(s) = &self.spill {
            v.push((
                "spill traffic".to_string(),
                format!(
                    "{} ({})",
                    fmt_bytes(s.traffic_bytes),
                    count(s.spill_count, "eviction")
                ),
            ));
        }
        if let Some(l) = &self.linked {
            v.push(("model".to_string(), l.line()));
        }
        if let Some(p) = &self.plan {
            v.extend(p.rows());
        }
        for m in &self.missing {
            v.push((
                format!("no {}", m.what),
                format!("{} not shown: {}", m.hides, m.how),
            ));
        }
        v
    }
}

/// The command that simulates `model` with the op times measured in
/// `profile` (shown once by `view` and `report` of a runtime profile).
pub fn calibrate_command(profile: &std::path::Path, model: Option<&str>) -> String {
    // An ETDump profiles an ExecuTorch program; the others an ONNX model.
    let etdump = crate::input::detect(profile).ok() == Some(crate::input::Format::Etdump);
    let ext = if etdump { "pte" } else { "onnx" };
    format!(
        "spillscope view {} --calibrate {}",
        model
            .map(|m| format!("{m}.{ext}"))
            .unwrap_or_else(|| format!("MODEL.{ext}")),
        profile.display()
    )
}
