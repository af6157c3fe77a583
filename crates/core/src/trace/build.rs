//! Assembling a trace from imported pieces: tensors interned by name, ops,
//! events and counters, with the summary derived from the events so imported
//! and simulated traces answer the same questions.

use super::{
    Counter, Event, EventKind, Meta, Pool, Producer, Source, Summary, TensorKind, Trace, TraceOp,
    TraceTensor, SCHEMA,
};
use std::collections::HashMap;

/// Builds a `spillscope.trace/1` from importer output.
#[derive(Debug)]
pub struct TraceBuilder {
    pub tensors: Vec<TraceTensor>,
    pub ops: Vec<TraceOp>,
    pub events: super::Events,
    pub counters: Vec<Counter>,
    pub pools: Vec<Pool>,
    by_name: HashMap<String, usize>,
    meta: Meta,
    source: Source,
    /// Overrides the summary's peak live bytes (e.g. a profiler's own total).
    pub peak_live_override: Option<u64>,
}

impl TraceBuilder {
    pub fn new(source: Source, model: &str, policy: &str) -> TraceBuilder {
        TraceBuilder {
            tensors: Vec::new(),
            ops: Vec::new(),
            events: super::Events::new(),
            counters: Vec::new(),
            pools: Vec::new(),
            by_name: HashMap::new(),
            meta: Meta {
                model: model.into(),
                policy: policy.into(),
                ..Meta::default()
            },
            source,
            peak_live_override: None,
        }
    }

    /// Who made the trace (an importer, with what it chose).
    pub fn set_producer(&mut self, producer: Producer) {
        self.meta.producer = producer;
    }

    /// The id of tensor `name`, declaring it if new (bytes grow to the largest seen).
    pub fn tensor(&mut self, name: &str, bytes: u64, kind: TensorKind, pool: &str) -> usize {
        if let Some(&id) = self.by_name.get(name) {
            let t = &mut self.tensors[id];
            t.bytes = t.bytes.max(bytes);
            return id;
        }
        let id = self.tensors.len();
        self.tensors.push(TraceTensor {
            id,
            name: name.into(),
            bytes,
            kind,
            pool: pool.into(),
            producer: None,
            consumers: Vec::new(),
        });
        self.by_name.insert(name.into(), id);
        id
    }

    pub fn tensor_id(&self, name: &str) -> Option<usize> {
        self.by_name.get(name).copied()
    }

    pub fn pool(&mut self, name: &str, capacity: u64, alignment: u64) {
        match self.pools.iter_mut().find(|p| p.name == name) {
            Some(p) => p.capacity_bytes = p.capacity_bytes.max(capacity),
            None => self.pools.push(Pool {
                name: name.into(),
                capacity_bytes: capacity,
                alignment,
            }),
        }
    }

    /// Adds an op; its id is its position.
    pub fn op(&mut self, mut op: TraceOp) -> usize {
        op.id = self.ops.len();
        for &t in &op.outputs {
            if let Some(tt) = self.tensors.get_mut(t) {
                tt.producer.get_or_insert(op.id);
            }
        }
        for &t in &op.inputs {
            if let Some(tt) = self.tensors.get_mut(t) {
                if tt.consumers.last() != Some(&op.id) {
                    tt.consumers.push(op.id);
                }
            }
        }
        self.ops.push(op);
        self.ops.len() - 1
    }

    /// A plain event (no DMA times, no extensions). The arguments are the
    /// contract's event fields, in the contract's order.
    #[allow(clippy::too_many_arguments)]
    pub fn event(
        &mut self,
        t_ns: u64,
        kind: EventKind,
        tensor: usize,
        bytes: u64,
        pool: &str,
        offset: Option<u64>,
        op: Option<usize>,
        thread: Option<u64>,
    ) {
        self.events.push(Event {
            offset,
            op,
            thread,
            ..Event::plain(t_ns, kind, tensor, bytes, pool)
        });
    }

    /// A tensor a compiler's plan keeps in DRAM for its whole lifetime
    /// (Vela, ExecuTorch's banked plans): `producer` streams it out, each
    /// of `readers` streams it in, each at the start of its op (`spans`:
    /// per op, start and end); `streamed[op]` lists it for each of them.
    #[allow(clippy::too_many_arguments)]
    pub fn stream_whole_life(
        &mut self,
        tensor: usize,
        bytes: u64,
        pool: &str,
        producer: Option<usize>,
        readers: &[usize],
        spans: &[(u64, u64)],
        streamed: &mut [Vec<usize>],
    ) {
        if let Some(p) = producer {
            self.event(
                spans[p].0,
                EventKind::StreamOut,
                tensor,
                bytes,
                pool,
                None,
                Some(p),
                None,
            );
            streamed[p].push(tensor);
        }
        for &c in readers {
            self.event(
                spans[c].0,
                EventKind::StreamIn,
                tensor,
                bytes,
                pool,
                None,
                Some(c),
                None,
            );
            if !streamed[c].contains(&tensor) {
                streamed[c].push(tensor);
            }
        }
    }

