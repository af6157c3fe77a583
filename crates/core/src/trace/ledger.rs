//! The spill ledger: every DRAM traffic figure spillscope prints comes from
//! here, computed from a trace's events by one function ([`Ledger::of`]),
//! so a reader can recompute any summary without trusting its writer.
//!
//! Capacity-caused traffic has four parts (docs/trace-format.md, "The
//! ledger"): evicted out (`evict` write-backs), reloaded, streamed in and
//! streamed out; weights and a graph input's compulsory loads are kept
//! apart. Traces written before the ledger had stream events derive them
//! from each op's `streamed` list.

use super::{EventKind, EventRef, Summary, TensorKind, Trace};
use crate::cols::IdLists;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Where a byte of DRAM traffic belongs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Part {
    /// Write-backs of evicted tensors (count: evictions).
    EvictedOut,
    /// Evicted or streamed-out tensors placed on chip again.
    Reloaded,
    /// Operands read straight from DRAM (after a spill).
    StreamedIn,
    /// Outputs written straight to DRAM.
    StreamedOut,
    /// Weight loads (not spill).
    Weights,
    /// A graph input's loads before it was ever evicted (compulsory).
    InputLoads,
}

impl Part {
    /// The four parts of spill traffic.
    pub const SPILL: [Part; 4] = [
        Part::EvictedOut,
        Part::Reloaded,
        Part::StreamedIn,
        Part::StreamedOut,
    ];
    pub const ALL: [Part; 6] = [
        Part::EvictedOut,
        Part::Reloaded,
        Part::StreamedIn,
        Part::StreamedOut,
        Part::Weights,
        Part::InputLoads,
    ];

    /// The name every screen and report uses.
    pub fn label(self) -> &'static str {
        match self {
            Part::EvictedOut => "evicted out",
            Part::Reloaded => "reloaded",
            Part::StreamedIn => "streamed in",
            Part::StreamedOut => "streamed out",
            Part::Weights => "weights",
            Part::InputLoads => "input loads",
        }
    }

    pub fn is_spill(self) -> bool {
        Part::SPILL.contains(&self)
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// A count of events and their bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tally {
    pub count: u64,
    pub bytes: u64,
}

/// One tally per part.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Parts([Tally; 6]);

impl Parts {
    pub fn get(&self, p: Part) -> Tally {
        self.0[p.index()]
    }

    pub fn add(&mut self, p: Part, bytes: u64) {
        let t = &mut self.0[p.index()];
        t.count += 1;
        t.bytes = t.bytes.saturating_add(bytes);
    }

    /// Spill traffic: the four spill parts' bytes.
    pub fn traffic_bytes(&self) -> u64 {
        Part::SPILL
            .iter()
            .fold(0u64, |a, &p| a.saturating_add(self.get(p).bytes))
    }

    /// Spill events (evictions, reloads, stream events of the spill parts).
    pub fn spill_events(&self) -> u64 {
        Part::SPILL.iter().map(|&p| self.get(p).count).sum()
    }

    /// Every byte that crossed the DRAM bus, weights and compulsory loads too.
    pub fn dram_bytes(&self) -> u64 {
        Part::ALL
            .iter()
            .fold(0u64, |a, &p| a.saturating_add(self.get(p).bytes))
    }

    pub fn is_empty(&self) -> bool {
        self.0.iter().all(|t| t.count == 0)
    }

    /// Adds every part of `o` to this one.
    pub fn merge(&mut self, o: &Parts) {
        for (a, b) in self.0.iter_mut().zip(o.0.iter()) {
            a.count = a.count.saturating_add(b.count);
            a.bytes = a.bytes.saturating_add(b.bytes);
        }
    }
}

