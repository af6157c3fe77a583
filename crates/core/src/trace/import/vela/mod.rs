//! Arm Vela's compiled plan as a trace. Vela (the Ethos-U compiler) decides
//! which feature maps live in SRAM and which stay in DRAM for their whole
//! lifetime; its output directory says so per tensor (memory, live range,
//! address, size) and per op (cycle estimate, bytes per memory). The trace:
//! - ops: Vela's operators in its order (the per-layer CSV's rows, fused
//!   activations as zero-cycle ops beside the op they ride on), each lasting
//!   its cycle estimate at the configuration's core clock;
//! - a feature map in SRAM is allocated at its address when its producer
//!   starts and freed after its last reader (the debug database's op links);
//! - a feature map Vela left in DRAM is spilled for its whole lifetime: its
//!   producer streams it out, each reader streams it in, in raw bytes (the
//!   tensor's size as Vela stores it, channel padding included); the graph
//!   input is streamed in by its readers (an input load, as everywhere);
//! - each op's encoded weights are streamed in by it (the weights part).
//!
//! Vela's own figures are burst-weighted (x max burst / achieved burst) and
//! count halo re-fetches: they are kept beside the ledger in `meta.vela`.

pub mod files;

pub use files::VelaFiles;

use super::ImportOptions;
use crate::trace::build::TraceBuilder;
use crate::trace::{
    EventKind, Importer, Instrumented, Producer, Source, TensorKind, Trace, TraceOp,
};
use crate::{Error, Result};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeSet, HashMap};
use std::path::Path;

/// The pool Vela's on-chip feature maps live in.
pub const POOL: &str = "sram";

/// The `reason` of an alloc that takes memory of an operand its op reads
/// for the last time (docs/trace-format.md: `verify` allows that overlap).
pub use crate::trace::residency::IN_PLACE;

/// What a Vela run was and what Vela itself reported (trace `meta.vela`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VelaInfo {
    pub network: String,
    pub accelerator: String,
    pub system_config: String,
    pub memory_mode: String,
    pub core_clock_hz: f64,
    /// `--arena-cache-size` (bytes): a hard cap on SRAM in Dedicated_Sram.
    pub arena_cache_bytes: u64,
    /// Whether the SRAM size is a limit (Dedicated_Sram) or a soft target.
    pub capacity_is_limit: bool,
    /// Whether cascading was on (`--disable-cascading` absent from
    /// `command.txt`; unknown without it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cascading: Option<bool>,
    /// How many cascades Vela formed (rolling buffers instead of whole
    /// feature maps).
    pub cascades: usize,
    /// Rows of the per-layer CSV (= ops of the trace).
    pub per_layer_rows: usize,
    /// Vela's summary figures (burst-weighted bytes).
    pub dram_feature_map_read_bytes: u64,
    pub dram_feature_map_write_bytes: u64,
    pub dram_weight_read_bytes: u64,
    pub sram_memory_used_bytes: u64,
    pub cycles_total: u64,
    pub inference_time_s: f64,
    /// The sums of Vela's per-op DRAM feature-map bytes (debug database),
    /// which the summary's figures are.
    pub ops_dram_feature_map_read_bytes: u64,
    pub ops_dram_feature_map_write_bytes: u64,
    /// Feature maps Vela placed in DRAM (graph input and output included).
    pub dram_feature_maps: Vec<String>,
}

/// What a tensor of Vela's plan is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Input,
    Output,
    /// An op's output that another op reads.
    FeatureMap,
    /// Vela's own buffers: op-local scratch, weight double buffers,
    /// cascade rolling buffers.
    Scratch,
}

/// A tensor of Vela's plan.
#[derive(Debug, Clone)]
pub struct VelaTensor {
    pub name: String,
    /// `Sram`, `Dram`, ...
    pub memory: String,
    /// `OpLocal`, `OpBuffering`, `OpCascade`.
    pub usage: String,
    pub start: i64,
    pub end: i64,
    pub address: u64,
    pub size: u64,
    pub format: String,
    pub role: Role,
    pub producer: Option<usize>,
    pub consumers: Vec<usize>,
}

