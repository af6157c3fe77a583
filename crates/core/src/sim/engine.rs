//! The simulation loop. `Sim` holds the state of one run; per op, in
//! schedule order, `Sim::step` runs the phases:
//! 1. `Sim::decide_streaming`: operands that do not fit beside pinned
//!    tensors are read/written in DRAM by tiled streaming;
//! 2. `Sim::make_inputs_resident`: every other input is made resident
//!    (already there, prefetched, recomputed, or brought in on demand),
//!    evicting by policy with a fragmentation-aware victim choice (`room`);
//! 3. `Sim::place_outputs`;
//! 4. `Sim::execute`: wait for transfers (stall), run for the roofline
//!    time, overlapping streaming when DMA is async;
//! 5. `Sim::prefetch` inputs of the next ops into free space;
//! 6. `Sim::retire`: free tensors whose lifetime ends.
//!
//! A tensor comes in from DRAM in one place, `Sim::bring_in`, on demand
//! or prefetched. `Sim::finish` assembles the trace.
//!
//! Owns the simulation. May import `graph` (IR, liveness, bounds) and
//! `cost`; writes `trace` types; never `analysis` or a front end.

use super::config::ActivationDtype;
use super::optimum::{optimal_traffic, OptimumLimits, PoolSize};
use super::plan::{Placement, Residency};
use super::room::Room;
use super::{Allocator, EvictionPolicy, SimConfig, WeightMode};
use crate::cancel::Cancel;
use crate::cols::IdLists;
use crate::cost::bus::Direction;
use crate::cost::{op_time_ns, BusModel, HardwareProfile, Roofline};
use crate::graph::{transform, Graph, Liveness, TensorId, TensorKind};
use crate::limits;
use crate::trace::ledger::{Ledger, RunningLedger};
use crate::trace::{
    BoundMethod, Counter, Event, EventKind, Meta, Pool, Source, Summary, Trace, TraceOp,
    TraceTensor, SCHEMA,
};
use crate::{Error, Result};
use std::borrow::Cow;
use std::sync::Arc;

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

/// Why a tensor comes in from DRAM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BringIn {
    /// The op about to run needs it now.
    OnDemand,
    /// A later op will; moved early into free space.
    Prefetch,
}

/// Running totals of one run that no event carries (the DRAM traffic is
/// the ledger of the events, computed when the trace is assembled).
#[derive(Debug, Default)]
struct Totals {
    recomputed_bytes: u64,
    stall_ns: u64,
    /// Operand bytes touched on chip (SRAM energy).
    sram_bytes: u64,
    /// Bytes of every event so far: a bound on any ledger sum, checked
    /// after each op so no total can saturate unseen.
    event_bytes: u64,
}

/// The state of one simulation run.
pub(crate) struct Sim<'a> {
    g: &'a Graph,
    hw: &'a HardwareProfile,
    cfg: &'a SimConfig,
    pub(crate) ideal: bool,
    /// One allocator per on-chip pool (one unless the profile declares
    /// `[[pools]]`), and each tensor's pool.
    pub(crate) allocs: Vec<Allocator>,
    pool_of: Vec<usize>,
    pool_defs: Vec<super::pools::PoolDef>,
    pub(crate) bus: BusModel,
    st: Vec<TState>,
    pub(crate) pinned: Vec<bool>,
    /// Operands of the op being placed: never chosen as victims.
    pub(crate) protected: Vec<bool>,
    modeled: Vec<bool>,
    live: Liveness,
    /// `live` is the graph's own ([`Liveness::compute`]): no tensor freed
    /// late, none arriving from another core.
    live_is_graphs: bool,
    /// Working demand per step (live bytes plus streamed weights).
    demand: Vec<u64>,
    /// Tensors whose lifetime ends after each step.
    dies_at: IdLists,
    prefetch_distance: usize,
    events: crate::trace::Events,
    ops: crate::trace::Ops,
    totals: Totals,
    peak_resident: u64,
    /// Resident bytes over time, per pool.
    resident_samples: Vec<Vec<(u64, f64)>>,
    live_samples: Vec<(u64, f64)>,
    /// When the next op is dispatched (the previous one ended).
    pub(crate) now: u64,
    /// The `planned` policy's residency plan (none for other policies, or
    /// where the solve found nothing: then it keeps Belady's order).
    plan: Option<Arc<Residency>>,
    /// Where the plan's stays on chip go (packed ahead of time).
    placement: Option<Placement>,
    /// `--split graph`: how this core's part of the graph meets the other
    /// cores' (none on one core or a batch split).
    pub(crate) crossing: Option<Crossing>,
    /// A run that keeps no events, ops or samples, only their ledger
    /// ([`simulate_summary`]); `None` for a run that records its trace.
    running: Option<RunningLedger>,
}

/// The tensors a core's part shares with other cores, through DRAM or
/// the pool the cores share.
#[derive(Debug, Clone, Default)]
pub(crate) struct Crossing {
    /// Read on another core: streamed out when produced here.
    pub publish: Vec<bool>,
    /// Produced on another core: an input in DRAM once published there.
    pub cross_in: Vec<bool>,
    /// When each cross input's copy exists (`None`: not yet).
    pub ready: Vec<Option<u64>>,
    /// When each published tensor reached DRAM (or, in the shared pool,
    /// when its producer ended).
    pub published: Vec<Option<u64>>,
    /// Lives in the shared pool (`[cores] shared`): not this core's to
    /// place, move or free; its ops read and write it in place.
    pub shared: Vec<bool>,
}