/// Reads what [`Serialize for Parts`] writes (`traffic_bytes` is derived,
/// so it is read and ignored).
impl<'de> Deserialize<'de> for Parts {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Parts, D::Error> {
        #[derive(Deserialize, PartialEq, Eq, PartialOrd, Ord)]
        #[serde(untagged)]
        enum Key {
            Part(Part),
            Other(String),
        }
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Entry {
            Tally(Tally),
            Total(#[allow(dead_code)] u64),
        }
        let m: BTreeMap<Key, Entry> = BTreeMap::deserialize(d)?;
        let mut parts = Parts::default();
        for (k, v) in m {
            match (k, v) {
                (Key::Part(p), Entry::Tally(t)) => parts.0[p.index()] = t,
                (Key::Other(k), Entry::Total(_)) if k == "traffic_bytes" => {}
                _ => return Err(serde::de::Error::custom("not a ledger part and its tally")),
            }
        }
        Ok(parts)
    }
}

impl Serialize for Parts {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(Part::ALL.len() + 1))?;
        for p in Part::ALL {
            m.serialize_entry(&p, &self.get(p))?;
        }
        m.serialize_entry("traffic_bytes", &self.traffic_bytes())?;
        m.end()
    }
}

/// A part an op's `streamed` list implied (traces from before stream events).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DerivedStream {
    pub op: usize,
    pub tensor: usize,
    pub part: Part,
    pub bytes: u64,
    pub t_ns: u64,
}

/// The ledger of a trace.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Ledger {
    pub total: Parts,
    /// Per pool, by name.
    pub per_pool: BTreeMap<String, Parts>,
    /// The part each event adds to (`None`: not traffic), by event index;
    /// [`Ledger::bytes`] says how many bytes.
    pub event_part: Vec<Option<Part>>,
    /// Stream parts derived from ops' `streamed` lists.
    pub derived_streams: Vec<DerivedStream>,
    /// Evictions whose write-back was derived from their DMA times (no
    /// `written_bytes`).
    pub derived_writes: usize,
}

/// The summary's ledger fields.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct LedgerFields {
    #[serde(flatten)]
    pub traffic: super::Traffic,
    pub weight_traffic_bytes: u64,
    pub input_load_bytes: u64,
}

crate::holds_traffic!(LedgerFields);

impl LedgerFields {
    /// `(field name, value)` in contract order.
    pub fn named(&self) -> [(&'static str, u64); 8] {
        [
            ("spill_count", self.spill_count),
            ("spilled_bytes", self.spilled_bytes),
            ("reloaded_bytes", self.reloaded_bytes),
            ("streamed_in_bytes", self.streamed_in_bytes),
            ("streamed_out_bytes", self.streamed_out_bytes),
            ("traffic_bytes", self.traffic_bytes),
            ("weight_traffic_bytes", self.weight_traffic_bytes),
            ("input_load_bytes", self.input_load_bytes),
        ]
    }

    /// The same fields as a summary stores them.
    pub fn of_summary(s: &Summary) -> LedgerFields {
        LedgerFields {
            traffic: s.traffic,
            weight_traffic_bytes: s.weight_traffic_bytes,
            input_load_bytes: s.input_load_bytes,
        }
    }

    /// Writes these fields into `s` (and `streamed_bytes`, their stream sum).
    pub fn write_to(&self, s: &mut Summary) {
        s.traffic = self.traffic;
        s.weight_traffic_bytes = self.weight_traffic_bytes;
        s.input_load_bytes = self.input_load_bytes;
        s.streamed_bytes = self.streamed_in_bytes + self.streamed_out_bytes;
    }
}

/// A summary field that disagrees with the events.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Mismatch {
    pub field: &'static str,
    pub stored: u64,
    pub events: u64,
}

