//! The one data model: `spillscope.trace/1` (docs/trace-format.md). Simulator
//! output and imported runtime traces both land here; the explorer, verify,
//! diff and reports only read this. Field names are a contract: extend, never
//! rename. Kinds, sources, bounds and the producer's record are typed; their
//! JSON is what earlier versions wrote, byte for byte.
//!
//! Owns the trace types, loading and checking them, importers and the
//! Chrome export. May import `graph` (tensor kinds), `cost` and `sim` (the
//! hardware and config a simulator trace records); never `analysis` or a
//! front end.

mod brackets;
pub mod build;
pub mod caps;
pub mod columnar;
pub mod events;
pub mod export;
pub mod import;
pub mod ledger;
pub mod nesting;
pub mod ops;
mod plain_rows;
mod ranges;
mod read;
pub mod residency;
pub mod store;
pub mod tensors;
mod traffic;
pub mod verify;
pub mod window;
pub use events::{EventRef, Events};
pub use ops::{OpRef, Ops};
pub use tensors::{TensorRef, Tensors};
pub use traffic::Traffic;

use crate::{Error, Result};
pub use compact_str::CompactString;
use serde::{Deserialize, Serialize};
use std::path::Path;

pub const SCHEMA: &str = "spillscope.trace/1";

/// The path of a bundled sample trace (for the crate's tests).
#[cfg(test)]
pub(crate) fn sample_path(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../sample-traces")
        .join(name)
}

pub use crate::graph::TensorKind;
pub use meta::{Importer, Instrumented, Meta, NpuCaseInfo, Producer};

mod meta;

/// Where a trace's events come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// Computed by a model of the hardware (spillscope's simulator, the NPU
    /// allocator).
    Simulator,
    /// Recorded from a real run (a runtime profile, the probe's stream).
    Instrumented,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Simulator => "simulator",
            Source::Instrumented => "instrumented",
        }
    }
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The unit (pipe, engine, stream) an op ran on, where a trace has several
/// that run ops in parallel (an NPU's CUBE, VECTOR and MTE pipes).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Unit(pub CompactString);

impl Unit {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trace {
    pub schema: String,
    pub source: Source,
    pub meta: Meta,
    pub pools: Vec<Pool>,
    /// Held as columns ([`Tensors`]); read and written as the JSON array.
    pub tensors: Tensors,
    /// Held as columns ([`Ops`]); read and written as the JSON array.
    pub ops: Ops,
    /// Held as columns ([`Events`]); read and written as the JSON array.
    pub events: Events,
    #[serde(default)]
    pub counters: Vec<Counter>,
    pub summary: Summary,
    /// Summary fields the reader recomputed from the events because the
    /// file's disagreed (or predates them); not part of the file.
    #[serde(skip)]
    pub recomputed: Vec<ledger::Mismatch>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pool {
    pub name: String,
    pub capacity_bytes: u64,
    pub alignment: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceTensor {
    pub id: usize,
    pub name: CompactString,
    pub bytes: u64,
    pub kind: TensorKind,
    pub pool: CompactString,
    pub producer: Option<usize>,
    #[serde(default, deserialize_with = "crate::input::exact_vec")]
    pub consumers: Vec<usize>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceOp {
    pub id: usize,
    pub name: CompactString,
    pub op_type: CompactString,
    pub start_ns: u64,
    pub end_ns: u64,
    #[serde(default)]
    pub stall_ns: u64,
    #[serde(default, deserialize_with = "crate::input::exact_vec")]
    pub inputs: Vec<usize>,
    #[serde(default, deserialize_with = "crate::input::exact_vec")]
    pub outputs: Vec<usize>,
    /// Operands read or written in DRAM by tiled streaming (did not fit).
    #[serde(default, deserialize_with = "crate::input::exact_vec")]
    pub streamed: Vec<usize>,
    /// Extension: estimated FLOPs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flops: Option<f64>,
    /// Extension: roofline bound.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bound: Option<Bound>,
    /// Extension: the unit (pipe) it ran on, where ops run in parallel on
    /// several (older traces spelled it `OP@PIPE` in `op_type`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<Unit>,
    /// Extension: the op that encloses this one, where a runtime nests
    /// calls (PyTorch's `aten::conv2d` > `aten::convolution` > ...).
    /// Parents come before their children.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<usize>,
    /// Extension: time spent in the op itself, outside the ops nested in
    /// it, where those were folded into it ([`nesting::collapse`]); absent
    /// means all of its time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub self_ns: Option<u64>,
    /// Extension: the part of `stall_ns` spent waiting because other cores
    /// held the DRAM bus (multi-core runs): the op's stall beyond what it
    /// waits with its core alone on the bus. Absent on one core.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contention_ns: Option<u64>,
}

impl TraceOp {
    /// An op known only by its name, type and time span (what runtime
    /// profilers record); operands and roofline data left empty.
    pub fn span(
        name: impl Into<CompactString>,
        op_type: impl Into<CompactString>,
        start_ns: u64,
        end_ns: u64,
    ) -> TraceOp {
        TraceOp {
            id: 0,
            name: name.into(),
            op_type: op_type.into(),
            start_ns,
            end_ns: end_ns.max(start_ns),
            stall_ns: 0,
            inputs: Vec::new(),
            outputs: Vec::new(),
            streamed: Vec::new(),
            flops: None,
            bound: None,
            unit: None,
            parent: None,
            self_ns: None,
            contention_ns: None,
        }
    }
}

/// What a memory event did (docs/trace-format.md, `events[]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    /// Placed on chip: produced there, or a weight or graph input loaded.
    Alloc,
    /// Left the chip for good.
    Free,
    /// Left the chip to come back; `written_bytes` written back.
    Evict,
    /// Placed on chip again from DRAM.
    Reload,
    /// Placed on chip again by re-running its producer.
    Recompute,
    /// Read by an op straight from DRAM, tile by tile.
    StreamIn,
    /// Written by an op straight to DRAM, tile by tile.
    StreamOut,
}

impl EventKind {
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::Alloc => "alloc",
            EventKind::Free => "free",
            EventKind::Evict => "evict",
            EventKind::Reload => "reload",
            EventKind::Recompute => "recompute",
            EventKind::StreamIn => "stream_in",
            EventKind::StreamOut => "stream_out",
        }
    }