impl<'a> Sim<'a> {
    /// [`Sim::build`] for one core's part of a graph split over cores.
    pub(crate) fn with_crossing(
        g: &'a Graph,
        hw: &'a HardwareProfile,
        cfg: &'a SimConfig,
        plan: Option<Arc<Residency>>,
        crossing: Option<Crossing>,
    ) -> Result<Sim<'a>> {
        Self::build(g, hw, cfg, plan, crossing, false)
    }

    /// The one constructor. Phase 0: pins, free points, liveness, demand
    /// and death steps; graph inputs and weights start in DRAM, inputs are
    /// delivered on chip where they fit. `summary_only`: keep no events,
    /// ops or samples, only their ledger ([`simulate_summary`]), from the
    /// first event on.
    fn build(
        g: &'a Graph,
        hw: &'a HardwareProfile,
        cfg: &'a SimConfig,
        plan: Option<Arc<Residency>>,
        crossing: Option<Crossing>,
        summary_only: bool,
    ) -> Result<Sim<'a>> {
        let (n, nt) = (g.ops.len(), g.tensors.len());
        let ideal = cfg.policy == EvictionPolicy::Ideal;
        let capacity = hw.memory.capacity.0;
        if capacity == 0 {
            return Err(Error::Hardware("capacity must be greater than zero".into()));
        }
        let (pinned, free_at) = named_tensors(g, cfg)?;
        let arriving = crossing.as_ref().map_or(&[][..], |c| &c.cross_in[..]);
        let live = Liveness::compute_arriving(g, &free_at, arriving);
        let live_is_graphs = free_at.is_empty() && !arriving.contains(&true);
        let shared = crossing.as_ref().map_or(&[][..], |c| &c.shared[..]);
        let modeled: Vec<bool> = g
            .tensors
            .iter()
            .map(|t| !(t.kind == TensorKind::Weight && cfg.weights == WeightMode::Ignore))
            .zip(shared.iter().chain(std::iter::repeat(&false)))
            .map(|(m, &s)| m && !s)
            .collect();
        let demand = demand_per_step(g, &live, cfg.weights);
        let dies_at = death_steps(g, &live, cfg.weights);
        let pools = super::pools::Pools::assign(g, hw);
        if cfg.policy == EvictionPolicy::Planned && !pools.is_single() {
            return Err(Error::Config(format!(
                "the planned policy plans one pool; this profile declares {} ({}): use lru, belady or lifetime",
                pools.defs.len(),
                pools.defs.iter().map(|p| p.name.as_str()).collect::<Vec<_>>().join(", ")
            )));
        }
        let n_pools = pools.defs.len();
        let allocs = pools
            .defs
            .iter()
            .map(|p| {
                let cap = if ideal { IDEAL_CAPACITY } else { p.capacity };
                Allocator::new(cap, p.alignment, p.fit)
            })
            .collect();
        let prefetch_distance = if hw.dma.async_dma {
            cfg.prefetch_distance.unwrap_or(hw.dma.prefetch_distance)
        } else {
            0
        };
        let start = TState {
            loc: Loc::Absent,
            offset: 0,
            dirty: false,
            last_access: 0,
            ready_at: 0,
            loaded_once: false,
        };
        let mut sim = Sim {
            g,
            hw,
            cfg,
            ideal,
            allocs,
            pool_of: pools.of,
            pool_defs: pools.defs,
            bus: BusModel::new(hw),
            st: vec![start; nt],
            pinned,
            protected: vec![false; nt],
            modeled,
            live,
            live_is_graphs,
            demand,
            dies_at,
            prefetch_distance,
            events: match summary_only {
                true => crate::trace::Events::default(),
                false => crate::trace::Events::with_capacity(2 * nt),
            },
            ops: crate::trace::Ops::new(),
            totals: Totals::default(),
            peak_resident: 0,
            resident_samples: vec![Vec::new(); n_pools],
            live_samples: Vec::with_capacity(if summary_only { 0 } else { n }),
            now: 0,
            plan: None,
            placement: None,
            crossing,
            running: summary_only.then(|| {
                let kinds = g.tensors.iter().map(|t| t.kind).collect();
                RunningLedger::new(kinds, n_pools)
            }),
        };
        for t in &g.tensors {
            if matches!(t.kind, TensorKind::Weight | TensorKind::Input) {
                sim.st[t.id].loc = Loc::Dram;
            }
        }
        if cfg.policy == EvictionPolicy::Planned {
            sim.plan = plan;
            sim.placement = sim.plan.as_deref().map(|p| sim.pack(p));
        } else if n > 0 {
            // Graph inputs arrive up front; the planned policy instead
            // brings each in where it is used (or streams it).
            sim.deliver_inputs();
        }
        Ok(sim)
    }

    /// Graph inputs are delivered on chip before step 0 where they fit
    /// (not those another core produces: they come when published).
    fn deliver_inputs(&mut self) {
        let g = self.g;
        for t in g.tensors.iter().filter(|t| t.kind == TensorKind::Input) {
            if self.is_cross_in(t.id) {
                continue;
            }
            let size = self.aligned(t.id);
            if let Some(off) = self.pool_mut(t.id).alloc(t.id, size) {
                let s = &mut self.st[t.id];
                s.loc = Loc::Chip;
                s.offset = off;
                s.loaded_once = true;
                let mut e = self.event(0, EventKind::Alloc, t.id, 0);
                e.reason = Some("input".into());
                self.push(e, 0);
            }
        }
        self.note_resident(0);
    }

    /// Packs the plan's stays on chip of every activation into the pool.
    fn pack(&self, plan: &Residency) -> Placement {
        let g = self.g;
        let intervals: Vec<Option<(usize, usize)>> = g
            .tensors
            .iter()
            .map(|t| match t.kind {
                TensorKind::Activation | TensorKind::Output if !self.pinned[t.id] => {
                    self.live.intervals.get(t.id).map(|iv| (iv.start, iv.end))
                }
                _ => None,
            })
            .collect();
        let sizes: Vec<u64> = g.tensors.iter().map(|t| self.aligned(t.id)).collect();
        let uses: Vec<&[usize]> = g.tensors.iter().map(|t| t.consumers).collect();
        // The planned policy runs on one pool only (checked in `new`).
        Placement::pack(plan, &intervals, &sizes, &uses, self.allocs[0].capacity())
    }

    /// Room for `t` at step `i` where the placement packed its stay,
    /// pushing out what lingers there (tensors the plan has left, or
    /// placed elsewhere); `None` when it has no packed offset or an operand
    /// or pinned tensor holds the range.
    fn planned_room(&mut self, t: TensorId, i: usize, now: u64) -> Option<Room> {
        let (offset, size) = self.placement.as_ref()?.offset(t, i)?;
        let occupants = self.allocs[0].occupants(offset, size);
        if occupants
            .iter()
            .any(|(_, b)| self.protected[b.tensor] || self.pinned[b.tensor])
        {
            return None;
        }
        let mut writeback_end = now;
        for (_, b) in occupants {
            writeback_end = writeback_end.max(self.evict(b.tensor, now, i, "capacity"));
        }
        self.allocs[0].alloc_at(t, offset, size).then_some(Room {
            offset,
            writeback_end,
            fragmentation_evictions: 0,
        })
    }

    /// Produced on another core (`--split graph`).
    fn is_cross_in(&self, t: TensorId) -> bool {
        self.crossing.as_ref().is_some_and(|c| c.cross_in[t])
    }

    /// Read on another core: streamed out when produced here.
    fn publishes(&self, t: TensorId) -> bool {
        self.crossing.as_ref().is_some_and(|c| c.publish[t])
    }

    /// Puts `t` in the pool the cores share: from now on this core
    /// neither places nor moves it (it has not touched it yet: it is an
    /// output of the op about to run, or a cross input not yet ready).
    pub(crate) fn share(&mut self, t: TensorId) {
        self.modeled[t] = false;
        if let Some(c) = self.crossing.as_mut() {
            c.shared[t] = true;
        }
    }

    /// When op `i`'s inputs that other cores produce exist, in DRAM or
    /// the shared pool (0 if it has none).
    fn cross_ready(&self, i: usize) -> u64 {
        let Some(c) = &self.crossing else {
            return 0;
        };
        self.g
            .ops
            .at(i)
            .inputs
            .iter()
            .filter(|&&t| c.cross_in[t])
            .filter_map(|&t| c.ready[t])
            .max()
            .unwrap_or(0)
    }

    /// When `t`'s DRAM copy exists, for a tensor another core produces
    /// (0 for any other; `None` while not published yet).
    fn dram_ready(&self, t: TensorId) -> Option<u64> {
        match &self.crossing {
            Some(c) if c.cross_in[t] => c.ready[t],
            _ => Some(0),
        }
    }

    pub(crate) fn aligned(&self, t: TensorId) -> u64 {
        self.pool(t).aligned(self.g.tensors.bytes(t))
    }

    /// The allocator of `t`'s pool.
    pub(crate) fn pool(&self, t: TensorId) -> &Allocator {
        &self.allocs[self.pool_of[t]]
    }

    pub(crate) fn pool_mut(&mut self, t: TensorId) -> &mut Allocator {
        &mut self.allocs[self.pool_of[t]]
    }

    /// Whether `a` and `b` live in the same pool.
    fn same_pool(&self, a: TensorId, b: TensorId) -> bool {
        self.pool_of[a] == self.pool_of[b]
    }

    fn next_use(&self, t: TensorId, now: usize) -> u64 {
        let c = &self.g.tensors.consumers(t);
        let i = c.partition_point(|&s| s <= now);
        match c.get(i) {
            Some(&s) => s as u64,
            None => self.g.ops.len() as u64 + 1,
        }
    }

    /// The policy's eviction preference for `t` at step `now` (higher first).
    /// The planned policy evicts what its plan keeps off chip first.
    pub(crate) fn score(&self, t: TensorId, now: usize) -> f64 {
        if let Some(plan) = &self.plan {
            if plan.wanted(t, now) == Some(false) {
                return PLANNED_OFF + self.aligned(t) as f64;
            }
        }
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
        self.totals.event_bytes = self.totals.event_bytes.saturating_add(e.bytes);
        if let Some(r) = &mut self.running {
            r.add(&e.row(), self.pool_of[e.tensor]);
            return;
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
        let pool = &self.pool_defs[self.pool_of[t]].name;
        Event {
            offset: Some(self.st[t].offset),
            op: Some(op),
            ..Event::plain(t_ns, kind, t, self.g.tensors.bytes(t), pool)
        }
    }

    fn note_resident(&mut self, t_ns: u64) {
        let total: u64 = self.allocs.iter().map(Allocator::used).sum();
        self.peak_resident = self.peak_resident.max(total);
        if self.running.is_some() {
            return;
        }
        for (a, samples) in self.allocs.iter().zip(&mut self.resident_samples) {
            let used = a.used() as f64;
            match samples.last_mut() {
                Some(last) if last.0 == t_ns => last.1 = used,
                _ => samples.push((t_ns, used)),
            }
        }
    }

    /// Places `t` on chip at `offset`.
    fn settle(&mut self, t: TensorId, offset: u64, dirty: bool, ready_at: u64) {
        let s = &mut self.st[t];
        s.loc = Loc::Chip;
        s.offset = offset;
        s.dirty = dirty;
        s.ready_at = ready_at;
    }

    /// Evicts `t` at `now_ns`; returns the end of its write-back, if any.
    pub(crate) fn evict(&mut self, t: TensorId, now_ns: u64, step: usize, reason: &str) -> u64 {
        let mut e = self.event(now_ns, EventKind::Evict, t, step);
        e.reason = Some(reason.into());
        e.written_bytes = Some(0);
        let mut done = now_ns;
        if self.st[t].dirty {
            let bytes = self.g.tensors.bytes(t);
            let (s, end) = self.bus.issue(now_ns, bytes, Direction::Write);
            e.dma_start_ns = Some(s);
            e.dma_end_ns = Some(end);
            e.written_bytes = Some(bytes);
            done = end;
        }
        let offset = self.st[t].offset;
        self.pool_mut(t).free(offset);
        self.st[t].loc = Loc::Dram;
        self.st[t].dirty = false;
        self.push(e, step);
        done
    }

    /// Brings `t` in from DRAM to `offset` during step `step`, its read
    /// issued at `issue_ns`; returns when it lands. A weight's load and a
    /// graph input's first load are loads (`alloc`), anything else coming
    /// back is a reload; the ledger sorts them into parts.
    fn bring_in(
        &mut self,
        t: TensorId,
        offset: u64,
        step: usize,
        issue_ns: u64,
        why: BringIn,
    ) -> u64 {
        let tensor = &self.g.tensors.at(t);
        let bytes = tensor.bytes;
        let issue_ns = issue_ns.max(self.dram_ready(t).unwrap_or(0));
        let (s, e) = self.bus.issue(issue_ns, bytes, Direction::Read);
        self.settle(t, offset, false, e);
        let reload = tensor.kind != TensorKind::Weight
            && (self.st[t].loaded_once
                || matches!(tensor.kind, TensorKind::Activation | TensorKind::Output));
        let kind = if reload {
            EventKind::Reload
        } else {
            EventKind::Alloc
        };
        self.st[t].loaded_once = true;
        let mut ev = self.event(self.now, kind, t, step);
        ev.dma_start_ns = Some(s);
        ev.dma_end_ns = Some(e);
        ev.reason = Some(
            match (why, tensor.kind) {
                (BringIn::Prefetch, _) => "prefetch",
                (_, TensorKind::Weight) => "weight-load",
                (_, TensorKind::Input) if !reload => "input-load",
                _ => "on-demand",
            }
            .into(),
        );
        self.push(ev, step);
        let now = self.now;
        self.note_resident(now);
        e
    }

    /// Recomputing evicted `t` instead of reloading it: allowed by the config,
    /// the producer's activation inputs all resident, and quicker than the
    /// reload. Returns the cost (ns on the compute unit), the producer's
    /// inputs to keep resident meanwhile, and the weights to read again.
    fn recompute_plan(&self, t: TensorId) -> Option<RecomputePlan> {
        let tensor = &self.g.tensors.at(t);
        if !matches!(tensor.kind, TensorKind::Activation | TensorKind::Output)
            || !self.cfg.recompute.allows(tensor.name)
        {
            return None;
        }
        let p = &self.g.ops.at(tensor.producer?);
        let mut keep = Vec::new();
        let mut weights = Vec::new();
        let mut weight_load = 0u64;
        let mut operand_bytes = tensor.bytes;
        for &x in p.inputs {
            let xt = &self.g.tensors.at(x);
            operand_bytes += xt.bytes; // within the graph's 2^53
            if !self.modeled[x] {
                continue;
            }
            if self.st[x].loc == Loc::Chip {
                keep.push(x);
            } else if xt.kind == TensorKind::Weight {
                weight_load += xt.bytes;
                weights.push(x);
            } else {
                return None;
            }
        }
        let compute = limits::ns_ceil(op_time_ns(self.hw, p.flops, operand_bytes).time_ns);
        let cost = compute.saturating_add(self.bus.transfer_ns(weight_load, Direction::Read));
        let reload = self.bus.transfer_ns(tensor.bytes, Direction::Read);
        (cost < reload).then_some(RecomputePlan {
            cost_ns: cost.max(1),
            keep,
            weights,
        })
    }

    /// The op's operands the run models (weights unless ignored).
    fn operands(&self, i: usize) -> Vec<TensorId> {
        self.g
            .operands(i)
            .into_iter()
            .filter(|&t| self.modeled[t])
            .collect()
    }

    fn is_input(&self, i: usize, t: TensorId) -> bool {
        self.g.ops.inputs(i).contains(&t)
    }

    /// Runs every op in schedule order, checking `cancel` between ops.
    pub(crate) fn run(mut self, cancel: &Cancel) -> Result<Trace> {
        self.step_all(cancel)?;
        Ok(self.finish())
    }

    /// Steps every op in schedule order, checking `cancel` between ops
    /// (the run without its trace: [`Sim::stalls`] reads what it did).
    pub(crate) fn step_all(&mut self, cancel: &Cancel) -> Result<()> {
        for i in 0..self.g.ops.len() {
            if i.is_multiple_of(CANCEL_EVERY) {
                cancel.check()?;
            }
            self.step(i)?;
        }
        Ok(())
    }

    /// Runs step `i` (op `i` in schedule order); an error when the run's
    /// clock or byte totals leave [`limits`]' range at this op.
    pub(crate) fn step(&mut self, i: usize) -> Result<()> {
        // An op whose inputs another core produces starts once they exist
        // (in DRAM or the shared pool): until then its core is idle, which
        // is not a stall (a stall is waiting for this op's own transfers).
        self.now = self.now.max(self.cross_ready(i));
        let operands = self.operands(i);
        for &t in &operands {
            self.protected[t] = true;
        }
        let mut streamed = self.decide_streaming(i, &operands);
        let mut ready = self.make_inputs_resident(i, &operands, &mut streamed);
        self.place_outputs(i, &operands, &mut streamed, &mut ready);
        let run = self.execute(i, &operands, &streamed, &ready);
        self.prefetch(i, run.start);
        self.retire(i, &operands, &streamed, run.end);
        self.record_op(i, streamed, &run);
        self.now = run.end;
        self.check_limits(i, &run)
    }

    /// The run's clock and totals stay within [`limits`]; each op adds less
    /// than the headroom, so checking after every op catches any overflow
    /// before it could wrap, and names the op that caused it.
    fn check_limits(&self, i: usize, run: &Run) -> Result<()> {
        let t = &self.totals;
        let detail = if limits::past_ns(run.end) || limits::past_ns(self.bus.free_at_ns) {
            format!(
                "the run's clock passes 2^62 ns (146 years) at this op (it starts at {} ns and its compute, transfers or stalls take the rest); sizes, FLOPs or bandwidths are out of range",
                run.start
            )
        } else if [t.event_bytes, t.sram_bytes, t.recomputed_bytes]
            .iter()
            .any(|&b| b >= limits::MAX_TOTAL_BYTES)
        {
            "the run's byte totals pass 2^62 bytes at this op; sizes are out of range".to_string()
        } else {
            return Ok(());
        };
        Err(Error::Node {
            node: self.g.ops.at(i).name.into(),
            detail,
        })
    }

    /// Phase 1: does the working set fit beside pinned tensors? If not, the
    /// largest operands (those not yet resident first) stream from DRAM.
    fn decide_streaming(&mut self, i: usize, operands: &[TensorId]) -> Vec<TensorId> {
        let mut streamed: Vec<TensorId> = Vec::new();
        if let Some(plan) = &self.plan {
            // Operands the plan leaves in DRAM at this op stream; one that
            // is on chip anyway is used where it is.
            for &t in operands {
                let off_chip = self.st[t].loc != Loc::Chip || !self.is_input(i, t);
                if off_chip && plan.at(t, i) == Some(false) {
                    streamed.push(t);
                }
            }
        }
        // Outputs another core reads cross through DRAM.
        for &t in operands {
            if !self.is_input(i, t) && self.publishes(t) && !streamed.contains(&t) {
                streamed.push(t);
            }
        }
        if !self.ideal {
            // What must be on chip together: under the planned policy only
            // the activations it keeps (weights and inputs take free room).
            let kept: Vec<TensorId> = operands
                .iter()
                .copied()
                .filter(|&t| self.may_evict_for(t) && !streamed.contains(&t))
                .collect();
            // Pool by pool: each must hold its own operands.
            for p in 0..self.allocs.len() {
                let kept: Vec<TensorId> = kept
                    .iter()
                    .copied()
                    .filter(|&t| self.pool_of[t] == p)
                    .collect();
                self.stream_excess(i, p, kept, &mut streamed);
            }
        }
        let now = self.now;
        for &t in &streamed {
            self.protected[t] = false;
            if self.st[t].loc == Loc::Chip {
                self.evict(t, now, i, "stream");
            }
        }
        streamed
    }

    /// Operands `kept` of pool `p` that do not fit beside its pinned
    /// tensors: enough of them stream (plan-off first, then those not yet
    /// resident, largest first).
    fn stream_excess(&self, i: usize, p: usize, kept: Vec<TensorId>, streamed: &mut Vec<TensorId>) {
        let ws: u64 = kept.iter().map(|&t| self.aligned(t)).sum();
        let pinned_other: u64 = self.allocs[p]
            .blocks()
            .filter(|(_, b)| self.pinned[b.tensor] && !self.protected[b.tensor])
            .map(|(_, b)| b.size)
            .sum();
        let avail = self.allocs[p].capacity().saturating_sub(pinned_other);
        if ws <= avail {
            return;
        }
        // Operands the plan has off chip here go first (on chip only
        // because nothing needed their room yet), then those not yet
        // resident, largest first.
        let mut order = kept;
        order.sort_by_key(|&t| {
            let planned_on = self.plan.as_ref().and_then(|p| p.at(t, i)) != Some(false);
            let resident = self.st[t].loc == Loc::Chip;
            (planned_on, resident, std::cmp::Reverse(self.aligned(t)), t)
        });
        let mut rest = ws;
        for t in order {
            if rest <= avail {
                break;
            }
            rest -= self.aligned(t);
            streamed.push(t);
        }
    }

    /// Room for `t` from free space only, leaving enough for the op's
    /// other operands still to come on chip (activations the plan keeps).
    fn spare_room(
        &mut self,
        i: usize,
        t: TensorId,
        operands: &[TensorId],
        streamed: &[TensorId],
    ) -> Option<Room> {
        let pending: Vec<TensorId> = operands
            .iter()
            .copied()
            .filter(|&x| {
                x != t
                    && self.same_pool(x, t)
                    && self.may_evict_for(x)
                    && self.st[x].loc != Loc::Chip
                    && !streamed.contains(&x)
            })
            .collect();
        let need: u64 = pending.iter().map(|&x| self.aligned(x)).sum();
        let size = self.aligned(t);
        if self.pool(t).free_bytes() < size.saturating_add(need) {
            return None;
        }
        // Clear of where the placement puts the op's pending operands.
        let reserved: Vec<(u64, u64)> = match &self.placement {
            Some(p) => pending.iter().filter_map(|&x| p.offset(x, i)).collect(),
            None => Vec::new(),
        };
        let offset = self.pool_mut(t).alloc_avoiding(t, size, &reserved)?;
        Some(Room {
            offset,
            writeback_end: self.now,
            fragmentation_evictions: 0,
        })
    }

    /// A graph input with a use after step `i`.
    fn read_again(&self, t: TensorId, i: usize) -> bool {
        let tensor = &self.g.tensors.at(t);
        tensor.kind == TensorKind::Input && tensor.consumers.iter().any(|&c| c > i)
    }

    /// Whether bringing `t` in may push others out. Under the planned
    /// policy weights and graph inputs take only free room (reading them
    /// where they are used is a load either way, never spill), as the plan
    /// that sized everything else assumed.
    fn may_evict_for(&self, t: TensorId) -> bool {
        self.plan.is_none()
            || !matches!(
                self.g.tensors.kind(t),
                TensorKind::Weight | TensorKind::Input
            )
    }

    /// Phase 2: every input that is not streamed becomes resident: it is
    /// there (perhaps still arriving), or is recomputed, or comes in on
    /// demand; one that finds no room streams instead.
    fn make_inputs_resident(
        &mut self,
        i: usize,
        operands: &[TensorId],
        streamed: &mut Vec<TensorId>,
    ) -> Ready {
        let mut ready = Ready {
            wait_until: self.now,
            fragmentation_evictions: 0,
            recompute_ns: 0,
        };
        for &t in operands {
            if !self.is_input(i, t) || streamed.contains(&t) {
                continue;
            }
            let plan = if self.st[t].loc == Loc::Dram {
                self.recompute_plan(t)
            } else {
                None
            };
            let placed = match (self.st[t].loc, plan) {
                (Loc::Chip, _) => {
                    ready.wait_until = ready.wait_until.max(self.st[t].ready_at);
                    true
                }
                (Loc::Dram, Some(plan)) => self.recompute(i, t, plan, &mut ready),
                (Loc::Dram | Loc::Absent, _) => {
                    let room = if self.may_evict_for(t) {
                        let now = self.now;
                        self.planned_room(t, i, now)
                            .or_else(|| self.make_room(self.aligned(t), i, now, t))
                    } else if self.read_again(t, i) {
                        // A graph input read again later streams: kept on
                        // chip it would be evicted and read back as spill.
                        None
                    } else {
                        self.spare_room(i, t, operands, streamed)
                    };
                    match room {
                        Some(room) => {
                            ready.fragmentation_evictions += room.fragmentation_evictions;
                            let landed = self.bring_in(
                                t,
                                room.offset,
                                i,
                                room.writeback_end,
                                BringIn::OnDemand,
                            );
                            ready.wait_until = ready.wait_until.max(landed);
                            true
                        }
                        None => false,
                    }
                }
            };
            if !placed {
                self.protected[t] = false;
                streamed.push(t);
            }
            self.st[t].last_access = i as u64;
        }
        ready
    }

    /// Recomputes evicted `t` from its producer's resident inputs (kept
    /// resident while room is made); false when no room was found. The
    /// weights it reads again stream in (their time is in the cost).
    fn recompute(&mut self, i: usize, t: TensorId, plan: RecomputePlan, ready: &mut Ready) -> bool {
        let newly: Vec<TensorId> = plan
            .keep
            .iter()
            .copied()
            .filter(|&x| !self.protected[x])
            .collect();
        for &x in &newly {
            self.protected[x] = true;
        }
        let placed = self.make_room(self.aligned(t), i, self.now, t);
        for &x in &newly {
            self.protected[x] = false;
        }
        let Some(Room {
            offset,
            writeback_end,
            fragmentation_evictions,
        }) = placed
        else {
            return false;
        };
        let now = self.now;
        ready.fragmentation_evictions += fragmentation_evictions;
        ready.wait_until = ready.wait_until.max(writeback_end);
        ready.recompute_ns = ready.recompute_ns.saturating_add(plan.cost_ns);
        self.totals.recomputed_bytes =
            (self.totals.recomputed_bytes).saturating_add(self.g.tensors.bytes(t));
        for &w in &plan.weights {
            let mut ev = self.event(now, EventKind::StreamIn, w, i);
            let bytes = self.g.tensors.bytes(w);
            ev.offset = None;
            ev.dma_start_ns = Some(now);
            ev.dma_end_ns = Some(now.saturating_add(self.bus.transfer_ns(bytes, Direction::Read)));
            ev.reason = Some("recompute".into());
            self.push(ev, i);
        }
        self.settle(t, offset, false, now);
        let mut ev = self.event(now, EventKind::Recompute, t, i);
        ev.reason = Some(match self.g.tensors.producer(t) {
            Some(p) => format!("recompute:{}", self.g.ops.at(p).name).into(),
            None => "recompute".into(),
        });
        self.push(ev, i);
        self.note_resident(now);
        true
    }

    /// Phase 3: outputs are allocated (dirty: DRAM has no copy); one that
    /// finds no room streams out instead.
    fn place_outputs(
        &mut self,
        i: usize,
        operands: &[TensorId],
        streamed: &mut Vec<TensorId>,
        ready: &mut Ready,
    ) {
        let now = self.now;
        for &t in operands {
            if self.is_input(i, t) || streamed.contains(&t) {
                continue;
            }
            let room = self
                .planned_room(t, i, now)
                .or_else(|| self.make_room(self.aligned(t), i, now, t));
            match room {
                Some(room) => {
                    ready.fragmentation_evictions += room.fragmentation_evictions;
                    ready.wait_until = ready.wait_until.max(room.writeback_end);
                    self.settle(t, room.offset, true, now);
                    self.st[t].loaded_once = true;
                    self.st[t].last_access = i as u64;
                    let e = self.event(now, EventKind::Alloc, t, i);
                    self.push(e, i);
                    self.note_resident(now);
                }
                None => {
                    self.protected[t] = false;
                    streamed.push(t);
                }
            }
        }
    }

    /// Phase 4: the op's interval. Sync DMA: the op starts once every
    /// transfer it needs is done, then streams (compute + stream). Async
    /// DMA: transfers are pipelined with compute tile by tile (double
    /// buffering), so the op ends at the later of its compute and its last
    /// transfer. An op's interval starts when it is dispatched (the previous
    /// op ended) and includes its stall, so op intervals tile the timeline.
    fn execute(
        &mut self,
        i: usize,
        operands: &[TensorId],
        streamed: &[TensorId],
        ready: &Ready,
    ) -> Run {
        let (g, hw) = (self.g, self.hw);
        let op = &g.ops.at(i);
        let frag_ns = limits::ns_round(
            ready.fragmentation_evictions as f64 * hw.dma.fragmentation_penalty_ns,
        );
        let sync_penalty = limits::ns_round(hw.dma.sync_penalty_ns);
        // Operands in the shared pool are read and written in place, at
        // the on-chip rate like the others.
        let shared_bytes: u64 = self.crossing.as_ref().map_or(0, |c| {
            g.operands(i)
                .into_iter()
                .filter(|&t| c.shared[t])
                .map(|t| g.tensors.bytes(t))
                .sum()
        });
        let operand_bytes: u64 = operands
            .iter()
            .map(|&t| g.tensors.bytes(t))
            .sum::<u64>()
            .saturating_add(shared_bytes);
        let roof = op_time_ns(hw, op.flops, operand_bytes);
        let measured = self
            .cfg
            .measured_ns
            .as_ref()
            .and_then(|m| m.get(op.name).copied());
        let compute = measured
            .unwrap_or(limits::ns_ceil(roof.time_ns))
            .max(1)
            .saturating_add(ready.recompute_ns);
        let parts: Vec<(u64, Direction)> = streamed
            .iter()
            .map(|&t| {
                let dir = if self.is_input(i, t) {
                    Direction::Read
                } else {
                    Direction::Write
                };
                (g.tensors.bytes(t), dir)
            })
            .collect();
        let rd = parts
            .iter()
            .filter(|p| p.1 == Direction::Read)
            .map(|p| p.0)
            .sum();
        let wr = parts
            .iter()
            .filter(|p| p.1 == Direction::Write)
            .map(|p| p.0)
            .sum();
        let start = self.now;
        // Streamed inputs another core produces stream once published.
        let published = streamed
            .iter()
            .filter(|&&t| self.is_input(i, t))
            .map(|&t| self.dram_ready(t).unwrap_or(0))
            .max()
            .unwrap_or(0);
        let window;
        let end = if hw.dma.async_dma {
            let (stream_start, stream_end) = self.bus.stream(start.max(published), rd, wr);
            window = (stream_start, stream_end);
            let data_end = ready.wait_until.max(stream_end);
            let compute_end = start.saturating_add(frag_ns).saturating_add(compute);
            if data_end > compute_end {
                data_end.saturating_add(sync_penalty)
            } else {
                compute_end
            }
        } else {
            let mut data = ready.wait_until;
            if data > start {
                data = data.saturating_add(sync_penalty);
            }
            data = data.saturating_add(frag_ns);
            let (stream_start, stream_end) = self.bus.stream(data.max(published), rd, wr);
            window = (stream_start, stream_end);
            stream_end.max(data).saturating_add(compute)
        };
        self.record_streams(i, streamed, &parts, window);
        let stall = end.saturating_sub(start).saturating_sub(compute);
        self.totals.stall_ns = self.totals.stall_ns.saturating_add(stall);
        if self.running.is_none() {
            self.live_samples
                .push((start, self.live.live_bytes[i] as f64));
        }
        self.totals.sram_bytes = self.totals.sram_bytes.saturating_add(operand_bytes);
        Run {
            start,
            end,
            stall,
            roof,
        }
    }

    /// One stream event per streamed operand, each with its stretch of the
    /// op's streaming window on the bus.
    fn record_streams(
        &mut self,
        i: usize,
        streamed: &[TensorId],
        parts: &[(u64, Direction)],
        (s, e): (u64, u64),
    ) {
        let windows = self.bus.split_stream(s, e, parts);
        for ((&t, &(_, dir)), (a, b)) in streamed.iter().zip(parts).zip(windows) {
            let kind = match dir {
                Direction::Read => EventKind::StreamIn,
                Direction::Write => EventKind::StreamOut,
            };
            let mut ev = self.event(self.now, kind, t, i);
            ev.offset = None;
            ev.dma_start_ns = Some(a);
            ev.dma_end_ns = Some(b);
            ev.reason = Some("stream".into());
            self.push(ev, i);
            if dir == Direction::Write && self.publishes(t) {
                if let Some(c) = self.crossing.as_mut() {
                    c.published[t] = Some(b);
                }
            }
        }
    }

    /// Phase 5: inputs of the next ops that are in DRAM come in early, into
    /// free space only (a prefetch never evicts), leaving room for those
    /// ops' outputs.
    fn prefetch(&mut self, i: usize, start: u64) {
        if self.placement.is_some() {
            // A planned run keeps to its packed offsets.
            return;
        }
        let n = self.g.ops.len();
        for j in (i + 1)..=(i + self.prefetch_distance).min(n.saturating_sub(1)) {
            let next = &self.g.ops.at(j);
            for &t in next.inputs {
                if !self.modeled[t] || self.st[t].loc != Loc::Dram || self.dram_ready(t).is_none() {
                    continue;
                }
                // Room for the next op's outputs in the same pool stays free.
                let need_out: u64 = next
                    .outputs
                    .iter()
                    .filter(|&&o| self.same_pool(o, t))
                    .map(|&o| self.aligned(o))
                    .sum();
                let size = self.aligned(t);
                let pool = self.pool(t);
                if pool.free_bytes() < size + need_out || pool.find_fit(size).is_none() {
                    continue;
                }
                let Some(off) = self.pool_mut(t).alloc(t, size) else {
                    continue;
                };
                self.bring_in(t, off, i, start, BringIn::Prefetch);
            }
        }
    }

    /// Phase 6: operands stop being protected; streamed outputs live on in
    /// DRAM; tensors whose lifetime ends (and streamed weights) are freed.
    fn retire(&mut self, i: usize, operands: &[TensorId], streamed: &[TensorId], end: u64) {
        let g = self.g;
        for &t in operands {
            self.protected[t] = false;
        }
        for &t in streamed {
            if !self.is_input(i, t) {
                let s = &mut self.st[t];
                s.loc = Loc::Dram;
                s.dirty = false;
                s.loaded_once = true;
            }
        }
        let mut to_free: Vec<TensorId> = self.dies_at.get(i).to_vec();
        if self.cfg.weights == WeightMode::Stream {
            to_free.extend(
                g.ops
                    .at(i)
                    .inputs
                    .iter()
                    .copied()
                    .filter(|&t| g.tensors.kind(t) == TensorKind::Weight),
            );
        }
        to_free.sort_unstable();
        to_free.dedup();
        for t in to_free {
            if self.st[t].loc == Loc::Chip {
                let e = self.event(end, EventKind::Free, t, i);
                self.push(e, i);
                let offset = self.st[t].offset;
                self.pool_mut(t).free(offset);
            }
            self.st[t].loc = if g.tensors.kind(t) == TensorKind::Weight {
                Loc::Dram
            } else {
                Loc::Absent
            };
        }
        self.note_resident(end);
    }

    /// The op as the trace records it; weights the run does not model
    /// (`weights = "ignore"`) are left out of its inputs, as they took no
    /// room and moved no bytes.
    fn record_op(&mut self, i: usize, mut streamed: Vec<TensorId>, run: &Run) {
        if self.running.is_some() {
            return;
        }
        let op = &self.g.ops.at(i);
        streamed.sort_unstable();
        self.ops.push(TraceOp {
            id: i,
            name: op.name.into(),
            op_type: op.op_type.into(),
            start_ns: run.start,
            end_ns: run.end,
            stall_ns: run.stall,
            inputs: op
                .inputs
                .iter()
                .copied()
                .filter(|&t| self.modeled[t])
                .collect(),
            outputs: op.outputs.to_vec(),
            streamed,
            flops: Some(op.flops),
            bound: Some(run.roof.bound),
            unit: op.unit.map(|u| crate::trace::Unit(u.into())),
            parent: None,
            self_ns: None,
            contention_ns: None,
        });
    }

    /// Graph outputs leave the chip at the end; events in time order.
    fn drain(&mut self) {
        let n = self.g.ops.len();
        let latency = self.now;
        let last = n.saturating_sub(1);
        for t in 0..self.g.tensors.len() {
            if self.st[t].loc == Loc::Chip {
                let e = self.event(latency, EventKind::Free, t, last);
                if n > 0 {
                    self.push(e, last);
                }
                let offset = self.st[t].offset;
                self.pool_mut(t).free(offset);
                self.st[t].loc = Loc::Absent;
            }
        }
        if n > 0 {
            self.note_resident(latency);
        }
        // Usually already in time order (then nothing moves).
        self.events.sort_by_time();
    }

    /// The run's summary (the figures every table prints).
    fn summary(&self) -> Summary {
        let (g, hw) = (self.g, self.hw);
        let latency = self.now;
        let capacity = hw.memory.capacity.0;
        let (lower_bound, method) = if self.ideal {
            (0, BoundMethod::None)
        } else {
            let caps: Vec<u64> = self.allocs.iter().map(Allocator::capacity).collect();
            // The run's own liveness is the graph's where nothing frees
            // late and nothing arrives from another core.
            let bound = match self.live_is_graphs {
                true => crate::graph::bounds::lower_bound_traffic_pools_live(
                    g,
                    &self.live,
                    &self.pool_of,
                    &caps,
                ),
                false => crate::graph::bounds::lower_bound_traffic_pools(g, &self.pool_of, &caps),
            };
            (bound, BoundMethod::PerOp)
        };
        Summary {
            latency_ns: latency,
            recompute_saved_bytes: self.totals.recomputed_bytes,
            stall_ns: self.totals.stall_ns,
            peak_live_bytes: self.live.peak_bytes,
            peak_resident_bytes: self.peak_resident,
            lower_bound_traffic_bytes: lower_bound,
            lower_bound_method: method,
            throughput_fps: if latency > 0 {
                1e9 / latency as f64
            } else {
                0.0
            },
            capacity_bytes: capacity,
            ..Summary::default()
        }
    }

    /// Each op's stall so far, in step order.
    pub(crate) fn stalls(&self) -> Vec<u64> {
        self.ops.iter().map(|o| o.stall_ns).collect()
    }

    /// The trace of the run: summary, tensors, ops, events and counters.
    pub(crate) fn finish(mut self) -> Trace {
        self.drain();
        let summary = self.summary();
        let sram_bytes = self.totals.sram_bytes;
        let (g, hw, cfg) = (self.g, self.hw, self.cfg);
        let latency = self.now;
        let bucket = (latency / 1000).max(1);
        let occupancy = self.bus.occupancy(latency.max(1), bucket);
        // The ideal run's pools are as large as it used (at least the
        // profile's).
        let pools: Vec<Pool> = self
            .allocs
            .iter()
            .zip(&self.pool_defs)
            .map(|(a, d)| Pool {
                name: d.name.clone(),
                capacity_bytes: if self.ideal {
                    d.capacity.max(a.high_water())
                } else {
                    a.capacity()
                },
                alignment: d.alignment,
            })
            .collect();
        let running = self.running.take();
        let rows = running.is_none();
        let tensors = g
            .tensors
            .iter()
            .take_while(|_| rows)
            .map(|t| TraceTensor {
                id: t.id,
                name: t.name.into(),
                bytes: t.bytes,
                kind: t.kind,
                pool: self.pool_defs[self.pool_of[t.id]].name.clone().into(),
                producer: t.producer,
                consumers: t.consumers.to_vec(),
            })
            .collect();
        let counter = |name: &str, unit: &str, pool: Option<&str>, samples| Counter {
            name: name.into(),
            unit: unit.into(),
            pool: pool.map(Into::into),
            samples,
        };
        // Live bytes are the graph's (every pool); resident bytes per pool.
        let main = self.pool_defs[0].name.clone();
        let live_pool = self.allocs.len().eq(&1).then_some(main.as_str());
        let mut counters = vec![
            counter("bus_occupancy", "fraction", None, occupancy),
            counter("live_bytes", "bytes", live_pool, self.live_samples),
        ];
        for (def, samples) in self.pool_defs.iter().zip(self.resident_samples) {
            counters.push(counter("resident_bytes", "bytes", Some(&def.name), samples));
        }
        let mut tr = Trace {
            schema: SCHEMA.to_string(),
            source: Source::Simulator,
            meta: Meta {
                model: g.name.clone(),
                policy: cfg.policy.as_str().to_string(),
                producer: super::settings::producer(hw, cfg),
                tool_version: env!("CARGO_PKG_VERSION").to_string(),
            },
            pools,
            tensors,
            ops: self.ops,
            events: self.events,
            counters,
            summary,
            recomputed: Vec::new(),
        };
        let ledger = match running {
            Some(r) => {
                // Nothing was recorded: no counters either.
                tr.counters.clear();
                let names: Vec<String> = tr.pools.iter().map(|p| p.name.clone()).collect();
                r.finish(&names)
            }
            None => Ledger::of(&tr),
        };
        settle_ledger(&mut tr, &ledger, hw, sram_bytes);
        tr
    }
}