impl Ledger {
    /// The ledger of `tr`, from its events (and, for traces without stream
    /// events, its ops' `streamed` lists).
    pub fn of(tr: &Trace) -> Ledger {
        let derived = derived_streams(tr);
        let mut replay = Replay::new(tr);
        if let Some(w) = tr.window() {
            // A window of a longer stream: what fell out of it is in the
            // totals, and its tensors' history classifies their loads.
            replay.ledger.total = w.total_before();
            replay.ledger.per_pool = w.ledger_before.clone();
            for &t in &w.spilled_before {
                if let Some(s) = replay.spilled.get_mut(t) {
                    *s = true;
                }
            }
        }
        let mut next = derived.iter().peekable();
        let ev = &tr.events;
        for (i, (t, (dma, written))) in ev.times().zip(ev.dma_and_written()).enumerate() {
            while let Some(d) = next.next_if(|d| d.t_ns < t) {
                replay.derived(d);
            }
            replay.event(i, &Moved::with(ev, i, dma, written), ev.pool_id(i));
        }
        for d in next {
            replay.derived(d);
        }
        // Per pool by the events' name ids while replaying (a map keyed by
        // name per event cost more than the rest of the replay).
        for (id, parts) in replay.by_pool.iter().enumerate() {
            if let Some(p) = parts {
                let name = tr.events.name_of(id as u32);
                replay
                    .ledger
                    .per_pool
                    .entry(name.to_string())
                    .or_default()
                    .merge(p);
            }
        }
        replay.ledger.derived_streams = derived;
        replay.ledger
    }

    /// The summary's ledger fields, from the events.
    pub fn fields(&self) -> LedgerFields {
        let t = &self.total;
        LedgerFields {
            traffic: super::Traffic {
                spill_count: t.get(Part::EvictedOut).count,
                spilled_bytes: t.get(Part::EvictedOut).bytes,
                reloaded_bytes: t.get(Part::Reloaded).bytes,
                streamed_in_bytes: t.get(Part::StreamedIn).bytes,
                streamed_out_bytes: t.get(Part::StreamedOut).bytes,
                traffic_bytes: t.traffic_bytes(),
            },
            weight_traffic_bytes: t.get(Part::Weights).bytes,
            input_load_bytes: t.get(Part::InputLoads).bytes,
        }
    }

    /// The summary fields of `s` that differ from the events.
    pub fn mismatches(&self, s: &Summary) -> Vec<Mismatch> {
        let stored = LedgerFields::of_summary(s).named();
        self.fields()
            .named()
            .into_iter()
            .zip(stored)
            .filter(|((_, a), (_, b))| a != b)
            .map(|((field, events), (_, stored))| Mismatch {
                field,
                stored,
                events,
            })
            .collect()
    }

    /// Tallies per op (by op id): the parts of the events and derived
    /// streams that belong to each op.
    pub fn per_op(&self, tr: &Trace) -> Vec<Parts> {
        let mut v = vec![Parts::default(); tr.ops.len()];
        self.each(tr, |part, _tensor, op, bytes| {
            if let Some(p) = op.and_then(|o| v.get_mut(o)) {
                p.add(part, bytes);
            }
        });
        v
    }

    /// Tallies per tensor (by tensor id).
    pub fn per_tensor(&self, tr: &Trace) -> Vec<Parts> {
        let mut v = vec![Parts::default(); tr.tensors.len()];
        self.each(tr, |part, tensor, _op, bytes| {
            if let Some(p) = v.get_mut(tensor) {
                p.add(part, bytes);
            }
        });
        v
    }

    /// The bytes an event adds to the ledger: an eviction's write-back
    /// (`written_bytes`, or for traces without it the size when it has
    /// DMA times), any other event's bytes.
    pub fn bytes(e: &EventRef<'_>) -> u64 {
        Moved::of(e).bytes()
    }

    /// The part event `i` adds to, if any.
    pub fn part(&self, i: usize) -> Option<Part> {
        self.event_part.get(i).copied().flatten()
    }

    /// Calls `f(part, tensor, op, bytes)` for every ledger entry.
    pub fn each(&self, tr: &Trace, mut f: impl FnMut(Part, usize, Option<usize>, u64)) {
        for (i, e) in tr.events.iter().enumerate() {
            if let Some(part) = self.part(i) {
                f(part, e.tensor, e.op, Ledger::bytes(&e));
            }
        }
        for d in &self.derived_streams {
            f(d.part, d.tensor, Some(d.op), d.bytes);
        }
    }
}

