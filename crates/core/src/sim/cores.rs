//! Several NPU cores on one DRAM bus (`[cores]`, `--cores`): each core
//! runs the graph on its share of the batch with its own copy of the
//! on-chip pools and its own DMA queue, and every transfer takes its bursts
//! from the one bus the cores share ([`SharedBus`]), so two cores spilling
//! at once slow each other by as much as they overlap (seed 5.3).
//!
//! The cores are simulated in lockstep: the core whose clock is earliest
//! runs its next op, so transfers reach the bus close to the order they
//! happen in. Each op's stall splits into its own waiting and contention:
//! the stall beyond what the same op waits with its core alone on the bus
//! (a run of the same core graph on a bus of its own). Memory decisions
//! (victims, prefetches, streaming) depend on the schedule, not on time, so
//! both runs move the same bytes and only their timing differs.

use super::config::Split;
use super::engine::{Crossing, Sim, CANCEL_EVERY};
use super::optimum::PoolSize;
use super::plan::Residency;
use super::shared::SharedPool;
use super::{placement, EvictionPolicy, SimConfig};
use crate::cancel::Cancel;
use crate::cost::bus::{occupancy, SharedBus};
use crate::cost::HardwareProfile;
use crate::graph::{transform, Graph};
use crate::trace::ledger::Ledger;
use crate::trace::{Counter, Event, Events, Pool, Trace, TraceOp, TraceTensor, Unit};
use crate::Result;
use compact_str::{format_compact, CompactString};
use std::borrow::Cow;
use std::sync::Arc;

/// The graph every core runs: the whole graph on one core, else its
/// share of the batch ([`transform::split_batch`]). Plans and bounds are
/// solved on this graph (per core). `None` for `--split graph`, where each
/// core runs its own part: the bound is then the cores' per-op bounds and
/// the planned policy solves each part's plan.
pub fn core_graph<'g>(
    g: &'g Graph,
    hw: &HardwareProfile,
    cfg: &SimConfig,
) -> Result<Option<Cow<'g, Graph>>> {
    match (hw.cores.count, cfg.split) {
        (0 | 1, _) => Ok(Some(Cow::Borrowed(g))),
        (_, Split::Graph) => Ok(None),
        (k, Split::Batch) => Ok(Some(Cow::Owned(transform::split_batch(g, u64::from(k))?))),
    }
}

/// The name core `c` gives one of its tensors, ops, pools or units: the
/// name under a `core{c}/` prefix (`core0//layer1/Conv` for a name that is
/// a path already), so [`graph_name`] gives the graph's name back.
pub fn on_core(c: usize, name: &str) -> CompactString {
    format_compact!("core{c}/{name}")
}

/// The graph's name of a tensor or op a multi-core trace names
/// `core{c}/NAME` (what a schedule config's pins and recompute lists name:
/// they apply on every core); any other name as it is.
pub fn graph_name(name: &str) -> &str {
    name.strip_prefix("core")
        .and_then(|rest| rest.split_once('/'))
        .filter(|(c, _)| !c.is_empty() && c.bytes().all(|b| b.is_ascii_digit()))
        .map_or(name, |(_, n)| n)
}

/// One core's share of the run: the graph it runs, the planned policy's
/// plan for it, and what it shares with other cores through DRAM.
struct CoreRun<'g> {
    graph: Cow<'g, Graph>,
    plan: Option<Arc<Residency>>,
    crossing: Option<Crossing>,
    /// Global tensor id -> this core's (`--split graph`).
    local: Vec<Option<usize>>,
    /// This core's tensor -> global id.
    global: Vec<usize>,
}