    /// Keeps only the ops and tensors the maps keep, renumbered to the new
    /// ids they give (`new_of_old[i]`: op or tensor `i`'s new id, `None`:
    /// dropped; new ids in the old order). References to a dropped op
    /// (an event's op, a parent, a producer or consumer) become none;
    /// events and ops must not refer to a dropped tensor. What a stream
    /// window does when older ops and tensors fall out of it.
    pub fn renumber(&mut self, op_of: &[Option<usize>], tensor_of: &[Option<usize>]) {
        let op = |o: usize| op_of.get(o).copied().flatten();
        let tensor = |t: usize| tensor_of.get(t).copied().flatten();
        self.events.map_ops(op);
        self.events.map_tensors(|t| tensor(t).unwrap_or(t));
        let ops = std::mem::take(&mut self.ops);
        self.ops = ops
            .into_iter()
            .filter_map(|mut o| {
                o.id = op(o.id)?;
                o.parent = o.parent.and_then(op);
                for list in [&mut o.inputs, &mut o.outputs, &mut o.streamed] {
                    *list = list.iter().filter_map(|&t| tensor(t)).collect();
                }
                Some(o)
            })
            .collect();
        let tensors = std::mem::take(&mut self.tensors);
        self.tensors = tensors
            .into_iter()
            .filter_map(|mut t| {
                t.id = tensor(t.id)?;
                t.producer = t.producer.and_then(op);
                t.consumers = t.consumers.iter().filter_map(|&o| op(o)).collect();
                Some(t)
            })
            .collect();
        self.by_name = self
            .tensors
            .iter()
            .map(|t| (t.name.to_string(), t.id))
            .collect();
    }

    /// Finishes: sorts events by time, fills in pools and the summary.
    pub fn finish(mut self) -> Trace {
        self.events.sort_by_time();
        // Running live bytes (all pools) and each pool's high-water mark;
        // pools are few, so a small vector beats hashing per event.
        let deltas = super::residency::deltas(&self.events, &self.ops, self.tensors.len());
        let steps = self.events.iter().zip(deltas).map(|(e, d)| (e.t_ns, d));
        let window = match &self.meta.producer {
            Producer::Instrumented(i) => i.window.as_deref().cloned(),
            _ => None,
        };
        let window = window.unwrap_or_default();
        let peak = super::residency::walk(steps)
            .map(|(_, b)| b as i128)
            .max()
            .unwrap_or(0)
            .max(window.peak_live_before as i128);
        // What fell out of a stream window still sized its pools.
        let mut high_water: Vec<(&str, u64)> = window
            .high_water_before
            .iter()
            .map(|(p, &hw)| (p.as_str(), hw))
            .collect();
        for (i, e) in self.events.iter().enumerate() {
            if let Some(off) = e.offset {
                // Offsets come from importers' files: a sum past 64 bits is
                // held at the top, where the range checks name it.
                let end = off.saturating_add(e.bytes);
                let pool = self.events.pool(i);
                match high_water.iter_mut().find(|h| h.0 == pool) {
                    Some(h) => h.1 = h.1.max(end),
                    None => high_water.push((pool, end)),
                }
            }
        }
        let mut pools = std::mem::take(&mut self.pools);
        for i in 0..self.events.len() {
            let pool = self.events.pool(i);
            if !pools.iter().any(|p| p.name == pool) {
                pools.push(Pool {
                    name: pool.to_string(),
                    capacity_bytes: 0,
                    alignment: 1,
                });
            }
        }
        for p in &mut pools {
            if let Some(&(_, hw)) = high_water.iter().find(|h| h.0 == p.name) {
                p.capacity_bytes = p.capacity_bytes.max(hw);
            }
            if p.capacity_bytes == 0 {
                p.capacity_bytes = peak.max(1) as u64;
            }
        }
        let start = self
            .ops
            .iter()
            .map(|o| o.start_ns)
            .chain(self.events.iter().map(|e| e.t_ns))
            .min()
            .unwrap_or(0);
        // A stream window's time 0 is the stream's start.
        let start = if window.is_trimmed() { 0 } else { start };
        let end = self
            .ops
            .iter()
            .map(|o| o.end_ns)
            .chain(self.events.iter().map(|e| e.dma_end_ns.unwrap_or(e.t_ns)))
            .max()
            .unwrap_or(0);
        let latency = end.saturating_sub(start);
        let peak_live = self.peak_live_override.unwrap_or(peak.max(0) as u64);
        let summary = Summary {
            latency_ns: latency,
            stall_ns: window.stall_before_ns + self.ops.iter().map(|o| o.stall_ns).sum::<u64>(),
            peak_live_bytes: peak_live,
            peak_resident_bytes: peak.max(0) as u64,
            throughput_fps: if latency > 0 {
                1e9 / latency as f64
            } else {
                0.0
            },
            capacity_bytes: pools.first().map(|p| p.capacity_bytes).unwrap_or(0),
            ..Summary::default()
        };
        let mut tr = Trace {
            schema: SCHEMA.into(),
            source: self.source,
            meta: self.meta,
            pools,
            tensors: self.tensors.into(),
            ops: self.ops.into(),
            events: self.events,
            counters: self.counters,
            summary,
            recomputed: Vec::new(),
        };
        tr.fill_ledger();
        tr
    }
}