impl VelaTensor {
    pub fn on_chip(&self) -> bool {
        self.memory.eq_ignore_ascii_case("sram")
    }
}

/// An op of Vela's plan.
#[derive(Debug, Clone)]
pub struct VelaOp {
    /// Unique: the output's name, with the op kind for fused members.
    pub name: String,
    /// The output tensor's name as Vela gives it.
    pub output_name: String,
    pub nng_op: String,
    pub original_op: String,
    pub cycles: u64,
    pub time_index: i64,
    /// The op this one is fused into (itself when not fused).
    pub leader: usize,
    pub weight_bytes: u64,
    pub cascade: i64,
    /// Vela's burst-weighted DRAM feature-map bytes.
    pub dram_read: f64,
    pub dram_write: f64,
}

/// Vela's plan, interpreted.
#[derive(Debug, Clone)]
pub struct VelaPlan {
    pub info: VelaInfo,
    pub ops: Vec<VelaOp>,
    pub tensors: Vec<VelaTensor>,
    pub notes: Vec<String>,
}

/// Imports a Vela output directory as a trace.
pub fn import(dir: &Path, _opts: &ImportOptions) -> Result<(Trace, Vec<String>)> {
    let files = VelaFiles::read(dir)?;
    let plan = VelaPlan::from_files(&files)?;
    let trace = plan.to_trace();
    Ok((trace, plan.notes))
}

impl VelaPlan {
    /// Reads the directory and interprets it.
    pub fn read(dir: &Path) -> Result<VelaPlan> {
        VelaPlan::from_files(&VelaFiles::read(dir)?)
    }

    pub fn from_files(f: &VelaFiles) -> Result<VelaPlan> {
        let bad = |detail: String| Error::parse(&f.debug_path, "Vela output", detail);
        // Vela's op ids -> their position in its order.
        let perf = f.table("perf");
        let index: HashMap<&str, usize> = perf
            .rows
            .iter()
            .enumerate()
            .map(|(i, r)| (perf.get(r, "id"), i))
            .collect();
        let ops = read_ops(f, &index).map_err(bad)?;
        if ops.is_empty() {
            return Err(Error::parse(
                &f.debug_path,
                "Vela output",
                "the plan has no ops",
            ));
        }
        let mut notes = Vec::new();
        if ops.len() != f.per_layer.rows.len() {
            notes.push(format!(
                "the debug database has {} ops, the per-layer CSV {} rows",
                ops.len(),
                f.per_layer.rows.len()
            ));
        }
        let tensors = read_tensors(f, &ops, &index).map_err(bad)?;
        let info = info_of(f, &ops, &tensors);
        if let Some(alloc) = &f.allocation {
            let listed: BTreeSet<&str> = alloc
                .iter()
                .filter(|r| r.memory == "Dram" && r.usage == "FeatureMap")
                .map(|r| r.name.as_str())
                .collect();
            let ours: BTreeSet<&str> = info.dram_feature_maps.iter().map(String::as_str).collect();
            if listed != ours {
                notes.push(format!(
                    "stdout.txt lists {} DRAM feature maps, the debug database {}",
                    listed.len(),
                    ours.len()
                ));
            }
        }
        Ok(VelaPlan {
            info,
            ops,
            tensors,
            notes,
        })
    }

    /// Start and end of op `i` in ns at the core clock.
    fn times(&self) -> Vec<(u64, u64)> {
        let ns_per_cycle = 1e9 / self.info.core_clock_hz.max(1.0);
        let mut t = 0u64;
        self.ops
            .iter()
            .map(|o| {
                let d = (o.cycles as f64 * ns_per_cycle).round() as u64;
                let span = (t, t + d);
                t += d;
                span
            })
            .collect()
    }