/// The ledger fields of the summary are the events' sums; energy counts
/// every DRAM byte (spill, weights, input loads) and the on-chip bytes.
fn settle_ledger(tr: &mut Trace, ledger: &Ledger, hw: &HardwareProfile, sram_bytes: u64) {
    ledger.fields().write_to(&mut tr.summary);
    tr.summary.energy_uj = (ledger.total.dram_bytes() as f64 * hw.energy.dram_pj_per_byte
        + sram_bytes as f64 * hw.energy.sram_pj_per_byte)
        / 1e6;
}

/// How to recompute an evicted tensor instead of reloading it.
struct RecomputePlan {
    cost_ns: u64,
    /// The producer's inputs that must stay resident meanwhile.
    keep: Vec<TensorId>,
    /// Weights the producer reads again from DRAM.
    weights: Vec<TensorId>,
}

/// What phases 2 and 3 left the op to wait for.
struct Ready {
    wait_until: u64,
    fragmentation_evictions: usize,
    recompute_ns: u64,
}

/// The op's interval.
struct Run {
    start: u64,
    end: u64,
    stall: u64,
    roof: Roofline,
}

/// `(tensor, step)`: the tensor stays live through that step at least.
type FreePoints = Vec<(TensorId, usize)>;

/// The config's pins (per tensor) and free points, names resolved; an
/// unknown name (of a pin, a free point or a tensor to recompute) is an
/// error naming it.
fn named_tensors(g: &Graph, cfg: &SimConfig) -> Result<(Vec<bool>, FreePoints)> {
    let mut pinned = vec![false; g.tensors.len()];
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
    if let super::config::RecomputeSpec::Tensors(names) = &cfg.recompute {
        if let Some(n) = names.iter().find(|n| g.tensor_by_name(n).is_none()) {
            return Err(Error::Config(format!(
                "recompute: no tensor named {n:?} in the graph"
            )));
        }
    }
    Ok((pinned, free_at))
}