/// Simulates `g` (already prepared: rewrites applied, not yet split) on
/// every core of `hw`; `plan` is the planned policy's plan of one core's
/// graph under a batch split (a graph split solves each part's).
pub(crate) fn simulate_cores(
    g: &Graph,
    hw: &HardwareProfile,
    cfg: &SimConfig,
    plan: Option<Arc<Residency>>,
    cancel: &Cancel,
) -> Result<Trace> {
    let k = hw.cores.count as usize;
    // Under a batch split every core runs the one core graph.
    let core = core_graph(g, hw, cfg)?;
    let runs: Vec<CoreRun> = match &core {
        Some(core) => {
            let ids: Vec<usize> = (0..core.tensors.len()).collect();
            (0..k)
                .map(|_| CoreRun {
                    graph: Cow::Borrowed(core.as_ref()),
                    plan: plan.clone(),
                    crossing: None,
                    local: Vec::new(),
                    global: ids.clone(),
                })
                .collect()
        }
        None => graph_parts(g, hw, cfg, k, cancel)?,
    };
    let Lockstep {
        mut sims,
        crossings,
        shared,
    } = lockstep(&runs, hw, cfg, cancel)?;
    let alone = runs
        .iter()
        .zip(&crossings)
        .map(|(r, x)| stalls_alone(&r.graph, hw, cfg, r.plan.clone(), x.clone(), cancel))
        .collect::<Result<Vec<_>>>()?;
    let bus = sims
        .first_mut()
        .and_then(|s| s.bus.shared.take())
        .unwrap_or_default();
    let traces: Vec<Trace> = sims.into_iter().map(Sim::finish).collect();
    merge(traces, &bus, &alone, &runs, shared.as_ref())
}

/// `--split graph`: each core's part under the list schedule's placement,
/// with its own plan under the planned policy.
fn graph_parts<'g>(
    g: &Graph,
    hw: &HardwareProfile,
    cfg: &SimConfig,
    k: usize,
    cancel: &Cancel,
) -> Result<Vec<CoreRun<'g>>> {
    let at = placement::place(g, hw, k, &cfg.placement)?;
    let mut out = Vec::with_capacity(k);
    for part in placement::parts(g, &at, k) {
        cancel.check()?;
        let plan = match cfg.policy {
            EvictionPolicy::Planned if hw.is_single_pool() => {
                super::plan_for(&part.graph, PoolSize::of(hw))
            }
            _ => None,
        };
        let mut local = vec![None; g.tensors.len()];
        for (l, &t) in part.tensor_of.iter().enumerate() {
            local[t] = Some(l);
        }
        let n = part.tensor_of.len();
        out.push(CoreRun {
            crossing: Some(Crossing {
                publish: part.publish,
                cross_in: part.cross_in,
                ready: vec![None; n],
                published: vec![None; n],
                shared: vec![false; n],
            }),
            graph: Cow::Owned(part.graph),
            plan,
            local,
            global: part.tensor_of,
        });
    }
    Ok(out)
}

/// Runs every core's ops in lockstep on one shared bus: the core whose
/// clock is earliest among those whose next op has its inputs from other
/// cores in DRAM (or the shared pool) runs that op. Returns the cores'
/// runs (the shared bus left on the first), each core's crossing as it
/// ended, and the shared pool's stays (a graph split on a profile that
/// declares one).
fn lockstep<'a>(
    runs: &'a [CoreRun],
    hw: &'a HardwareProfile,
    cfg: &'a SimConfig,
    cancel: &Cancel,
) -> Result<Lockstep<'a>> {
    let k = runs.len();
    let mut sims = runs
        .iter()
        .map(|r| Sim::with_crossing(&r.graph, hw, cfg, r.plan.clone(), r.crossing.clone()))
        .collect::<Result<Vec<_>>>()?;
    let mut shared = shared_pool(runs, hw);
    let mut bus = SharedBus::default();
    let mut next = vec![0usize; k];
    let mut steps = 0usize;
    loop {
        let ready = |c: usize, sims: &[Sim]| {
            let g = &runs[c].graph;
            next[c] < g.ops.len()
                && sims[c].crossing.as_ref().is_none_or(|x| {
                    g.ops
                        .at(next[c])
                        .inputs
                        .iter()
                        .all(|&t| !x.cross_in[t] || x.ready[t].is_some())
                })
        };
        // The earliest clock goes next (ties: the lower core).
        let Some(c) = (0..k)
            .filter(|&c| ready(c, &sims))
            .min_by_key(|&c| (sims[c].now, c))
        else {
            break;
        };
        if steps.is_multiple_of(CANCEL_EVERY) {
            cancel.check()?;
        }
        if let Some(pool) = shared.as_mut() {
            share_outputs(runs, &mut sims, pool, c, next[c]);
        }
        sims[c].bus.shared = Some(std::mem::take(&mut bus));
        let stepped = sims[c].step(next[c]);
        bus = sims[c].bus.shared.take().unwrap_or_default();
        stepped?;
        if let Some(pool) = shared.as_mut() {
            read_shared(runs, &mut sims, pool, c, next[c]);
        }
        publish(runs, &mut sims, c, next[c]);
        next[c] += 1;
        steps += 1;
    }
    if let Some(c) = (0..k).find(|&c| next[c] < runs[c].graph.ops.len()) {
        // Cannot happen: each core's ops are in the graph's order.
        return Err(crate::Error::Node {
            node: runs[c].graph.ops.at(next[c]).name.into(),
            detail: "waits for a tensor no core produces before it".into(),
        });
    }
    let crossings = sims.iter().map(|s| s.crossing.clone()).collect();
    if let Some(first) = sims.first_mut() {
        first.bus.shared = Some(bus);
    }
    Ok(Lockstep {
        sims,
        crossings,
        shared,
    })
}