    /// The plan as a `spillscope.trace/1` trace.
    pub fn to_trace(&self) -> Trace {
        let mut b = TraceBuilder::new(Source::Instrumented, &self.info.network, "vela");
        b.set_producer(Producer::Instrumented(Instrumented {
            capacity_declared: self.info.capacity_is_limit,
            vela: Some(Box::new(self.info.clone())),
            ..Instrumented::new(Importer::Vela)
        }));
        let capacity = if self.info.capacity_is_limit {
            self.info.arena_cache_bytes
        } else {
            self.info.sram_memory_used_bytes
        };
        b.pool(POOL, capacity, 16);
        let times = self.times();
        let in_place = self.in_place();
        let ids: Vec<usize> = self
            .tensors
            .iter()
            .map(|t| {
                let kind = match t.role {
                    Role::Input => TensorKind::Input,
                    Role::Output => TensorKind::Output,
                    Role::FeatureMap | Role::Scratch => TensorKind::Activation,
                };
                b.tensor(&t.name, t.size, kind, POOL)
            })
            .collect();
        let mut inputs: Vec<Vec<usize>> = vec![Vec::new(); self.ops.len()];
        let mut outputs: Vec<Vec<usize>> = vec![Vec::new(); self.ops.len()];
        let mut streamed: Vec<Vec<usize>> = vec![Vec::new(); self.ops.len()];
        for (ti, t) in self.tensors.iter().enumerate() {
            let id = ids[ti];
            if let Some(p) = t.producer {
                outputs[p].push(id);
            }
            for &c in &t.consumers {
                if Some(c) != t.producer || t.role == Role::Scratch {
                    inputs[c].push(id);
                }
            }
            self.tensor_events(&mut b, id, t, in_place[ti], &times, &mut streamed);
        }
        for (i, o) in self.ops.iter().enumerate() {
            if o.weight_bytes > 0 {
                let w = b.tensor(
                    &format!("{} (weights)", o.name),
                    o.weight_bytes,
                    TensorKind::Weight,
                    POOL,
                );
                inputs[i].push(w);
                streamed[i].push(w);
                b.event(
                    times[i].0,
                    EventKind::StreamIn,
                    w,
                    o.weight_bytes,
                    POOL,
                    None,
                    Some(i),
                    None,
                );
            }
        }
        for (i, o) in self.ops.iter().enumerate() {
            let mut op = TraceOp::span(&o.name, &o.nng_op, times[i].0, times[i].1);
            op.inputs = std::mem::take(&mut inputs[i]);
            op.outputs = std::mem::take(&mut outputs[i]);
            op.streamed = std::mem::take(&mut streamed[i]);
            b.op(op);
        }
        b.finish()
    }

    /// Which on-chip outputs Vela placed over an input their producer reads
    /// last (an elementwise op writing in place, tile by tile).
    fn in_place(&self) -> Vec<bool> {
        let last_use = |t: &VelaTensor| t.consumers.iter().chain(t.producer.iter()).copied().max();
        let mut read_last: Vec<Vec<usize>> = vec![Vec::new(); self.ops.len()];
        for (i, t) in self.tensors.iter().enumerate() {
            if let Some(l) = last_use(t) {
                if t.on_chip() && t.producer != Some(l) {
                    read_last[l].push(i);
                }
            }
        }
        self.tensors
            .iter()
            .map(|t| {
                let Some(p) = t.producer else { return false };
                t.on_chip()
                    && read_last[p].iter().any(|&u| {
                        let u = &self.tensors[u];
                        u.address < t.address + t.size && t.address < u.address + u.size
                    })
            })
            .collect()
    }

    /// A tensor's events: on chip, alloc at its address from its first op
    /// to after its last (`in-place` when it takes an operand's memory); off chip, streamed out by its producer and in by
    /// each reader.
    fn tensor_events(
        &self,
        b: &mut TraceBuilder,
        id: usize,
        t: &VelaTensor,
        in_place: bool,
        times: &[(u64, u64)],
        streamed: &mut [Vec<usize>],
    ) {
        let users: Vec<usize> = t
            .producer
            .iter()
            .chain(t.consumers.iter())
            .copied()
            .collect();
        let (Some(&first), Some(&last)) = (users.iter().min(), users.iter().max()) else {
            return;
        };
        if t.on_chip() {
            b.event(
                times[first].0,
                EventKind::Alloc,
                id,
                t.size,
                POOL,
                Some(t.address),
                Some(first),
                None,
            );
            if in_place {
                b.events.update_last(|e| e.reason = Some(IN_PLACE.into()));
            }
            b.event(
                times[last].1,
                EventKind::Free,
                id,
                t.size,
                POOL,
                Some(t.address),
                Some(last),
                None,
            );
            return;
        }
        // The graph input is in DRAM already: only its readers stream it.
        let producer = t.producer.filter(|_| t.role != Role::Input);
        b.stream_whole_life(id, t.size, POOL, producer, &t.consumers, times, streamed);
    }
}