/// Above every other policy score: a tensor the plan keeps off chip.
const PLANNED_OFF: f64 = 1e30;

/// The plan of the integer program in `pool` (its optimum, or the best
/// solution found within the budget); none only if the solver fails.
pub fn plan_for(g: &Graph, pool: PoolSize) -> Option<Arc<Residency>> {
    // The same solve, with the same budget, as `sim` makes for its bound,
    // so a planned run re-simulated elsewhere (the explorer, what-if)
    // follows the same plan.
    let limits = OptimumLimits {
        time_limit_s: super::optimum::DEFAULT_TIME_LIMIT_S,
        ..Default::default()
    };
    optimal_traffic(g, pool, limits).plan
}

/// Working demand per step: live bytes, plus the weights an op loads when
/// weights stream.
fn demand_per_step(g: &Graph, live: &Liveness, weights: WeightMode) -> Vec<u64> {
    (0..g.ops.len())
        .map(|i| {
            let w: u64 = if weights == WeightMode::Stream {
                g.ops
                    .at(i)
                    .inputs
                    .iter()
                    .filter(|&&t| g.tensors.kind(t) == TensorKind::Weight)
                    .map(|&t| g.tensors.bytes(t))
                    .sum()
            } else {
                0
            };
            live.live_bytes[i] + w
        })
        .collect()
}