    /// Places the tensor on chip.
    pub fn places(self) -> bool {
        matches!(
            self,
            EventKind::Alloc | EventKind::Reload | EventKind::Recompute
        )
    }

    /// Removes the tensor from chip.
    pub fn removes(self) -> bool {
        matches!(self, EventKind::Free | EventKind::Evict)
    }

    /// A stream event (no placement).
    pub fn is_stream(self) -> bool {
        matches!(self, EventKind::StreamIn | EventKind::StreamOut)
    }
}

impl std::str::FromStr for EventKind {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        Ok(match s {
            "alloc" => EventKind::Alloc,
            "free" => EventKind::Free,
            "evict" => EventKind::Evict,
            "reload" => EventKind::Reload,
            "recompute" => EventKind::Recompute,
            "stream_in" => EventKind::StreamIn,
            "stream_out" => EventKind::StreamOut,
            _ => return Err(format!("unknown event kind {s:?}")),
        })
    }
}

/// Why a trace's JSON did not parse, and where in the file.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceParseError {
    pub msg: String,
    pub pos: Option<crate::error::Pos>,
}

impl TraceParseError {
    /// A serde error `e` of text starting at byte `at` of the whole file.
    fn json(prefix: &str, e: &serde_json::Error, at: usize, file: &[u8]) -> TraceParseError {
        let local = crate::error::Pos {
            line: e.line(),
            column: e.column(),
        };
        let pos = (e.line() > 0).then(|| {
            let section = &file[at..];
            crate::error::Pos::of_byte(file, at + local.byte_in(section))
        });
        let msg = e.to_string();
        let msg = match msg.rfind(" at line ") {
            Some(i) if pos.is_some() => msg[..i].to_string(),
            _ => msg,
        };
        TraceParseError {
            msg: format!("{prefix}{msg}"),
            pos,
        }
    }
}

impl std::fmt::Display for TraceParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.pos {
            Some(p) => write!(f, "{} (line {}, column {})", self.msg, p.line, p.column),
            None => f.write_str(&self.msg),
        }
    }
}

/// Which roof an op sits under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Bound {
    Compute,
    Memory,
}

impl Bound {
    pub fn as_str(self) -> &'static str {
        match self {
            Bound::Compute => "compute",
            Bound::Memory => "memory",
        }
    }
}