/// The ops of the debug database's `perf` table, in Vela's order, with
/// their fused-group leader, time index and bytes.
fn read_ops(
    f: &VelaFiles,
    index: &HashMap<&str, usize>,
) -> std::result::Result<Vec<VelaOp>, String> {
    let perf = f.table("perf");
    let dbg = f.table("perf_debug");
    let group = f.table("group");
    let by_id_dbg: HashMap<&str, &Vec<String>> =
        dbg.rows.iter().map(|r| (dbg.get(r, "id"), r)).collect();
    let leader_id: HashMap<&str, &str> = group
        .rows
        .iter()
        .map(|r| (group.get(r, "id"), group.get(r, "group_id")))
        .collect();
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut ops = Vec::with_capacity(perf.rows.len());
    for (i, r) in perf.rows.iter().enumerate() {
        let id = perf.get(r, "id");
        let d = by_id_dbg
            .get(id)
            .ok_or_else(|| format!("op {id} has no perf_debug row"))?;
        let output_name = perf.get(r, "name").to_string();
        let nng_op = perf.get(r, "operator").to_string();
        let n = seen.entry(output_name.clone()).or_default();
        *n += 1;
        let name = if *n == 1 {
            output_name.clone()
        } else {
            format!("{output_name} [{nng_op} {n}]")
        };
        let leader = leader_id
            .get(id)
            .and_then(|g| index.get(g))
            .copied()
            .unwrap_or(i);
        ops.push(VelaOp {
            name,
            output_name,
            original_op: f
                .per_layer
                .rows
                .get(i)
                .map(|pl| f.per_layer.get(pl, "Original Operator").to_string())
                .unwrap_or_default(),
            nng_op,
            cycles: perf.num(r, "op_cycles").max(0.0) as u64,
            time_index: dbg.num(d, "time_index") as i64,
            leader,
            weight_bytes: (dbg.num(d, "weight_total_bytes") + dbg.num(d, "scales_total_bytes"))
                as u64,
            cascade: dbg.num(d, "cascade") as i64,
            dram_read: dbg.num(d, "DramFeatureMap_read"),
            dram_write: dbg.num(d, "DramFeatureMap_write"),
        });
    }
    Ok(ops)
}

