//! The simulation loop. Per op, in schedule order:
//! 1. decide which operands stream (the op's working set exceeds what is free
//!    of pinned tensors): they are read/written in DRAM by tiled streaming;
//! 2. make every other input resident (reload on demand, or already
//!    prefetched), evicting by policy with a fragmentation-aware victim choice
//!    (grow one contiguous hole), writing back only dirty tensors;
//! 3. allocate outputs; 4. wait for transfers (stall), run for the roofline
//!    time (overlapping streaming when DMA is async); 5. prefetch inputs of
//!    the next ops into free space; 6. free tensors whose lifetime ends.

use super::config::ActivationDtype;
use super::{Allocator, EvictionPolicy, SimConfig, WeightMode};
use crate::analysis::bounds;
use crate::cost::bus::Direction;
use crate::cost::{op_time_ns, BusModel, HardwareProfile};
use crate::graph::{transform, Graph, Liveness, TensorId, TensorKind};
use crate::trace::{
    Counter, Event, EventKind, Meta, Pool, Producer, Source, Summary, Trace, TraceOp, TraceTensor,
    SCHEMA,
};
use crate::{Error, Result};
use std::borrow::Cow;

const POOL: &str = "sram";
/// Address space of the `ideal` policy: large enough never to fill.
const IDEAL_CAPACITY: u64 = 1 << 60;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Loc {
    /// Not produced yet, or dead.
    Absent,
    /// Only a DRAM copy exists.
    Dram,
    /// Resident on chip at `offset`.
    Chip,
}

#[derive(Debug, Clone, Copy)]
struct TState {
    loc: Loc,
    offset: u64,
    /// The chip copy is newer than DRAM (must be written back on eviction).
    dirty: bool,
    /// Step of the last use (LRU).
    last_access: u64,
    /// When a transfer into the chip completes.
    ready_at: u64,
    /// Has been on chip before (a return trip is a reload, not a first load).
    loaded_once: bool,
}

struct Sim<'a> {
    g: &'a Graph,
    cfg: &'a SimConfig,
    alloc: Allocator,
    bus: BusModel,
    st: Vec<TState>,
    pinned: Vec<bool>,
    modeled: Vec<bool>,
    events: Vec<Event>,
    live: Liveness,
    demand: Vec<u64>,
    // Running totals.
    spill_count: u64,
    spilled_bytes: u64,
    reloaded_bytes: u64,
    weight_bytes: u64,
    streamed_bytes: u64,
    recomputed_bytes: u64,
    peak_resident: u64,
    resident_samples: Vec<(u64, f64)>,
}

impl<'a> Sim<'a> {
    fn aligned(&self, t: TensorId) -> u64 {
        self.alloc.aligned(self.g.tensors[t].bytes)
    }

    fn next_use(&self, t: TensorId, now: usize) -> u64 {
        let c = &self.g.tensors[t].consumers;
        let i = c.partition_point(|&s| s <= now);
        match c.get(i) {
            Some(&s) => s as u64,
            None => self.g.ops.len() as u64 + 1,
        }
    }

    fn score(&self, t: TensorId, now: usize) -> f64 {
        let s = &self.st[t];
        self.cfg.policy.score(
            self.aligned(t),
            s.last_access,
            self.next_use(t, now),
            now as u64,
        )
    }

    fn push(&mut self, mut e: Event, step: usize) {
        // Spill events carry the demand at their step, for classification.
        if matches!(e.kind, EventKind::Evict | EventKind::Reload) {
            e.live_bytes = Some(self.demand[step]);
        }
        if self.events.len() == self.events.capacity() {
            // Past the up-front reserve (an alloc and a free per tensor),
            // grow by a quarter rather than doubling: events are the
            // biggest thing a simulation holds, and a doubled vector is up
            // to half empty at the end.
            let more = self.events.capacity() / 4 + 1024;
            self.events.reserve_exact(more);
        }
        self.events.push(e);
    }