/// What the ledger reads of an event: the fields [`classify`] and
/// [`Ledger::bytes`] need, read from the columns without the whole row
/// (a replay of every event is the first frame's largest analysis).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Moved {
    pub(crate) kind: EventKind,
    pub(crate) tensor: usize,
    bytes: u64,
    written_bytes: Option<u64>,
    has_dma: bool,
}

impl Moved {
    pub(crate) fn of(e: &EventRef<'_>) -> Moved {
        Moved {
            kind: e.kind,
            tensor: e.tensor,
            bytes: e.bytes,
            written_bytes: e.written_bytes,
            has_dma: e.dma_start_ns.is_some(),
        }
    }

    /// Event `i` of `ev`, given its DMA flag and written bytes (read in one
    /// pass by a loop over every event: a lookup each cost a rank); they
    /// count only where they matter (an eviction's write-back, a transfer
    /// on an evict or an alloc).
    pub(crate) fn with(ev: &super::Events, i: usize, dma: bool, written: Option<u64>) -> Moved {
        let kind = ev.kind(i);
        let (written_bytes, has_dma) = match kind {
            EventKind::Evict => (written, dma),
            EventKind::Alloc => (None, dma),
            _ => (None, false),
        };
        Moved {
            kind,
            tensor: ev.tensor(i),
            bytes: ev.bytes(i),
            written_bytes,
            has_dma,
        }
    }

    /// The bytes it adds to the ledger: an eviction's write-back
    /// (`written_bytes`, or for traces without it the size when it has
    /// DMA times), any other event's bytes.
    pub(crate) fn bytes(&self) -> u64 {
        match self.kind {
            EventKind::Evict => {
                self.written_bytes
                    .unwrap_or(if self.has_dma { self.bytes } else { 0 })
            }
            _ => self.bytes,
        }
    }
}

/// What the replay knows of each tensor.
struct Replay<'a> {
    tr: &'a Trace,
    /// Has been evicted or streamed out: its DRAM copy comes from a spill.
    spilled: Vec<bool>,
    /// Each tensor's kind, a byte apiece: read per event, where the tensor
    /// structs (a cache miss each on a large trace) cost most of the replay.
    kinds: Vec<TensorKind>,
    /// The events' parts per pool, by the pool's name id in the events.
    by_pool: Vec<Option<Parts>>,
    ledger: Ledger,
}

