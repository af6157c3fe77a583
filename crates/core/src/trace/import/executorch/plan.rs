//! ExecuTorch's own memory plan of a `.pte` as a trace, the way Vela's is
//! read: arena 1 is the on-chip pool (SRAM in a BankedGreedy plan), every
//! other arena is DRAM.
//! - ops: the program's kernel calls in order, each lasting its roofline
//!   time under the default hardware profile (the one `sim` uses) plus the
//!   time to stream its DRAM operands, as `sim` times a streamed op;
//! - a value planned in arena 1 is allocated at its offset when its first
//!   op starts and freed when its last op ends; values ExecuTorch lets
//!   share memory (static views) are one tensor, read as the value whose
//!   memory they share;
//! - a value planned in another arena is spilled for its whole lifetime:
//!   its producer streams it out, each reader streams it in (a graph input
//!   there is streamed in by its readers);
//! - constants (weights) are streamed in by each op that reads them (the
//!   weights part, as `sim`'s default `weights = "stream"`).

use crate::cost::bus::BusModel;
use crate::cost::roofline::op_time_ns;
use crate::cost::HardwareProfile;
use crate::graph::executorch::lower::{lower, Lowered};
use crate::graph::executorch::pte::{Program, Slot};
use crate::graph::TensorKind;
use crate::trace::build::TraceBuilder;
use crate::trace::{EventKind, Importer, Instrumented, Producer, Source, Trace, TraceOp};
use serde::{Deserialize, Serialize};

/// The pool arena 1 becomes.
pub const POOL: &str = "sram";

/// The arena ExecuTorch's BankedGreedy fills first (its fast bank).
pub const ON_CHIP_ARENA: u32 = 1;

/// The alignment ExecuTorch's memory planning rounds each buffer up to
/// (`MemoryPlanningPass`'s default; the program does not record it): a
/// 40-byte tensor takes 48 bytes of its arena.
pub const PLAN_ALIGNMENT: u64 = 16;

/// One buffer of the plan: a value that owns memory, where it was put.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlannedBuffer {
    /// The trace's tensor.
    pub tensor: usize,
    /// The program value (`v52`).
    pub value: usize,
    pub arena: u32,
    pub offset: u64,
    pub bytes: u64,
}

/// What the program's plan was (trace `meta`, beside the importer).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExecutorchInfo {
    /// The method planned (`forward`).
    pub method: String,
    /// Bytes of each arena by `mem_id` (`non_const_buffer_sizes`).
    pub arena_bytes: Vec<u64>,
    /// Every planned buffer (static views folded into the value whose
    /// memory they share).
    pub buffers: Vec<PlannedBuffer>,
    /// Planned values folded into another's memory (static views).
    pub shared_values: usize,
    /// Bytes of graph inputs planned outside arena 1: the caller writes
    /// them into DRAM before the first op (no op streams them out).
    pub dram_input_bytes: u64,
    /// The ETDump run the op times come from (1-based) and how many runs
    /// it held; absent for a plan timed by the cost model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runs: Option<usize>,
}

impl ExecutorchInfo {
    /// Bytes planned in arenas other than arena 1 (DRAM).
    pub fn dram_bytes(&self) -> u64 {
        self.buffers
            .iter()
            .filter(|b| b.arena != ON_CHIP_ARENA)
            .map(|b| b.bytes)
            .sum()
    }
}

/// Op times: per call, (start, end) in ns; `None` times each call by the
/// cost model.
pub type Times = Vec<(u64, u64)>;