    fn event(&self, t_ns: u64, kind: EventKind, t: TensorId, op: usize) -> Event {
        Event {
            t_ns,
            kind,
            tensor: t,
            bytes: self.g.tensors[t].bytes,
            pool: POOL.into(),
            offset: Some(self.st[t].offset),
            op: Some(op),
            dma_start_ns: None,
            dma_end_ns: None,
            thread: None,
            live_bytes: None,
            reason: None,
        }
    }

    fn note_resident(&mut self, t_ns: u64) {
        let used = self.alloc.used();
        self.peak_resident = self.peak_resident.max(used);
        match self.resident_samples.last_mut() {
            Some(last) if last.0 == t_ns => last.1 = used as f64,
            _ => self.resident_samples.push((t_ns, used as f64)),
        }
    }

    /// Recomputing evicted `t` instead of reloading it: allowed by the config,
    /// the producer's activation inputs all resident, and quicker than the
    /// reload. Returns the cost (ns on the compute unit), the producer's
    /// inputs to keep resident meanwhile, and weight bytes to fetch again.
    fn recompute_plan(
        &self,
        t: TensorId,
        hw: &HardwareProfile,
    ) -> Option<(u64, Vec<TensorId>, u64)> {
        let tensor = &self.g.tensors[t];
        if !matches!(tensor.kind, TensorKind::Activation | TensorKind::Output)
            || !self.cfg.recompute.allows(&tensor.name)
        {
            return None;
        }
        let p = &self.g.ops[tensor.producer?];
        let mut keep = Vec::new();
        let mut weight_load = 0u64;
        let mut operand_bytes = tensor.bytes;
        for &x in &p.inputs {
            let xt = &self.g.tensors[x];
            operand_bytes += xt.bytes;
            if !self.modeled[x] {
                continue;
            }
            if self.st[x].loc == Loc::Chip {
                keep.push(x);
            } else if xt.kind == TensorKind::Weight {
                weight_load += xt.bytes;
            } else {
                return None;
            }
        }
        let compute = op_time_ns(hw, p.flops, operand_bytes).time_ns.ceil() as u64;
        let cost = compute + self.bus.transfer_ns(weight_load, Direction::Read);
        let reload = self.bus.transfer_ns(tensor.bytes, Direction::Read);
        (cost < reload).then_some((cost.max(1), keep, weight_load))
    }

    /// Evicts `t` at `now_ns`; returns the end of its write-back, if any.
    fn evict(&mut self, t: TensorId, now_ns: u64, step: usize, reason: &str) -> u64 {
        let mut e = self.event(now_ns, EventKind::Evict, t, step);
        e.reason = Some(reason.into());
        let mut done = now_ns;
        if self.st[t].dirty {
            let bytes = self.g.tensors[t].bytes;
            let (s, end) = self.bus.issue(now_ns, bytes, Direction::Write);
            e.dma_start_ns = Some(s);
            e.dma_end_ns = Some(end);
            self.spilled_bytes += bytes;
            done = end;
        }
        self.alloc.free(self.st[t].offset);
        self.st[t].loc = Loc::Dram;
        self.st[t].dirty = false;
        self.spill_count += 1;
        self.push(e, step);
        done
    }