/// Which tensors die after each step (from liveness; weights by mode), in
/// tensor order: one list per step in one array (a vector per step cost
/// 56 bytes an op at 10^6 ops).
fn death_steps(g: &Graph, live: &Liveness, weights: WeightMode) -> IdLists {
    let step_of = |t: crate::graph::TensorRef<'_>| -> Option<usize> {
        match t.kind {
            TensorKind::Weight if weights == WeightMode::Resident => t.consumers.last().copied(),
            TensorKind::Weight | TensorKind::Output => None,
            _ => live.intervals.get(t.id).map(|iv| iv.end),
        }
    };
    IdLists::counted(g.ops.len(), |f| {
        for t in &g.tensors {
            if let Some(s) = step_of(t) {
                f(s, t.id);
            }
        }
    })
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
/// applied first, so the trace shows the graph that ran). The planned
/// policy follows `cfg.plan`, else solves its plan here (within the
/// default budget); [`simulate_with`] takes the plan and a cancel token.
pub fn simulate(g: &Graph, hw: &HardwareProfile, cfg: &SimConfig) -> Result<Trace> {
    let plan = match cfg.policy {
        EvictionPolicy::Planned if cfg.plan.is_some() => cfg.plan.clone(),
        EvictionPolicy::Planned => {
            let p = prepare_graph(g, cfg)?;
            // A graph split over cores plans each core's part itself.
            super::cores::core_graph(&p, hw, cfg)?.and_then(|c| plan_for(&c, PoolSize::of(hw)))
        }
        _ => None,
    };
    simulate_with(g, hw, cfg, plan, &Cancel::never())
}