impl<'a> Replay<'a> {
    fn new(tr: &'a Trace) -> Replay<'a> {
        Replay {
            tr,
            spilled: vec![false; tr.tensors.len()],
            kinds: tr.tensors.kind_col().to_vec(),
            by_pool: Vec::new(),
            ledger: Ledger {
                event_part: Vec::with_capacity(tr.events.len()),
                ..Ledger::default()
            },
        }
    }

    fn kind(&self, t: usize) -> TensorKind {
        self.kinds.get(t).copied().unwrap_or(TensorKind::Activation)
    }

    /// The part a transfer from DRAM of `t` belongs to.
    fn inbound(&self, t: usize, spill_part: Part) -> Option<Part> {
        inbound(
            self.kind(t),
            self.spilled.get(t).copied().unwrap_or(false),
            spill_part,
        )
    }

    fn event(&mut self, i: usize, e: &Moved, pool: u32) {
        let kind = self.kind(e.tensor);
        let mut unknown = false;
        let spilled = self.spilled.get_mut(e.tensor).unwrap_or(&mut unknown);
        let part = classify(kind, spilled, e);
        if part == Some(Part::EvictedOut) && e.written_bytes.is_none() {
            self.ledger.derived_writes += 1;
        }
        if let Some(p) = part {
            let bytes = e.bytes();
            self.ledger.total.add(p, bytes);
            let pool = pool as usize;
            if self.by_pool.len() <= pool {
                self.by_pool.resize(pool + 1, None);
            }
            self.by_pool[pool].get_or_insert_default().add(p, bytes);
        }
        debug_assert_eq!(self.ledger.event_part.len(), i);
        self.ledger.event_part.push(part);
    }

    fn derived(&mut self, d: &DerivedStream) {
        let part = match d.part {
            Part::StreamedIn => self.inbound(d.tensor, Part::StreamedIn),
            p => {
                if self.kind(d.tensor) != TensorKind::Weight {
                    if let Some(s) = self.spilled.get_mut(d.tensor) {
                        *s = true;
                    }
                }
                Some(p)
            }
        };
        if let Some(p) = part {
            self.ledger.total.add(p, d.bytes);
            let pool = self
                .tr
                .tensors
                .get(d.tensor)
                .map(|t| t.pool)
                .unwrap_or_default();
            self.ledger
                .per_pool
                .entry(pool.into())
                .or_default()
                .add(p, d.bytes);
        }
    }
}

/// The ledger of a run kept as its events happen, for a simulation that
/// keeps no events ([`crate::sim::simulate_summary`]): each tensor's events
/// come in the order the trace would hold them, and [`classify`] needs no
/// more than that order, so the totals are the ones [`Ledger::of`] would
/// give the whole trace (tested against it).
#[derive(Debug, Clone)]
pub(crate) struct RunningLedger {
    kinds: Vec<TensorKind>,
    spilled: Vec<bool>,
    total: Parts,
    /// Per pool, by the simulator's pool index.
    by_pool: Vec<Parts>,
}

impl RunningLedger {
    pub(crate) fn new(kinds: Vec<TensorKind>, pools: usize) -> RunningLedger {
        RunningLedger {
            spilled: vec![false; kinds.len()],
            kinds,
            total: Parts::default(),
            by_pool: vec![Parts::default(); pools],
        }
    }

    /// Adds event `e`, of a tensor in pool `pool`.
    pub(crate) fn add(&mut self, e: &EventRef<'_>, pool: usize) {
        let kind = self
            .kinds
            .get(e.tensor)
            .copied()
            .unwrap_or(TensorKind::Activation);
        let mut unknown = false;
        let spilled = self.spilled.get_mut(e.tensor).unwrap_or(&mut unknown);
        let e = Moved::of(e);
        if let Some(p) = classify(kind, spilled, &e) {
            let bytes = e.bytes();
            self.total.add(p, bytes);
            if let Some(parts) = self.by_pool.get_mut(pool) {
                parts.add(p, bytes);
            }
        }
    }