    /// Finds room for `size` bytes, evicting unprotected tensors by policy and
    /// growing one contiguous hole. Returns the offset and the latest
    /// write-back end, or `None` when even evicting everything allowed cannot
    /// make a hole that large.
    fn make_room(
        &mut self,
        size: u64,
        protected: &[bool],
        step: usize,
        now_ns: u64,
        for_tensor: TensorId,
    ) -> Option<(u64, u64, usize)> {
        if let Some(off) = self.alloc.alloc(for_tensor, size) {
            return Some((off, now_ns, 0));
        }
        if self.cfg.policy == EvictionPolicy::Ideal || size > self.alloc.capacity() {
            return None;
        }
        let fragmentation = self.alloc.free_bytes() >= size;
        // Segments in address order: holes, evictable blocks, barriers.
        #[derive(Clone, Copy)]
        enum Seg {
            Hole,
            Block(TensorId),
            Barrier,
        }
        let mut segs: Vec<(u64, u64, Seg)> = Vec::new();
        {
            let mut holes = self.alloc.holes().peekable();
            let mut blocks = self.alloc.blocks().peekable();
            loop {
                let take_hole = match (holes.peek(), blocks.peek()) {
                    (Some(h), Some(b)) => h.0 < b.0,
                    (Some(_), None) => true,
                    (None, Some(_)) => false,
                    (None, None) => break,
                };
                if take_hole {
                    let (o, s) = holes.next().unwrap_or((0, 0));
                    segs.push((o, s, Seg::Hole));
                } else {
                    let (o, b) = blocks
                        .next()
                        .unwrap_or((0, crate::sim::allocator::Block { tensor: 0, size: 0 }));
                    let blocked = protected[b.tensor] || self.pinned[b.tensor];
                    segs.push((
                        o,
                        b.size,
                        if blocked {
                            Seg::Barrier
                        } else {
                            Seg::Block(b.tensor)
                        },
                    ));
                }
            }
        }
        // Regions between barriers and their total reclaimable bytes.
        let mut region = vec![usize::MAX; segs.len()];
        let mut totals: Vec<u64> = Vec::new();
        for (i, s) in segs.iter().enumerate() {
            if matches!(s.2, Seg::Barrier) {
                continue;
            }
            if i == 0 || region[i - 1] == usize::MAX {
                totals.push(0);
            }
            let r = totals.len() - 1;
            region[i] = r;
            totals[r] += s.1;
        }
        let mut cands: Vec<(usize, f64, u64)> = segs
            .iter()
            .enumerate()
            .filter_map(|(i, s)| match s.2 {
                Seg::Block(t) if totals[region[i]] >= size => Some((i, self.score(t, step), s.1)),
                _ => None,
            })
            .collect();
        cands.sort_by(|a, b| {
            b.1.partial_cmp(&a.1)
                .unwrap_or(std::cmp::Ordering::Equal)
                .then(b.2.cmp(&a.2))
                .then(a.0.cmp(&b.0))
        });
        let &(seed, _, _) = cands.first()?;
        let r = region[seed];
        let (mut lo, mut hi) = (seed, seed);
        let mut bytes = segs[seed].1;
        let absorb_holes = |lo: &mut usize, hi: &mut usize, bytes: &mut u64| {
            while *lo > 0 && region[*lo - 1] == r && matches!(segs[*lo - 1].2, Seg::Hole) {
                *lo -= 1;
                *bytes += segs[*lo].1;
            }
            while *hi + 1 < segs.len()
                && region[*hi + 1] == r
                && matches!(segs[*hi + 1].2, Seg::Hole)
            {
                *hi += 1;
                *bytes += segs[*hi].1;
            }
        };
        absorb_holes(&mut lo, &mut hi, &mut bytes);
        while bytes < size {
            let left = (lo > 0 && region[lo - 1] == r).then(|| lo - 1);
            let right = (hi + 1 < segs.len() && region[hi + 1] == r).then(|| hi + 1);
            let score_of = |i: usize| match segs[i].2 {
                Seg::Block(t) => self.score(t, step),
                _ => f64::INFINITY,
            };
            let pick_left = match (left, right) {
                (Some(l), Some(rr)) => score_of(l) >= score_of(rr),
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (None, None) => break,
            };
            if pick_left {
                lo -= 1;
                bytes += segs[lo].1;
            } else {
                hi += 1;
                bytes += segs[hi].1;
            }
            absorb_holes(&mut lo, &mut hi, &mut bytes);
        }
        if bytes < size {
            return None;
        }
        let reason = if fragmentation {
            "fragmentation"
        } else {
            "capacity"
        };
        let mut wb_end = now_ns;
        let mut n_evicted = 0;
        for s in &segs[lo..=hi] {
            if let Seg::Block(t) = s.2 {
                wb_end = wb_end.max(self.evict(t, now_ns, step, reason));
                n_evicted += 1;
            }
        }
        let off = self.alloc.alloc(for_tensor, size)?;
        Some((off, wb_end, if fragmentation { n_evicted } else { 0 }))
    }
}