/// What [`lockstep`] leaves: the cores' runs, each core's crossing as it
/// ended, and the shared pool's stays.
struct Lockstep<'a> {
    sims: Vec<Sim<'a>>,
    crossings: Vec<Option<Crossing>>,
    shared: Option<SharedPool>,
}

/// The shared pool of a graph split on a profile that declares one, with
/// every part's reads counted (global ids).
fn shared_pool(runs: &[CoreRun], hw: &HardwareProfile) -> Option<SharedPool> {
    if runs.iter().any(|r| r.crossing.is_none()) {
        return None;
    }
    let tensors = runs.first().map_or(0, |r| r.local.len());
    let reads = runs.iter().flat_map(|r| {
        r.graph
            .ops
            .iter()
            .flat_map(|o| o.inputs.iter().map(|&l| r.global[l]))
    });
    SharedPool::new(hw, tensors, reads)
}

/// Before core `c` runs its op `i`: each output another core reads goes
/// into the shared pool where it fits, held from the earliest clock among
/// the cores that read it (none of their later ops starts before it).
fn share_outputs(runs: &[CoreRun], sims: &mut [Sim], pool: &mut SharedPool, c: usize, i: usize) {
    let run = &runs[c];
    for &t in run.graph.ops.outputs(i) {
        let publishes = sims[c].crossing.as_ref().is_some_and(|x| x.publish[t]);
        if !publishes {
            continue;
        }
        let global = run.global[t];
        let from = (0..runs.len())
            .filter(|&d| d == c || runs[d].local.get(global).copied().flatten().is_some())
            .map(|d| sims[d].now)
            .min()
            .unwrap_or(sims[c].now);
        if pool.place(&run.graph, global, c, t, from) {
            sims[c].share(t);
        }
    }
}

/// After core `c` ran its op `i`: its outputs in the shared pool are there
/// for their readers from its end (marked shared on every core that reads
/// them), and its reads of the pool count down each stay's readers.
fn read_shared(runs: &[CoreRun], sims: &mut [Sim], pool: &mut SharedPool, c: usize, i: usize) {
    let run = &runs[c];
    let end = sims[c].now;
    for &t in run.graph.ops.outputs(i) {
        let global = run.global[t];
        if pool.of.get(global).copied().flatten().is_none() {
            continue;
        }
        if let Some(x) = sims[c].crossing.as_mut() {
            x.published[t] = Some(end);
        }
        for (d, sim) in sims.iter_mut().enumerate().filter(|(d, _)| *d != c) {
            if let Some(l) = runs[d].local.get(global).copied().flatten() {
                sim.share(l);
            }
        }
    }
    for &t in run.graph.ops.inputs(i) {
        pool.read(run.global[t], c, end);
    }
}

/// After core `c` ran its op `i`: each tensor it published is in DRAM for
/// the cores that read it.
fn publish(runs: &[CoreRun], sims: &mut [Sim], c: usize, i: usize) {
    let Some(x) = sims[c].crossing.as_ref() else {
        return;
    };
    let done: Vec<(usize, u64)> = runs[c]
        .graph
        .ops
        .at(i)
        .outputs
        .iter()
        .filter_map(|&t| Some((runs[c].global[t], x.published[t]?)))
        .collect();
    for (d, sim) in sims.iter_mut().enumerate().filter(|(d, _)| *d != c) {
        let Some(y) = sim.crossing.as_mut() else {
            continue;
        };
        for &(t, at) in &done {
            if let Some(l) = runs[d].local.get(t).copied().flatten() {
                if y.cross_in[l] {
                    y.ready[l] = Some(at);
                }
            }
        }
    }
}