    /// The ledger, its pools named (by index); no per-event parts.
    pub(crate) fn finish(self, pool_names: &[String]) -> Ledger {
        let mut per_pool = BTreeMap::new();
        for (parts, name) in self.by_pool.into_iter().zip(pool_names) {
            if !parts.is_empty() {
                per_pool.insert(name.clone(), parts);
            }
        }
        Ledger {
            total: self.total,
            per_pool,
            ..Ledger::default()
        }
    }
}

/// The part a transfer from DRAM of a tensor of `kind` belongs to, given
/// whether it was spilled before.
fn inbound(kind: TensorKind, spilled: bool, spill_part: Part) -> Option<Part> {
    match kind {
        TensorKind::Weight => Some(Part::Weights),
        _ if spilled => Some(spill_part),
        TensorKind::Input => Some(Part::InputLoads),
        // An activation coming from DRAM it was never written to:
        // not traffic the ledger can place (verify flags it).
        _ => None,
    }
}

/// The part event `e` of a tensor of `kind` adds to, if any, given whether
/// the tensor was spilled before it; marks it spilled when `e` spills it.
/// The one rule for placing an event in the ledger: a whole trace's replay
/// and a stream window's trimming both use it.
pub(crate) fn classify(kind: TensorKind, spilled: &mut bool, e: &Moved) -> Option<Part> {
    let weight = kind == TensorKind::Weight;
    let loaded = matches!(kind, TensorKind::Weight | TensorKind::Input);
    let part = match e.kind {
        EventKind::Evict if weight => None,
        EventKind::Evict => Some(Part::EvictedOut),
        EventKind::StreamOut => Some(Part::StreamedOut),
        EventKind::Reload => inbound(kind, *spilled, Part::Reloaded),
        EventKind::StreamIn => inbound(kind, *spilled, Part::StreamedIn),
        // An alloc with a transfer of a weight or graph input is a load.
        EventKind::Alloc if e.has_dma && loaded => inbound(kind, *spilled, Part::Reloaded),
        EventKind::Alloc | EventKind::Free | EventKind::Recompute => None,
    };
    if matches!(e.kind, EventKind::Evict | EventKind::StreamOut) && !weight {
        *spilled = true;
    }
    part
}

/// Stream parts implied by ops' `streamed` lists where the trace has no
/// stream event of that op and tensor (traces from before stream events),
/// in op-start order.
fn derived_streams(tr: &Trace) -> Vec<DerivedStream> {
    if tr.ops.iter().all(|o| o.streamed.is_empty()) {
        return Vec::new();
    }
    let have = StreamEvents::of(tr);
    let mut v: Vec<DerivedStream> = Vec::new();
    for (row, o) in tr.ops.iter().enumerate() {
        for &t in o.streamed {
            if have.contains(row, o.id, t) {
                continue;
            }
            let part = if o.inputs.contains(&t) {
                Part::StreamedIn
            } else {
                Part::StreamedOut
            };
            let bytes = tr.tensors.get(t).map(|x| x.bytes).unwrap_or(0);
            v.push(DerivedStream {
                op: o.id,
                tensor: t,
                part,
                bytes,
                t_ns: o.start_ns,
            });
        }
    }
    v.sort_by_key(|d| d.t_ns);
    v
}

/// The (op, tensor) pairs that have a stream event, asked op by op.
enum StreamEvents {
    /// Each op row's streamed tensors, when every op's id is its row (what
    /// every trace this tool writes has): built in two passes over the
    /// events, in their order. A hash set of the pairs was three quarters
    /// of a 10M-event ledger (a cache miss per event and per lookup).
    ByRow(IdLists),
    /// The pairs by op id, for ops whose ids are not their rows.
    Pairs(hashbrown::HashSet<(usize, usize)>),
}

/// The (op id, tensor) of every stream event that names its op.
fn stream_pairs(ev: &super::Events) -> impl Iterator<Item = (usize, usize)> + '_ {
    (0..ev.len())
        .filter(|&i| matches!(ev.kind(i), EventKind::StreamIn | EventKind::StreamOut))
        .filter_map(|i| ev.op(i).map(|o| (o, ev.tensor(i))))
}

impl StreamEvents {
    fn of(tr: &Trace) -> StreamEvents {
        if !tr.ops.ids_are_rows() {
            return StreamEvents::Pairs(stream_pairs(&tr.events).collect());
        }
        let rows = tr.ops.len();
        StreamEvents::ByRow(IdLists::counted(rows, |f| {
            stream_pairs(&tr.events)
                .filter(|&(o, _)| o < rows)
                .for_each(|(o, t)| f(o, t))
        }))
    }

    fn contains(&self, row: usize, id: usize, tensor: usize) -> bool {
        match self {
            StreamEvents::ByRow(l) => l.get(row).contains(&tensor),
            StreamEvents::Pairs(s) => s.contains(&(id, tensor)),
        }
    }
}

impl Trace {
    /// Sets the summary's ledger fields to the events' sums (for traces
    /// just built, which have no stored figures to compare).
    pub fn fill_ledger(&mut self) {
        Ledger::of(self).fields().write_to(&mut self.summary);
    }