/// The debug database's tensors, tied to ops: a tensor named as an op's
/// output is produced by the first op of that name (the fused group's
/// head); its readers are the ops whose input links name that op; the
/// graph input is read by the ops linked to no op within its live range;
/// Vela's own buffers belong to the ops their live range spans.
fn read_tensors(
    f: &VelaFiles,
    ops: &[VelaOp],
    index: &HashMap<&str, usize>,
) -> std::result::Result<Vec<VelaTensor>, String> {
    let tab = f.table("tensors");
    let conn = f.table("perf_debug_conn");
    let mut by_output: HashMap<&str, usize> = HashMap::new();
    for (i, o) in ops.iter().enumerate() {
        by_output.entry(o.output_name.as_str()).or_insert(i);
    }
    // Readers of each op's output, and ops reading something no op made.
    let mut readers: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); ops.len()];
    let mut unlinked: BTreeSet<usize> = BTreeSet::new();
    for r in &conn.rows {
        // Readers outside the plan (Vela's pseudo ids) read nothing here.
        let Some(&reader) = index.get(conn.get(r, "id")) else {
            continue;
        };
        match conn.get(r, "input_op_id").trim_matches('"') {
            "-1" | "" => {
                unlinked.insert(ops[reader].leader);
            }
            src => {
                // Links to ops outside the plan are constants Vela made
                // (the weights part covers them).
                let Some(&s) = index.get(src) else {
                    continue;
                };
                let head = by_output
                    .get(ops[s].output_name.as_str())
                    .copied()
                    .unwrap_or(s);
                // A fused member's reads are its group head's (it has no
                // time or memory of its own).
                if ops[reader].leader != ops[head].leader {
                    readers[head].insert(ops[reader].leader);
                }
            }
        }
    }
    let at_time = |t: i64| ops.iter().position(|o| o.time_index >= t);
    let before_time = |t: i64| ops.iter().rposition(|o| o.time_index < t);
    let mut out = Vec::with_capacity(tab.rows.len());
    for r in &tab.rows {
        let name = tab.get(r, "name").to_string();
        let start = tab.num(r, "start_time") as i64;
        let end = tab.num(r, "end_time") as i64;
        let usage = tab.get(r, "usage").to_string();
        let producer = by_output.get(name.as_str()).copied();
        let (role, producer, consumers) = match producer {
            Some(p) if usage != "OpBuffering" => {
                let c: Vec<usize> = readers[p].iter().copied().collect();
                let role = if c.is_empty() {
                    Role::Output
                } else {
                    Role::FeatureMap
                };
                (role, Some(p), c)
            }
            _ if start == 0 && usage == "OpLocal" && !unlinked.is_empty() => {
                // The graph input: read by the unlinked ops of its range.
                let c: Vec<usize> = unlinked
                    .iter()
                    .copied()
                    .filter(|&i| ops[i].time_index >= start && ops[i].time_index < end)
                    .collect();
                (Role::Input, None, c)
            }
            _ => {
                let first = at_time(start);
                let last = before_time(end).max(first);
                let c: Vec<usize> = match (first, last) {
                    (Some(a), Some(z)) => (a..=z).filter(|&i| ops[i].leader == i).collect(),
                    _ => Vec::new(),
                };
                (Role::Scratch, first, c)
            }
        };
        out.push(VelaTensor {
            name,
            memory: tab.get(r, "memory").to_string(),
            usage,
            start,
            end,
            address: tab.num(r, "start_address") as u64,
            size: tab.num(r, "size") as u64,
            format: tab.get(r, "format").to_string(),
            role,
            producer,
            consumers,
        });
    }
    Ok(out)
}

fn info_of(f: &VelaFiles, ops: &[VelaOp], tensors: &[VelaTensor]) -> VelaInfo {
    let kib = |k: &str| (f.figure(k) * 1024.0).round() as u64;
    let memory_mode = f.text("memory_mode").to_string();
    VelaInfo {
        network: f.text("network").to_string(),
        accelerator: f.text("accelerator_configuration").to_string(),
        system_config: f.text("system_config").to_string(),
        capacity_is_limit: memory_mode == "Dedicated_Sram",
        memory_mode,
        core_clock_hz: f.figure("core_clock"),
        arena_cache_bytes: kib("arena_cache_size"),
        cascading: f
            .command
            .as_deref()
            .map(|c| !c.contains("--disable-cascading")),
        cascades: ops
            .iter()
            .filter(|o| o.cascade != 0)
            .map(|o| o.cascade)
            .collect::<BTreeSet<_>>()
            .len(),
        per_layer_rows: f.per_layer.rows.len(),
        dram_feature_map_read_bytes: f.figure("dram_feature_map_read_bytes") as u64,
        dram_feature_map_write_bytes: f.figure("dram_feature_map_write_bytes") as u64,
        dram_weight_read_bytes: f.figure("dram_weight_read_bytes") as u64,
        sram_memory_used_bytes: kib("sram_memory_used"),
        cycles_total: f.figure("cycles_total") as u64,
        inference_time_s: f.figure("inference_time"),
        ops_dram_feature_map_read_bytes: ops.iter().map(|o| o.dram_read).sum::<f64>().round()
            as u64,
        ops_dram_feature_map_write_bytes: ops.iter().map(|o| o.dram_write).sum::<f64>().round()
            as u64,
        dram_feature_maps: tensors
            .iter()
            .filter(|t| t.memory == "Dram" && t.usage != "OpBuffering")
            .map(|t| t.name.clone())
            .collect(),
    }
}