/// Each op's stall on a core with the bus to itself (its inputs from other
/// cores arriving when they did in the shared run): the ops are stepped,
/// no trace is built.
fn stalls_alone(
    core: &Graph,
    hw: &HardwareProfile,
    cfg: &SimConfig,
    plan: Option<Arc<Residency>>,
    crossing: Option<Crossing>,
    cancel: &Cancel,
) -> Result<Vec<u64>> {
    let mut sim = Sim::with_crossing(core, hw, cfg, plan, crossing)?;
    sim.step_all(cancel)?;
    Ok(sim.stalls())
}

/// One trace of every core's run: core `c`'s tensors, ops and pools are
/// named `core{c}/...` with ids after the cores before it, its ops run on
/// unit `core{c}`, its events carry `thread = c`, and the bus counter is
/// the shared bus's.
fn merge(
    traces: Vec<Trace>,
    bus: &SharedBus,
    alone: &[Vec<u64>],
    runs: &[CoreRun],
    shared: Option<&SharedPool>,
) -> Result<Trace> {
    let cores = traces.len();
    // Where each core's tensors and ops start in the merged trace.
    let (mut t0s, mut o0s) = (Vec::with_capacity(cores), Vec::with_capacity(cores));
    let (mut tn, mut on) = (0usize, 0usize);
    for tr in &traces {
        t0s.push(tn);
        o0s.push(on);
        tn += tr.tensors.len();
        on += tr.ops.len();
    }
    let Some(first) = traces.first() else {
        return Err(crate::Error::Hardware(
            "a run needs at least one core".into(),
        ));
    };
    let mut out = first.clone_header();
    let latency = traces
        .iter()
        .map(|t| t.summary.latency_ns)
        .max()
        .unwrap_or(0);
    out.pools = Vec::new();
    out.events = Events::with_capacity(traces.iter().map(|t| t.events.len()).sum());
    let bucket = (latency / 1000).max(1);
    out.counters = vec![Counter {
        name: "bus_occupancy".into(),
        unit: "fraction".into(),
        pool: None,
        samples: occupancy(bus.intervals(), latency.max(1), bucket),
    }];
    if let Some(pool) = shared {
        pool.write_events(&mut out.events, &t0s, latency);
    }
    let mut stall = 0u64;
    let mut contention = 0u64;
    for (c, tr) in traces.into_iter().enumerate() {
        let (t0, o0) = (t0s[c], o0s[c]);
        out.pools.extend(tr.pools.iter().map(|p| Pool {
            name: on_core(c, &p.name).into(),
            ..p.clone()
        }));
        out.tensors.extend(tr.tensors.iter().map(|t| TraceTensor {
            id: t.id + t0,
            name: on_core(c, t.name),
            pool: on_core(c, t.pool),
            producer: t.producer.map(|p| p + o0),
            consumers: t.consumers.iter().map(|&x| x + o0).collect(),
            ..t.owned()
        }));
        for (i, o) in tr.ops.iter().enumerate() {
            let own = alone[c].get(i).copied().unwrap_or(o.stall_ns);
            let waited = o.stall_ns.saturating_sub(own);
            stall = stall.saturating_add(o.stall_ns);
            contention = contention.saturating_add(waited);
            out.ops.push(TraceOp {
                id: o.id + o0,
                name: on_core(c, o.name),
                inputs: o.inputs.iter().map(|&x| x + t0).collect(),
                outputs: o.outputs.iter().map(|&x| x + t0).collect(),
                streamed: o.streamed.iter().map(|&x| x + t0).collect(),
                unit: Some(Unit(match o.unit {
                    Some(u) => on_core(c, u.as_str()),
                    None => format_compact!("core{c}"),
                })),
                contention_ns: Some(waited),
                ..o.owned()
            });
        }
        for e in tr.events.iter() {
            out.events.push(Event {
                tensor: e.tensor + t0,
                op: e.op.map(|x| x + o0),
                pool: on_core(c, e.pool),
                thread: Some(c as u64),
                ..e.owned()
            });
        }
        for mut counter in tr
            .counters
            .into_iter()
            .filter(|k| k.name != "bus_occupancy")
        {
            counter.pool = Some(match counter.pool.as_deref() {
                Some(p) => on_core(c, p).into(),
                None => format!("core{c}"),
            });
            out.counters.push(counter);
        }
        let s = &tr.summary;
        let m = &mut out.summary;
        if c > 0 {
            m.peak_live_bytes = m.peak_live_bytes.max(s.peak_live_bytes);
            m.peak_resident_bytes = m.peak_resident_bytes.max(s.peak_resident_bytes);
            m.lower_bound_traffic_bytes = m
                .lower_bound_traffic_bytes
                .saturating_add(s.lower_bound_traffic_bytes);
            m.recompute_saved_bytes = m
                .recompute_saved_bytes
                .saturating_add(s.recompute_saved_bytes);
            m.energy_uj += s.energy_uj;
        }
    }
    if let Some(pool) = shared {
        read_in_place(&mut out, runs, pool, &t0s, &o0s);
        pool.write_pool(&mut out, &t0s);
    }
    out.events.sort_by_time();
    let m = &mut out.summary;
    m.latency_ns = latency;
    m.throughput_fps = if latency > 0 {
        1e9 / latency as f64
    } else {
        0.0
    };
    m.stall_ns = stall;
    m.contention_ns = contention;
    m.cores = cores as u32;
    Ledger::of(&out).fields().write_to(&mut out.summary);
    Ok(out)
}