/// Which bound `lower_bound_traffic_bytes` is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BoundMethod {
    /// No bound was computed (an instrumented trace, or the ideal policy).
    #[default]
    None,
    /// The per-op working-set and live-excess bounds.
    PerOp,
    /// The linear relaxation of the exact program.
    Lp,
    /// The exact program's proven optimum (a minimum, not just a bound).
    Ilp,
    /// The sum of the exact program's minima over windows of the schedule,
    /// tensors live on entry to a window given for free (long schedules).
    Windowed,
}

impl BoundMethod {
    pub fn as_str(self) -> &'static str {
        match self {
            BoundMethod::None => "none",
            BoundMethod::PerOp => "per-op",
            BoundMethod::Lp => "lp",
            BoundMethod::Ilp => "ilp",
            BoundMethod::Windowed => "windowed",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    pub t_ns: u64,
    pub kind: EventKind,
    pub tensor: usize,
    pub bytes: u64,
    /// Pool name; inline (no allocation) for short names, as there is one per event.
    pub pool: CompactString,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub op: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dma_start_ns: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dma_end_ns: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread: Option<u64>,
    /// Extension: live bytes (working demand) at this step, for classifying spills.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub live_bytes: Option<u64>,
    /// Extension: why it happened (`capacity`, `fragmentation`, `prefetch`, `weight-load`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<CompactString>,
    /// On `evict`: the bytes written back to DRAM (the size, or 0 when
    /// DRAM already held a current copy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub written_bytes: Option<u64>,
}

impl Event {
    /// An event with the contract's required fields and no optional ones
    /// (what importers and the simulators start from, adding what they know).
    pub fn plain(t_ns: u64, kind: EventKind, tensor: usize, bytes: u64, pool: &str) -> Event {
        Event {
            t_ns,
            kind,
            tensor,
            bytes,
            pool: pool.into(),
            offset: None,
            op: None,
            dma_start_ns: None,
            dma_end_ns: None,
            thread: None,
            live_bytes: None,
            reason: None,
            written_bytes: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Counter {
    pub name: String,
    pub unit: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool: Option<String>,
    pub samples: Vec<(u64, f64)>,
}

/// The run's figures. The ledger fields (`spill_count` .. `traffic_bytes`,
/// `weight_traffic_bytes`, `input_load_bytes`) equal the events' sums
/// ([`ledger::Ledger`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Summary {
    pub latency_ns: u64,
    /// The ledger's traffic figures (`spill_count` .. `traffic_bytes`).
    #[serde(flatten)]
    pub traffic: Traffic,
    #[serde(default)]
    pub recompute_saved_bytes: u64,
    pub stall_ns: u64,
    pub peak_live_bytes: u64,
    pub peak_resident_bytes: u64,
    /// The tightest valid lower bound on `traffic_bytes` the run computed.
    pub lower_bound_traffic_bytes: u64,
    #[serde(default)]
    pub lower_bound_method: BoundMethod,
    /// Extension: frames per second at this latency.
    #[serde(default)]
    pub throughput_fps: f64,
    /// Extension: DRAM bytes moved for weights (not spill).
    #[serde(default)]
    pub weight_traffic_bytes: u64,
    /// Extension: a graph input's compulsory loads (before it was ever
    /// evicted): not spill.
    #[serde(default)]
    pub input_load_bytes: u64,
    /// Extension: streamed in + streamed out (traces before the ledger
    /// counted activation streaming both ways here).
    #[serde(default)]
    pub streamed_bytes: u64,
    /// Extension: energy of DRAM and SRAM traffic, microjoules.
    #[serde(default)]
    pub energy_uj: f64,
    /// Extension: the capacity the run was simulated at (per core).
    #[serde(default)]
    pub capacity_bytes: u64,
    /// Extension: the part of `stall_ns` ops spent waiting because other
    /// cores held the DRAM bus (the sum of the ops' `contention_ns`);
    /// written only by multi-core runs.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub contention_ns: u64,
    /// Extension: the cores that ran the graph (written when more than one).
    #[serde(default, skip_serializing_if = "is_one")]
    pub cores: u32,
}

fn is_zero(x: &u64) -> bool {
    *x == 0
}

fn is_one(x: &u32) -> bool {
    *x <= 1
}

crate::holds_traffic!(Summary);

impl Trace {
    /// A copy without ops, tensors, events or counters (schema, source,
    /// meta, pools and summary), for building sub-traces cheaply.
    pub fn clone_header(&self) -> Trace {
        Trace {
            schema: self.schema.clone(),
            source: self.source,
            meta: self.meta.clone(),
            pools: self.pools.clone(),
            tensors: Tensors::new(),
            ops: Ops::new(),
            events: Events::new(),
            counters: Vec::new(),
            summary: self.summary.clone(),
            recomputed: Vec::new(),
        }
    }

    /// The graph this trace ran (tensors with their kinds and sizes, ops in
    /// trace order), e.g. to re-simulate a simulator trace or bound it.
    pub fn graph(&self) -> Result<crate::graph::Graph> {
        use crate::graph::{GraphBuilder, OpSpec, TensorSpec};
        let mut b = GraphBuilder::new(self.meta.model.clone());
        for t in &self.tensors {
            let kind = match t.kind {
                TensorKind::Input => Some(TensorKind::Input),
                TensorKind::Weight => Some(TensorKind::Weight),
                _ => None,
            };
            b.tensor(TensorSpec {
                name: t.name.into(),
                bytes: t.bytes,
                kind,
                shape: None,
                dtype: None,
            });
            if t.kind == TensorKind::Output {
                b.output(t.name);
            }
        }
        let name = |i: &usize| {
            self.tensors
                .get(*i)
                .map(|t| CompactString::from(t.name))
                .unwrap_or_default()
        };
        for o in &self.ops {
            b.op(OpSpec {
                name: o.name.into(),
                op_type: o.op_type.into(),
                inputs: o.inputs.iter().map(name).collect(),
                outputs: o.outputs.iter().map(name).collect(),
                flops: o.flops,
            });
        }
        b.build()
    }

    /// Brings a freshly read trace to this version's model: older spellings
    /// upgraded ([`Trace::upgrade`]) and the summary reconciled with the
    /// events ([`Trace::reconcile`]).
    pub fn settle(&mut self) {
        self.upgrade();
        self.reconcile();
        self.fit();
    }

    /// Gives back the growth room parsing left in the op, tensor and
    /// counter lists (a list read from JSON grows by doubling; the id lists
    /// are read exact, [`crate::input::exact_vec`]).
    fn fit(&mut self) {
        self.ops.shrink_to_fit();
        self.tensors.shrink_to_fit();
        self.counters.shrink_to_fit();
        for c in &mut self.counters {
            c.samples.shrink_to_fit();
        }
    }

    /// Loads a trace file. Read in runs (`read`): one pass finds the large
    /// arrays and cuts them into runs of whole elements, which are read
    /// back and parsed onto the columns on two threads, so the file is
    /// never held whole (a 1M-event trace peaked at its columns plus its
    /// 309 MB of text). A file that reader does not follow, and every
    /// malformed one, is parsed whole for the canonical result or error;
    /// as a stream when memory is short.
    pub fn load(path: &Path) -> Result<Trace> {
        let size = crate::input::check_size(path)?;
        // A small file is read whole: two passes and a thread cost more
        // than its bytes (a 150 kB sample verified in 6 ms, not 4).
        let in_runs = match size >= read::WHOLE_BELOW {
            true => read::load(path).map_err(|e| Error::io(path, e))?,
            false => None,
        };
        let parsed = match in_runs {
            Some(t) => t.finished(),
            None if crate::input::memory_is_short(size) => return Trace::parse_stream(path),
            None => {
                let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
                Trace::from_slice(crate::input::strip_bom(&bytes))
            }
        };
        let t = parsed.map_err(|e| Error::parse_at(path, e.pos, "spillscope trace", e.msg))?;
        Trace::checked_schema(path, t)
    }

    /// Loads a trace parsing it as a stream (what [`Trace::load`] does when
    /// memory is short), with the same checks.
    pub fn load_streamed(path: &Path) -> Result<Trace> {
        crate::input::check_size(path)?;
        Trace::parse_stream(path)
    }

    /// The streamed parse and checks, the size cap already checked.
    fn parse_stream(path: &Path) -> Result<Trace> {
        let f = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
        let mut r = std::io::BufReader::with_capacity(1 << 20, f);
        crate::input::skip_bom(&mut r).map_err(|e| Error::io(path, e))?;
        let mut t: Trace =
            serde_json::from_reader(r).map_err(|e| Error::json(path, "spillscope trace", &e))?;
        t.check_refs()
            .and_then(|()| t.check_ranges())
            .map_err(|e| Error::parse(path, "spillscope trace", e))?;
        t.settle();
        Trace::checked_schema(path, t)
    }

    /// Brings a trace written by an earlier version to this model: kernel
    /// traces spelled each op's pipe into its type (`MATMUL@CUBE`); it is
    /// now the op's `unit`.
    pub fn upgrade(&mut self) {
        let spelled = |o: OpRef| {
            o.unit.is_none()
                && o.op_type
                    .rsplit_once('@')
                    .is_some_and(|(t, p)| !t.is_empty() && !p.is_empty())
        };
        if self.ops.is_empty() || !self.ops.iter().all(spelled) {
            return;
        }
        self.ops.update_all(|_, o| {
            if let Some((t, p)) = o.op_type.rsplit_once('@') {
                o.unit = Some(Unit(p.into()));
                o.op_type = t.to_string().into();
            }
        });
    }

    fn checked_schema(path: &Path, t: Trace) -> Result<Trace> {
        if t.schema != SCHEMA {
            return Err(Error::parse(
                path,
                "spillscope trace",
                format!("schema {:?}, expected {SCHEMA:?}", t.schema),
            ));
        }
        Ok(t)
    }

    /// Parses a trace, the large sections (events, ops, tensors) in
    /// parallel: the top level is split with `RawValue` (a fast scan), then
    /// each section is deserialised on its own thread.
    pub fn from_slice(bytes: &[u8]) -> std::result::Result<Trace, TraceParseError> {
        use serde_json::value::RawValue;
        #[derive(Deserialize)]
        struct Split<'a> {
            schema: String,
            source: Source,
            meta: Meta,
            pools: Vec<Pool>,
            #[serde(borrow)]
            tensors: &'a RawValue,
            #[serde(borrow)]
            ops: &'a RawValue,
            #[serde(borrow)]
            events: &'a RawValue,
            #[serde(default, borrow)]
            counters: Option<&'a RawValue>,
            summary: Summary,
        }
        let s: Split =
            serde_json::from_slice(bytes).map_err(|e| TraceParseError::json("", &e, 0, bytes))?;
        // A section's error is placed in the whole file: the section's text
        // is a slice of `bytes`.
        let section = |name: &str, raw: &RawValue, e: serde_json::Error| {
            let at = raw.get().as_ptr() as usize - bytes.as_ptr() as usize;
            TraceParseError::json(&format!("in `{name}`: "), &e, at, bytes)
        };
        let (events, rest) = std::thread::scope(|sc| {
            let ev = sc.spawn(|| {
                serde_json::from_str::<Events>(s.events.get())
                    .map_err(|e| section("events", s.events, e))
            });
            let tensors = serde_json::from_str::<Tensors>(s.tensors.get())
                .map_err(|e| section("tensors", s.tensors, e));
            let ops =
                serde_json::from_str::<Ops>(s.ops.get()).map_err(|e| section("ops", s.ops, e));
            let counters = match s.counters {
                Some(c) => serde_json::from_str::<Vec<Counter>>(c.get())
                    .map_err(|e| section("counters", c, e)),
                None => Ok(Vec::new()),
            };
            let events = ev.join().unwrap_or_else(|_| {
                Err(TraceParseError {
                    msg: "events: parser thread panicked".into(),
                    pos: None,
                })
            });
            (events, (tensors, ops, counters))
        });
        let t = Trace {
            schema: s.schema,
            source: s.source,
            meta: s.meta,
            pools: s.pools,
            tensors: rest.0?,
            ops: rest.1?,
            events: events?,
            counters: rest.2?,
            summary: s.summary,
            recomputed: Vec::new(),
        };
        t.finished()
    }

    /// A parsed trace checked (references, ranges) and settled.
    fn finished(mut self) -> std::result::Result<Trace, TraceParseError> {
        self.check_refs()
            .and_then(|()| self.check_ranges())
            .map_err(|msg| TraceParseError { msg, pos: None })?;
        self.settle();
        Ok(self)
    }

    /// Every id a trace uses points at something that exists (tensor ids of
    /// events and ops, op ids of events and tensors), so analyses can index
    /// without checks; the error names the first dangling reference.
    pub fn check_refs(&self) -> std::result::Result<(), String> {
        let (nt, no) = (self.tensors.len(), self.ops.len());
        let bad_t = |what: String, t: usize| {
            format!("{what} refers to tensor {t}, but the trace has {nt} tensors")
        };
        let bad_o =
            |what: String, o: usize| format!("{what} refers to op {o}, but the trace has {no} ops");
        // The columns first; the rows only to name the first dangling one.
        let ev = &self.events;
        let refs_ok = ev.max_tensor().is_none_or(|t| t < nt) && ev.max_op().is_none_or(|o| o < no);
        if !refs_ok {
            for (i, e) in ev.iter().enumerate() {
                if e.tensor >= nt {
                    return Err(bad_t(format!("event {i}"), e.tensor));
                }
                if let Some(o) = e.op.filter(|&o| o >= no) {
                    return Err(bad_o(format!("event {i}"), o));
                }
            }
        }
        let ops_ok = self.ops.max_operand().is_none_or(|t| t < nt) && self.ops.parents_before();
        for (i, o) in self.ops.iter().enumerate().filter(|_| !ops_ok) {
            for &t in o.inputs.iter().chain(o.outputs).chain(o.streamed) {
                if t >= nt {
                    return Err(bad_t(format!("op {:?}", o.name), t));
                }
            }
            // A parent is listed before its children: no op is its own
            // ancestor, and nesting is one pass.
            if let Some(p) = o.parent.filter(|&p| p >= i) {
                return Err(format!(
                    "op {i} ({:?}) has parent {p}, which is not an earlier op (a parent comes before its children)",
                    o.name
                ));
            }
        }
        if self.tensors.max_op_ref().is_none_or(|o| o < no) {
            return Ok(());
        }
        for t in &self.tensors {
            for &o in t.producer.iter().chain(t.consumers) {
                if o >= no {
                    return Err(bad_o(format!("tensor {:?}", t.name), o));
                }
            }
        }
        Ok(())
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// What a reader of this trace will check, checked before it is
    /// written: every reference in range, every time and size inside the
    /// limits, every figure a finite number (JSON has no NaN: one would be
    /// written as `null`, which no reader takes for a number).
    pub fn check_writable(&self) -> std::result::Result<(), String> {
        self.check_refs()?;
        self.check_ranges()?;
        let finite = |what: String, v: f64| {
            (!v.is_finite()).then(|| format!("{what} is {v}, not a finite number"))
        };
        let s = &self.summary;
        for (what, v) in [
            ("throughput_fps", s.throughput_fps),
            ("energy_uj", s.energy_uj),
        ] {
            if let Some(m) = finite(format!("summary {what}"), v) {
                return Err(m);
            }
        }
        for o in &self.ops {
            if let Some(m) = o
                .flops
                .and_then(|f| finite(format!("op {:?} flops", o.name), f))
            {
                return Err(m);
            }
        }
        for c in &self.counters {
            if let Some(&(_, v)) = c.samples.iter().find(|x| !x.1.is_finite()) {
                return Err(format!(
                    "counter {:?} has a sample of {v}, not a finite number",
                    c.name
                ));
            }
        }
        if let meta::Producer::Simulator { hardware, .. } = &self.meta.producer {
            if has_null_number(hardware) {
                return Err(
                    "the simulator's hardware profile holds a value that is not a number".into(),
                );
            }
        }
        Ok(())
    }

    /// Writes the trace to `path` ([`crate::output::write_atomic`]) after
    /// [`Trace::check_writable`]: what spillscope writes, it reads back.
    pub fn write(&self, path: &Path, force: bool) -> Result<()> {
        self.check_writable()
            .map_err(|m| Error::Output(format!("{}: not written: {m}", path.display())))?;
        crate::output::write_json_atomic(path, self, force)
    }
}

/// Whether a hardware profile's JSON holds a `null`: serde's spelling of a
/// NaN or an infinity (the profile's optional fields are left out, never
/// null).
fn has_null_number(v: &serde_json::Value) -> bool {
    match v {
        serde_json::Value::Null => true,
        serde_json::Value::Array(a) => a.iter().any(has_null_number),
        serde_json::Value::Object(o) => o.values().any(has_null_number),
        _ => false,
    }
}