/// [`simulate`] with the planned policy's plan given (`None`: the plan
/// found nothing, keep Belady's order; ignored by other policies) and
/// stopped between ops once `cancel` fires.
pub fn simulate_with(
    g: &Graph,
    hw: &HardwareProfile,
    cfg: &SimConfig,
    plan: Option<Arc<Residency>>,
    cancel: &Cancel,
) -> Result<Trace> {
    run_one(g, hw, cfg, plan, cancel, false)
}

/// [`simulate_with`] for a run whose summary is all that is wanted (`sim`
/// without `-o`, sweeps): no events, ops, tensors or counters are kept,
/// only the figures every table prints, the ledger's among them, which
/// are the ones the whole trace's replay gives (tested). On a 10^6-op
/// graph that is most of a run's memory (docs/memory.md). Several cores
/// or several pools record the whole trace (their figures read it).
pub fn simulate_summary(
    g: &Graph,
    hw: &HardwareProfile,
    cfg: &SimConfig,
    plan: Option<Arc<Residency>>,
    cancel: &Cancel,
) -> Result<Trace> {
    run_one(g, hw, cfg, plan, cancel, hw.is_single_pool())
}

/// The one way a run starts: the graph prepared, then several cores or
/// one; `summary_only` on one core keeps no rows ([`simulate_summary`]).
fn run_one(
    g: &Graph,
    hw: &HardwareProfile,
    cfg: &SimConfig,
    plan: Option<Arc<Residency>>,
    cancel: &Cancel,
    summary_only: bool,
) -> Result<Trace> {
    cancel.check()?;
    let g = prepare_graph(g, cfg)?;
    if hw.cores.count > 1 {
        return super::cores::simulate_cores(&g, hw, cfg, plan, cancel);
    }
    Sim::build(&g, hw, cfg, plan, None, summary_only)?.run(cancel)
}

/// Ops simulated between checks of the cancel token (a check is one
/// atomic load; an op takes microseconds).
pub(crate) const CANCEL_EVERY: usize = 64;