/// What reading a tensor in the shared pool does to a tensor's consumers.
#[derive(Clone, Copy)]
enum Reader {
    /// The producer's tensor gains the reading op.
    Joins(usize),
    /// The reader's own copy, never loaded, loses its readers.
    CopyUnread,
}

/// Every op that reads a tensor in the shared pool reads the producer's
/// tensor there: it joins the op's inputs (a core's run leaves out what it
/// does not hold) and the tensor's consumers, and the reader's own copy,
/// never loaded, has no consumers.
fn read_in_place(
    out: &mut Trace,
    runs: &[CoreRun],
    pool: &SharedPool,
    t0s: &[usize],
    o0s: &[usize],
) {
    // Inputs joined per merged op and consumers per tensor, applied in
    // one pass over each list's columns, in the order they were found.
    let mut joined: Vec<Vec<usize>> = vec![Vec::new(); out.ops.len()];
    let mut readers: Vec<Vec<Reader>> = vec![Vec::new(); out.tensors.len()];
    for (c, run) in runs.iter().enumerate() {
        for (i, op) in run.graph.ops.iter().enumerate() {
            for &l in op.inputs {
                let Some(stay) = pool.of.get(run.global[l]).copied().flatten() else {
                    continue;
                };
                let stay = &pool.stays[stay];
                let tensor = t0s[stay.core] + stay.local;
                let merged_op = o0s[c] + i;
                if let Some(j) = joined.get_mut(merged_op) {
                    j.push(tensor);
                }
                if c != stay.core {
                    if let Some(r) = readers.get_mut(tensor) {
                        r.push(Reader::Joins(merged_op));
                    }
                    if let Some(r) = readers.get_mut(t0s[c] + l) {
                        r.push(Reader::CopyUnread);
                    }
                }
            }
        }
    }
    if readers.iter().any(|r| !r.is_empty()) {
        out.tensors.update_all(|i, t| {
            for r in &readers[i] {
                match *r {
                    Reader::Joins(o) if !t.consumers.contains(&o) => t.consumers.push(o),
                    Reader::Joins(_) => {}
                    Reader::CopyUnread => t.consumers.clear(),
                }
            }
        });
    }
    if joined.iter().any(|j| !j.is_empty()) {
        out.ops.update_all(|i, o| {
            for &t in &joined[i] {
                if !o.inputs.contains(&t) {
                    o.inputs.push(t);
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_core_prefixed_name_gives_the_graph_name_back() {
        for name in ["x", "/layer1/Conv", "core7/y", "enc0.ffn"] {
            assert_eq!(graph_name(&on_core(3, name)), name);
        }
        assert_eq!(graph_name("core/x"), "core/x");
        assert_eq!(graph_name("corex/y"), "corex/y");
        assert_eq!(graph_name("plain"), "plain");
    }
}