    /// Makes the summary agree with the events: each ledger field is set to
    /// the events' sum, and a trace from before the ledger (no bound
    /// method) gets its per-op bound recomputed with today's accounting.
    /// What changed is kept in [`Trace::recomputed`] for readers to say so.
    pub fn reconcile(&mut self) {
        let ledger = Ledger::of(self);
        let mut changed = ledger.mismatches(&self.summary);
        ledger.fields().write_to(&mut self.summary);
        let s = &self.summary;
        let stale_bound =
            s.lower_bound_method == super::BoundMethod::None && s.lower_bound_traffic_bytes > 0;
        if stale_bound || s.lower_bound_traffic_bytes > s.traffic_bytes {
            let bound = self.per_op_bound();
            let (bytes, method) = match bound {
                Some(b) => (b, super::BoundMethod::PerOp),
                None => (0, super::BoundMethod::None),
            };
            if bytes != self.summary.lower_bound_traffic_bytes {
                changed.push(Mismatch {
                    field: "lower_bound_traffic_bytes",
                    stored: self.summary.lower_bound_traffic_bytes,
                    events: bytes,
                });
            }
            self.summary.lower_bound_traffic_bytes = bytes;
            self.summary.lower_bound_method = method;
        }
        self.recomputed = changed;
    }

    /// The per-op bound of this trace's graph at its capacity (simulator
    /// traces with a capacity only).
    fn per_op_bound(&self) -> Option<u64> {
        if self.source != super::Source::Simulator || self.summary.capacity_bytes == 0 {
            return None;
        }
        let g = self.graph().ok()?;
        Some(crate::graph::bounds::lower_bound_traffic(
            &g,
            self.summary.capacity_bytes,
        ))
    }
}

impl Trace {
    /// One line naming the summary fields the reader recomputed (none when
    /// the file's summary agreed with its events).
    pub fn recomputed_note(&self) -> Option<String> {
        if self.recomputed.is_empty() {
            return None;
        }
        let fields: Vec<String> = self
            .recomputed
            .iter()
            .map(|m| {
                format!(
                    "{} {} -> {}",
                    m.field,
                    crate::units::fmt_bytes_or_count(m.field, m.stored),
                    crate::units::fmt_bytes_or_count(m.field, m.events)
                )
            })
            .collect();
        Some(format!(
            "summary recomputed from the events (the file predates the ledger or disagrees): {}",
            fields.join(", ")
        ))
    }
}

/// The ledger kept beside a cached trace (so a second open replays
/// nothing: a 10M-event ledger is a third of a second), as columns.
impl Ledger {
    pub(crate) fn encode<W: std::io::Write>(
        &self,
        w: &mut super::columnar::Writer<W>,
    ) -> std::io::Result<()> {
        let parts = |p: &Parts| p.0.into_iter().flat_map(|t| [t.count, t.bytes]);
        w.u64s(12, parts(&self.total))?;
        let n = self.per_pool.len();
        w.u64s(1, std::iter::once(n as u64))?;
        w.strs(n, self.per_pool.keys().map(String::as_str))?;
        w.u64s(12 * n, self.per_pool.values().flat_map(parts))?;
        let tag = |p: Option<Part>| p.map_or(0, |p| p.index() as u8 + 1);
        let n = self.event_part.len();
        w.u8s(n, self.event_part.iter().map(|&p| tag(p)))?;
        let d = &self.derived_streams;
        w.u64s(1, std::iter::once(d.len() as u64))?;
        w.u64s(d.len(), d.iter().map(|s| s.op as u64))?;
        w.u64s(d.len(), d.iter().map(|s| s.tensor as u64))?;
        w.u8s(d.len(), d.iter().map(|s| tag(Some(s.part))))?;
        w.u64s(d.len(), d.iter().map(|s| s.bytes))?;
        w.u64s(d.len(), d.iter().map(|s| s.t_ns))?;
        w.u64s(1, std::iter::once(self.derived_writes as u64))
    }