/// The plan of `p` as a trace named `model`. `capacity` overrides arena
/// 1's size; `times` replaces the cost model's op times (a profile's).
pub fn plan_trace(
    p: &Program,
    model: &str,
    capacity: Option<u64>,
    times: Option<Times>,
) -> Result<(Trace, Vec<String>), String> {
    let Lowered {
        graph: g,
        tensor_of_value,
        value_of_tensor,
    } = lower(p, model)?;
    let mut notes = Vec::new();
    // The slot of each graph tensor (the value that owns its memory).
    let slot_of: Vec<Option<Slot>> = value_of_tensor
        .iter()
        .map(|&v| p.tensor(v).and_then(|t| t.slot))
        .collect();
    // Planned values read as another's memory (static views).
    let shared = (0..p.values.len())
        .filter(|&v| p.tensor(v).is_some_and(|t| t.slot.is_some()))
        .filter(|&v| tensor_of_value[v].is_some_and(|gt| value_of_tensor[gt] != v))
        .count();
    // What each tensor takes: a planned buffer is rounded up as ExecuTorch
    // rounds it.
    let size: Vec<u64> = g
        .tensors
        .iter()
        .zip(&slot_of)
        .map(|(t, s)| match s {
            Some(_) => t.bytes.div_ceil(PLAN_ALIGNMENT) * PLAN_ALIGNMENT,
            None => t.bytes,
        })
        .collect();
    let unplanned = g
        .tensors
        .iter()
        .zip(&slot_of)
        .filter(|(t, s)| s.is_none() && t.kind != TensorKind::Weight)
        .count();
    if unplanned > 0 {
        notes.push(format!(
            "{unplanned} tensors have no planned memory (allocated by the runtime): shown without placements"
        ));
    }
    let arena1 = p
        .arena_bytes
        .get(ON_CHIP_ARENA as usize)
        .copied()
        .unwrap_or(0);
    let hw = HardwareProfile::preset("default").map_err(|e| e.to_string())?;
    let bus = BusModel::new(&hw);
    let on_chip = |t: usize| slot_of[t].is_some_and(|s| s.arena == ON_CHIP_ARENA);
    // Per op: DRAM bytes read and written (spilled values, inputs in DRAM,
    // weights) and the op's span.
    let mut spans: Times = Vec::with_capacity(g.ops.len());
    let mut stalls: Vec<u64> = Vec::with_capacity(g.ops.len());
    let mut now = 0u64;
    for (i, o) in g.ops.iter().enumerate() {
        let rd: u64 = o
            .inputs
            .iter()
            .filter(|&&t| !on_chip(t))
            .map(|&t| size[t])
            .sum();
        let wr: u64 = o
            .outputs
            .iter()
            .filter(|&&t| !on_chip(t))
            .map(|&t| size[t])
            .sum();
        let (span, stall) = match &times {
            Some(ts) => (ts.get(i).copied().unwrap_or((now, now)), 0),
            None => {
                let bytes: u64 = g.operands(i).iter().map(|&t| size[t]).sum();
                let compute = op_time_ns(&hw, o.flops, bytes).time_ns.ceil() as u64;
                let stall = bus.stream_ns(rd, wr);
                ((now, now + compute + stall), stall)
            }
        };
        now = now.max(span.1);
        spans.push(span);
        stalls.push(stall);
    }
    let info = ExecutorchInfo {
        method: p.method.clone(),
        arena_bytes: p.arena_bytes.clone(),
        buffers: g
            .tensors
            .iter()
            .zip(&slot_of)
            .filter_map(|(t, s)| {
                s.map(|s| PlannedBuffer {
                    tensor: t.id,
                    value: value_of_tensor[t.id],
                    arena: s.arena,
                    offset: s.offset,
                    bytes: size[t.id],
                })
            })
            .collect(),
        shared_values: shared,
        dram_input_bytes: g
            .tensors
            .iter()
            .filter(|t| t.kind == TensorKind::Input && !on_chip(t.id) && slot_of[t.id].is_some())
            .map(|t| size[t.id])
            .sum(),
        run: None,
        runs: None,
    };
    let mut b = TraceBuilder::new(Source::Instrumented, model, "executorch");
    b.set_producer(Producer::Instrumented(Instrumented {
        capacity_declared: true,
        executorch: Some(Box::new(info)),
        ..Instrumented::new(Importer::Executorch)
    }));
    b.pool(POOL, capacity.unwrap_or(arena1), 16);
    for t in &g.tensors {
        b.tensor(t.name, size[t.id], t.kind, POOL);
    }
    let mut streamed: Vec<Vec<usize>> = vec![Vec::new(); g.ops.len()];
    for t in &g.tensors {
        let users = t.producer.iter().chain(t.consumers.iter());
        let (Some(&first), Some(&last)) = (users.clone().min(), users.max()) else {
            continue;
        };
        let (id, bytes) = (t.id, size[t.id]);
        match slot_of[t.id] {
            Some(s) if s.arena == ON_CHIP_ARENA => {
                let end = if t.kind == TensorKind::Output {
                    now
                } else {
                    spans[last].1
                };
                // A 0-byte tensor (batch norm's unused statistics) takes no
                // memory: ExecuTorch plans it at a neighbour's offset, and
                // the trace holds it without one (resident, not placed).
                let off = (bytes > 0).then_some(s.offset);
                let start = spans[first].0;
                b.event(
                    start,
                    EventKind::Alloc,
                    id,
                    bytes,
                    POOL,
                    off,
                    Some(first),
                    None,
                );
                b.event(end, EventKind::Free, id, bytes, POOL, off, Some(last), None);
            }
            // Another arena (DRAM), or a constant: streamed where used.
            s if s.is_some() || t.kind == TensorKind::Weight => b.stream_whole_life(
                id,
                bytes,
                POOL,
                t.producer,
                t.consumers,
                &spans,
                &mut streamed,
            ),
            _ => {}
        }
    }
    for (i, o) in g.ops.iter().enumerate() {
        let mut op = TraceOp::span(o.name, o.op_type, spans[i].0, spans[i].1);
        op.inputs = o.inputs.to_vec();
        op.outputs = o.outputs.to_vec();
        op.streamed = std::mem::take(&mut streamed[i]);
        op.flops = Some(o.flops);
        op.stall_ns = stalls[i];
        b.op(op);
    }
    Ok((b.finish(), notes))
}