/// The graph as `cfg` rewrites it before simulating: fusion, then fp16
/// activations, then the op order. Borrowed when nothing changes.
pub fn prepare_graph<'g>(g: &'g Graph, cfg: &SimConfig) -> Result<Cow<'g, Graph>> {
    if !cfg.transforms_graph() {
        return Ok(Cow::Borrowed(g));
    }
    let mut h = if cfg.fuse {
        transform::fuse(g)?.0
    } else {
        g.clone()
    };
    if cfg.dtype == ActivationDtype::Fp16 {
        h = transform::to_fp16(&h);
    }
    if !cfg.order.is_file() {
        h = transform::apply_order(&h, &cfg.order)?;
    }
    Ok(Cow::Owned(h))
}

/// Runs one simulation of `g` on `hw` under `cfg` (graph rewrites in `cfg`
/// applied first, so the trace shows the graph that ran).
pub fn simulate(g: &Graph, hw: &HardwareProfile, cfg: &SimConfig) -> Result<Trace> {
    let g = prepare_graph(g, cfg)?;
    simulate_graph(&g, hw, cfg)
}

fn simulate_graph(g: &Graph, hw: &HardwareProfile, cfg: &SimConfig) -> Result<Trace> {
    let n = g.ops.len();
    let nt = g.tensors.len();
    let ideal = cfg.policy == EvictionPolicy::Ideal;
    let capacity = hw.memory.capacity.0;
    if capacity == 0 {
        return Err(Error::Hardware("capacity must be greater than zero".into()));
    }
    let mut pinned = vec![false; nt];
    for p in &cfg.pins {
        let t = g
            .tensor_by_name(p)
            .ok_or_else(|| Error::Config(format!("pin: no tensor named {p:?} in the graph")))?;
        pinned[t.id] = true;
    }
    let mut free_at = Vec::new();
    for (name, extra) in &cfg.free_at {
        let t = g.tensor_by_name(name).ok_or_else(|| {
            Error::Config(format!("free_at: no tensor named {name:?} in the graph"))
        })?;
        free_at.push((t.id, *extra));
    }
    let live = Liveness::compute_with(g, &free_at);
    let modeled: Vec<bool> = g
        .tensors
        .iter()
        .map(|t| !(t.kind == TensorKind::Weight && cfg.weights == WeightMode::Ignore))
        .collect();
    let stream_weights = cfg.weights == WeightMode::Stream;
    let demand: Vec<u64> = (0..n)
        .map(|i| {
            let w: u64 = if stream_weights {
                g.ops[i]
                    .inputs
                    .iter()
                    .filter(|&&t| g.tensors[t].kind == TensorKind::Weight)
                    .map(|&t| g.tensors[t].bytes)
                    .sum()
            } else {
                0
            };
            live.live_bytes[i] + w
        })
        .collect();
    // Which tensors die after each step (from liveness; weights by mode).
    let mut dies_at: Vec<Vec<TensorId>> = vec![Vec::new(); n];
    for t in &g.tensors {
        if t.kind == TensorKind::Weight {
            if cfg.weights == WeightMode::Resident {
                if let Some(&last) = t.consumers.last() {
                    dies_at[last].push(t.id);
                }
            }
            continue;
        }
        if let Some(iv) = live.intervals[t.id] {
            if t.kind != TensorKind::Output {
                dies_at[iv.end].push(t.id);
            }
        }
    }

    let pool_capacity = if ideal { IDEAL_CAPACITY } else { capacity };
    let mut sim = Sim {
        g,
        cfg,
        alloc: Allocator::new(pool_capacity, hw.memory.alignment, hw.memory.allocator),
        bus: BusModel::new(hw),
        st: vec![
            TState {
                loc: Loc::Absent,
                offset: 0,
                dirty: false,
                last_access: 0,
                ready_at: 0,
                loaded_once: false,
            };
            nt
        ],
        pinned,
        modeled,
        events: Vec::with_capacity(2 * nt),
        live,
        demand,
        spill_count: 0,
        spilled_bytes: 0,
        reloaded_bytes: 0,
        weight_bytes: 0,
        streamed_bytes: 0,
        recomputed_bytes: 0,
        peak_resident: 0,
        resident_samples: Vec::new(),
    };
    for t in &g.tensors {
        if matches!(t.kind, TensorKind::Weight | TensorKind::Input) {
            sim.st[t.id].loc = Loc::Dram;
        }
    }
    // Graph inputs are delivered on chip before step 0 where they fit.
    if n > 0 {
        for t in g.tensors.iter().filter(|t| t.kind == TensorKind::Input) {
            let size = sim.aligned(t.id);
            if let Some(off) = sim.alloc.alloc(t.id, size) {
                sim.st[t.id].loc = Loc::Chip;
                sim.st[t.id].offset = off;
                sim.st[t.id].loaded_once = true;
                let mut e = sim.event(0, EventKind::Alloc, t.id, 0);
                e.reason = Some("input".into());
                sim.push(e, 0);
            }
        }
        sim.note_resident(0);
    }

    let prefetch = if hw.dma.async_dma {
        cfg.prefetch_distance.unwrap_or(hw.dma.prefetch_distance)
    } else {
        0
    };
    let mut protected = vec![false; nt];
    let mut trace_ops: Vec<TraceOp> = Vec::with_capacity(n);
    let mut live_samples: Vec<(u64, f64)> = Vec::with_capacity(n);
    let mut now: u64 = 0;
    let mut total_stall: u64 = 0;
    let mut dram_bytes_total: u64 = 0;
    let mut sram_bytes_total: u64 = 0;

    #[allow(clippy::needless_range_loop)] // i is the step, used in many places
    for i in 0..n {
        let op = &g.ops[i];
        let operands: Vec<TensorId> = g
            .operands(i)
            .into_iter()
            .filter(|&t| sim.modeled[t])
            .collect();
        for &t in &operands {
            protected[t] = true;
        }
        let is_input = |t: TensorId| op.inputs.contains(&t);

        // 1. Streaming decision: does the working set fit beside pinned tensors?
        let mut streamed: Vec<TensorId> = Vec::new();
        if !ideal {
            let ws: u64 = operands.iter().map(|&t| sim.aligned(t)).sum();
            let pinned_other: u64 = sim
                .alloc
                .blocks()
                .filter(|(_, b)| sim.pinned[b.tensor] && !protected[b.tensor])
                .map(|(_, b)| b.size)
                .sum();
            let avail = sim.alloc.capacity().saturating_sub(pinned_other);
            if ws > avail {
                let mut order = operands.clone();
                order.sort_by_key(|&t| {
                    let resident = sim.st[t].loc == Loc::Chip;
                    (resident, std::cmp::Reverse(sim.aligned(t)), t)
                });
                let mut rest = ws;
                for t in order {
                    if rest <= avail {
                        break;
                    }
                    rest -= sim.aligned(t);
                    streamed.push(t);
                }
            }
        }
        for &t in &streamed {
            protected[t] = false;
            if sim.st[t].loc == Loc::Chip {
                sim.evict(t, now, i, "stream");
            }
        }

        // 2. Inputs resident.
        let mut wait_until = now;
        let mut frag_evictions = 0usize;
        let mut recompute_ns = 0u64;
        for &t in &operands {
            if !is_input(t) || streamed.contains(&t) {
                continue;
            }
            let plan = if sim.st[t].loc == Loc::Dram {
                sim.recompute_plan(t, hw)
            } else {
                None
            };
            match (sim.st[t].loc, plan) {
                (Loc::Chip, _) => {
                    wait_until = wait_until.max(sim.st[t].ready_at);
                }
                (Loc::Dram, Some((cost, producer_inputs, weight_load))) => {
                    // The producer's inputs must survive making room.
                    let newly: Vec<TensorId> = producer_inputs
                        .iter()
                        .copied()
                        .filter(|&x| !protected[x])
                        .collect();
                    for &x in &newly {
                        protected[x] = true;
                    }
                    let size = sim.aligned(t);
                    let placed = sim.make_room(size, &protected, i, now, t);
                    for &x in &newly {
                        protected[x] = false;
                    }
                    match placed {
                        Some((off, wb_end, frag)) => {
                            frag_evictions += frag;
                            wait_until = wait_until.max(wb_end);
                            recompute_ns += cost;
                            sim.weight_bytes += weight_load;
                            sim.recomputed_bytes += g.tensors[t].bytes;
                            sim.st[t].loc = Loc::Chip;
                            sim.st[t].offset = off;
                            sim.st[t].dirty = false;
                            sim.st[t].ready_at = now;
                            let mut ev = sim.event(now, EventKind::Recompute, t, i);
                            ev.reason = Some(match g.tensors[t].producer {
                                Some(p) => format!("recompute:{}", g.ops[p].name).into(),
                                None => "recompute".into(),
                            });
                            sim.push(ev, i);
                            sim.note_resident(now);
                        }
                        None => {
                            protected[t] = false;
                            streamed.push(t);
                        }
                    }
                }
                (Loc::Dram | Loc::Absent, _) => {
                    let size = sim.aligned(t);
                    match sim.make_room(size, &protected, i, now, t) {
                        Some((off, wb_end, frag)) => {
                            frag_evictions += frag;
                            let bytes = g.tensors[t].bytes;
                            let (s, e) = sim.bus.issue(wb_end, bytes, Direction::Read);
                            sim.st[t].loc = Loc::Chip;
                            sim.st[t].offset = off;
                            sim.st[t].dirty = false;
                            sim.st[t].ready_at = e;
                            let kind = if sim.st[t].loaded_once
                                && g.tensors[t].kind != TensorKind::Weight
                                || g.tensors[t].kind == TensorKind::Activation
                                || g.tensors[t].kind == TensorKind::Output
                            {
                                sim.reloaded_bytes += bytes;
                                EventKind::Reload
                            } else {
                                sim.weight_bytes += bytes;
                                EventKind::Alloc
                            };
                            sim.st[t].loaded_once = true;
                            let mut ev = sim.event(now, kind, t, i);
                            ev.dma_start_ns = Some(s);
                            ev.dma_end_ns = Some(e);
                            ev.reason = Some(
                                match g.tensors[t].kind {
                                    TensorKind::Weight => "weight-load",
                                    TensorKind::Input if kind == EventKind::Alloc => "input-load",
                                    _ => "on-demand",
                                }
                                .into(),
                            );
                            sim.push(ev, i);
                            sim.note_resident(now);
                            wait_until = wait_until.max(e);
                        }
                        None => {
                            protected[t] = false;
                            streamed.push(t);
                        }
                    }
                }
            }
            sim.st[t].last_access = i as u64;
        }
        // 3. Outputs.
        for &t in &operands {
            if is_input(t) || streamed.contains(&t) {
                continue;
            }
            let size = sim.aligned(t);
            match sim.make_room(size, &protected, i, now, t) {
                Some((off, wb_end, frag)) => {
                    frag_evictions += frag;
                    wait_until = wait_until.max(wb_end);
                    sim.st[t].loc = Loc::Chip;
                    sim.st[t].offset = off;
                    sim.st[t].dirty = true;
                    sim.st[t].ready_at = now;
                    sim.st[t].loaded_once = true;
                    sim.st[t].last_access = i as u64;
                    let e = sim.event(now, EventKind::Alloc, t, i);
                    sim.push(e, i);
                    sim.note_resident(now);
                }
                None => {
                    protected[t] = false;
                    streamed.push(t);
                }
            }
        }

        // 4. Run. Sync DMA: the op starts once every transfer it needs is
        // done, then streams (compute + stream). Async DMA: transfers are
        // pipelined with compute tile by tile (double buffering), so the op
        // ends at the later of its compute and its last transfer.
        let frag_ns = (frag_evictions as f64 * hw.dma.fragmentation_penalty_ns).round() as u64;
        let sync_penalty = hw.dma.sync_penalty_ns.round() as u64;
        let operand_bytes: u64 = operands.iter().map(|&t| g.tensors[t].bytes).sum();
        let roof = op_time_ns(hw, op.flops, operand_bytes);
        let measured = cfg
            .measured_ns
            .as_ref()
            .and_then(|m| m.get(&op.name).copied());
        let compute = measured.unwrap_or(roof.time_ns.ceil() as u64).max(1) + recompute_ns;
        let (mut rd, mut wr) = (0u64, 0u64);
        for &t in &streamed {
            let b = g.tensors[t].bytes;
            if is_input(t) {
                rd += b;
                if g.tensors[t].kind == TensorKind::Weight {
                    sim.weight_bytes += b;
                } else {
                    sim.reloaded_bytes += b;
                    sim.streamed_bytes += b;
                }
            } else {
                wr += b;
                sim.spilled_bytes += b;
                sim.streamed_bytes += b;
            }
        }
        let stream_ns = sim.bus.stream_ns(rd, wr);
        // An op's interval starts when it is dispatched (the previous op
        // ended) and includes its stall, so op intervals tile the timeline.
        let start = now;
        let end = if hw.dma.async_dma {
            let (_, stream_end) = sim.bus.occupy(start, stream_ns);
            let data_end = wait_until.max(stream_end);
            let compute_end = start + frag_ns + compute;
            if data_end > compute_end {
                data_end + sync_penalty
            } else {
                compute_end
            }
        } else {
            let mut ready = wait_until;
            if ready > now {
                ready += sync_penalty;
            }
            ready += frag_ns;
            let (_, stream_end) = sim.bus.occupy(ready, stream_ns);
            stream_end.max(ready) + compute
        };
        let stall = end - start - compute;
        total_stall += stall;
        live_samples.push((start, sim.live.live_bytes[i] as f64));
        sram_bytes_total += operand_bytes;

        // 5. Prefetch inputs of the next ops into free space.
        if prefetch > 0 {
            for j in (i + 1)..=(i + prefetch).min(n.saturating_sub(1)) {
                let need_out: u64 = g.ops[j].outputs.iter().map(|&t| sim.aligned(t)).sum();
                for &t in &g.ops[j].inputs {
                    if !sim.modeled[t] || sim.st[t].loc == Loc::Chip || sim.st[t].loc == Loc::Absent
                    {
                        continue;
                    }
                    let size = sim.aligned(t);
                    if sim.alloc.free_bytes() < size + need_out
                        || sim.alloc.find_fit(size).is_none()
                    {
                        continue;
                    }
                    let Some(off) = sim.alloc.alloc(t, size) else {
                        continue;
                    };
                    let bytes = g.tensors[t].bytes;
                    let (s, e) = sim.bus.issue(start, bytes, Direction::Read);
                    sim.st[t].loc = Loc::Chip;
                    sim.st[t].offset = off;
                    sim.st[t].dirty = false;
                    sim.st[t].ready_at = e;
                    let kind = if g.tensors[t].kind == TensorKind::Weight || !sim.st[t].loaded_once
                    {
                        sim.weight_bytes += bytes;
                        EventKind::Alloc
                    } else {
                        sim.reloaded_bytes += bytes;
                        EventKind::Reload
                    };
                    sim.st[t].loaded_once = true;
                    let mut ev = sim.event(start, kind, t, i);
                    ev.dma_start_ns = Some(s);
                    ev.dma_end_ns = Some(e);
                    ev.reason = Some("prefetch".into());
                    sim.push(ev, i);
                    sim.note_resident(start);
                }
            }
        }

        // 6. Frees at the end of the op.
        for &t in &operands {
            protected[t] = false;
        }
        for &t in &streamed {
            if !is_input(t) {
                // Written to DRAM by streaming: lives on there.
                sim.st[t].loc = Loc::Dram;
                sim.st[t].dirty = false;
                sim.st[t].loaded_once = true;
            }
        }
        let mut to_free: Vec<TensorId> = dies_at[i].clone();
        if stream_weights {
            to_free.extend(
                op.inputs
                    .iter()
                    .copied()
                    .filter(|&t| g.tensors[t].kind == TensorKind::Weight),
            );
        }
        to_free.sort_unstable();
        to_free.dedup();
        for t in to_free {
            if sim.st[t].loc == Loc::Chip {
                let e = sim.event(end, EventKind::Free, t, i);
                sim.push(e, i);
                sim.alloc.free(sim.st[t].offset);
            }
            sim.st[t].loc = if g.tensors[t].kind == TensorKind::Weight {
                Loc::Dram
            } else {
                Loc::Absent
            };
        }
        sim.note_resident(end);
        trace_ops.push(TraceOp {
            id: i,
            name: op.name.clone(),
            op_type: op.op_type.clone(),
            start_ns: start,
            end_ns: end,
            stall_ns: stall,
            inputs: op.inputs.clone(),
            outputs: op.outputs.clone(),
            streamed: {
                let mut s = streamed.clone();
                s.sort_unstable();
                s
            },
            flops: Some(op.flops),
            bound: Some(roof.bound),
            unit: None,
        });
        now = end;
    }
    let latency = now;
    // Graph outputs leave the chip at the end.
    let last = n.saturating_sub(1);
    for t in 0..nt {
        if sim.st[t].loc == Loc::Chip {
            let e = sim.event(latency, EventKind::Free, t, last);
            if n > 0 {
                sim.push(e, last);
            }
            sim.alloc.free(sim.st[t].offset);
            sim.st[t].loc = Loc::Absent;
        }
    }
    if n > 0 {
        sim.note_resident(latency);
    }
    // Usually already in time order; the check costs no scratch buffer,
    // the stable sort a copy of half the events.
    if !sim.events.is_sorted_by_key(|e| e.t_ns) {
        sim.events.sort_by_key(|e| e.t_ns);
    }

    let lower_bound = if ideal {
        0
    } else {
        bounds::lower_bound_traffic(g, capacity)
    };
    let traffic = sim.spilled_bytes + sim.reloaded_bytes;
    dram_bytes_total += traffic + sim.weight_bytes;
    let energy_uj = (dram_bytes_total as f64 * hw.energy.dram_pj_per_byte
        + sram_bytes_total as f64 * hw.energy.sram_pj_per_byte)
        / 1e6;
    let bucket = (latency / 1000).max(1);
    let occupancy = sim.bus.occupancy(latency.max(1), bucket);
    let pool_capacity_reported = if ideal {
        capacity.max(sim.alloc.high_water())
    } else {
        sim.alloc.capacity()
    };
    let summary = Summary {
        latency_ns: latency,
        spill_count: sim.spill_count,
        spilled_bytes: sim.spilled_bytes,
        reloaded_bytes: sim.reloaded_bytes,
        traffic_bytes: traffic,
        recompute_saved_bytes: sim.recomputed_bytes,
        stall_ns: total_stall,
        peak_live_bytes: sim.live.peak_bytes,
        peak_resident_bytes: sim.peak_resident,
        lower_bound_traffic_bytes: lower_bound,
        throughput_fps: if latency > 0 {
            1e9 / latency as f64
        } else {
            0.0
        },
        weight_traffic_bytes: sim.weight_bytes,
        streamed_bytes: sim.streamed_bytes,
        energy_uj,
        capacity_bytes: capacity,
    };
    let tensors = g
        .tensors
        .iter()
        .map(|t| TraceTensor {
            id: t.id,
            name: t.name.clone(),
            bytes: t.bytes,
            kind: t.kind,
            pool: POOL.to_string(),
            producer: t.producer,
            consumers: t.consumers.clone(),
        })
        .collect();
    Ok(Trace {
        schema: SCHEMA.to_string(),
        source: Source::Simulator,
        meta: Meta {
            model: g.name.clone(),
            policy: cfg.policy.as_str().to_string(),
            producer: Producer::Simulator {
                hardware: Box::new(hw.clone()),
                config: Box::new(cfg.clone()),
            },
            tool_version: env!("CARGO_PKG_VERSION").to_string(),
        },
        pools: vec![Pool {
            name: POOL.to_string(),
            capacity_bytes: pool_capacity_reported,
            alignment: hw.memory.alignment,
        }],
        tensors,
        ops: trace_ops,
        events: sim.events,
        counters: vec![
            Counter {
                name: "bus_occupancy".into(),
                unit: "fraction".into(),
                pool: None,
                samples: occupancy,
            },
            Counter {
                name: "live_bytes".into(),
                unit: "bytes".into(),
                pool: Some(POOL.into()),
                samples: live_samples,
            },
            Counter {
                name: "resident_bytes".into(),
                unit: "bytes".into(),
                pool: Some(POOL.into()),
                samples: sim.resident_samples,
            },
        ],
        summary,
    })
}