    /// A ledger [`Ledger::encode`] wrote of `tr` (its events' count and
    /// the derived streams' ops and tensors checked against it).
    pub(crate) fn decode(r: &mut super::columnar::Reader, tr: &Trace) -> Result<Ledger, String> {
        let parts = |v: &[u64]| {
            let mut p = Parts::default();
            for (i, t) in p.0.iter_mut().enumerate() {
                *t = Tally {
                    count: v[2 * i],
                    bytes: v[2 * i + 1],
                };
            }
            p
        };
        let total = parts(&r.u64s(12, "ledger totals")?);
        let n = r.count("ledger pools")?;
        let names = r.strs(n, "ledger pools")?;
        let tallies = r.u64s(12 * n, "ledger pool totals")?;
        let per_pool = (0..n)
            .map(|i| {
                (
                    names.get(i).to_string(),
                    parts(&tallies[12 * i..12 * i + 12]),
                )
            })
            .collect();
        let of = |t: u8| match t {
            0 => Some(None),
            t => Part::ALL.get(t as usize - 1).map(|&p| Some(p)),
        };
        let n = tr.events.len();
        let event_part = r.tags(n, "ledger event parts", of)?;
        let k = r.count("ledger derived streams")?;
        let op = r.u64s(k, "derived stream ops")?;
        let tensor = r.u64s(k, "derived stream tensors")?;
        let part = r.tags(k, "derived stream parts", |t| of(t).flatten())?;
        let bytes = r.u64s(k, "derived stream sizes")?;
        let t_ns = r.u64s(k, "derived stream times")?;
        let (ops, tensors) = (tr.ops.len() as u64, tr.tensors.len() as u64);
        if op.iter().any(|&o| o >= ops) || tensor.iter().any(|&t| t >= tensors) {
            return Err("derived streams: an op or tensor past the trace's".into());
        }
        let derived_streams = (0..k)
            .map(|i| DerivedStream {
                op: op[i] as usize,
                tensor: tensor[i] as usize,
                part: part[i],
                bytes: bytes[i],
                t_ns: t_ns[i],
            })
            .collect();
        let derived_writes = r.count("ledger derived writes")?;
        Ok(Ledger {
            total,
            per_pool,
            event_part,
            derived_streams,
            derived_writes,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(rel: &str) -> Trace {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../..")
            .join(rel);
        Trace::load(&p).unwrap()
    }

    /// The lookup by row answers as the hash set of pairs does, for every
    /// op's streamed tensors and for tensors it does not stream.
    #[test]
    fn stream_events_by_row_agree_with_the_pairs() {
        for rel in [
            "sample-traces/encdec-1mib.lru.json",
            "tests/data/legacy/edge-resnet50-b3.lru.v0.json",
        ] {
            let tr = load(rel);
            assert!(tr.ops.ids_are_rows(), "{rel}");
            let StreamEvents::ByRow(rows) = StreamEvents::of(&tr) else {
                panic!("{rel}: ids are rows");
            };
            let by_row = StreamEvents::ByRow(rows);
            let pairs = StreamEvents::Pairs(stream_pairs(&tr.events).collect());
            let mut asked = 0;
            for (row, o) in tr.ops.iter().enumerate() {
                for &t in o.streamed.iter().chain(o.inputs).chain(o.outputs) {
                    let (a, b) = (by_row.contains(row, o.id, t), pairs.contains(row, o.id, t));
                    assert_eq!(a, b, "{rel}: op {row}, tensor {t}");
                    asked += usize::from(a);
                }
            }
            let streams = stream_pairs(&tr.events).count();
            assert_eq!(asked > 0, streams > 0, "{rel}: {asked} found of {streams}");
        }
        // The legacy trace's streams are all derived; the current one's none.
        assert!(
            !Ledger::of(&load("tests/data/legacy/edge-resnet50-b3.lru.v0.json"))
                .derived_streams
                .is_empty()
        );
        assert!(Ledger::of(&load("sample-traces/encdec-1mib.lru.json"))
            .derived_streams
            .is_empty());
    }
}
