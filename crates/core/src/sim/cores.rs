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

use super::engine::{Sim, CANCEL_EVERY};
use super::plan::Residency;
use super::SimConfig;
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

/// The graph one core runs: the whole graph on one core, else its share
/// of the batch ([`transform::split_batch`]). Plans and bounds are solved
/// on this graph (per core).
pub fn core_graph<'g>(g: &'g Graph, hw: &HardwareProfile) -> Result<Cow<'g, Graph>> {
    match hw.cores.count {
        0 | 1 => Ok(Cow::Borrowed(g)),
        k => Ok(Cow::Owned(transform::split_batch(g, u64::from(k))?)),
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

/// Simulates `g` (already prepared: rewrites applied, not yet split) on
/// every core of `hw`, `plan` being the planned policy's plan of one
/// core's graph.
pub(crate) fn simulate_cores(
    g: &Graph,
    hw: &HardwareProfile,
    cfg: &SimConfig,
    plan: Option<Arc<Residency>>,
    cancel: &Cancel,
) -> Result<Trace> {
    let k = hw.cores.count as usize;
    let core = core_graph(g, hw)?;
    let n = core.ops.len();
    let alone = stalls_alone(&core, hw, cfg, plan.clone(), cancel)?;
    let mut sims = (0..k)
        .map(|_| Sim::new(&core, hw, cfg, plan.clone()))
        .collect::<Result<Vec<_>>>()?;
    let mut bus = SharedBus::default();
    let mut next = vec![0usize; k];
    let mut steps = 0usize;
    // The earliest clock goes next (ties: the lower core).
    while let Some(c) = (0..k)
        .filter(|&c| next[c] < n)
        .min_by_key(|&c| (sims[c].now, c))
    {
        if steps.is_multiple_of(CANCEL_EVERY) {
            cancel.check()?;
        }
        sims[c].bus.shared = Some(std::mem::take(&mut bus));
        let stepped = sims[c].step(next[c]);
        bus = sims[c].bus.shared.take().unwrap_or_default();
        stepped?;
        next[c] += 1;
        steps += 1;
    }
    let traces: Vec<Trace> = sims.into_iter().map(Sim::finish).collect();
    merge(traces, &bus, &alone)
}

/// Each op's stall on a core with the bus to itself.
fn stalls_alone(
    core: &Graph,
    hw: &HardwareProfile,
    cfg: &SimConfig,
    plan: Option<Arc<Residency>>,
    cancel: &Cancel,
) -> Result<Vec<u64>> {
    let mut sim = Sim::new(core, hw, cfg, plan)?;
    for i in 0..core.ops.len() {
        if i.is_multiple_of(CANCEL_EVERY) {
            cancel.check()?;
        }
        sim.step(i)?;
    }
    Ok(sim.finish().ops.iter().map(|o| o.stall_ns).collect())
}

/// One trace of every core's run: core `c`'s tensors, ops and pools are
/// named `core{c}/...` with ids after the cores before it, its ops run on
/// unit `core{c}`, its events carry `thread = c`, and the bus counter is
/// the shared bus's.
fn merge(traces: Vec<Trace>, bus: &SharedBus, alone: &[u64]) -> Result<Trace> {
    let cores = traces.len();
    let Some(first) = traces.first() else {
        return Err(crate::Error::Hardware(
            "a run needs at least one core".into(),
        ));
    };
    let mut out = first.clone_header();
    let (nt, n) = (first.tensors.len(), first.ops.len());
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
    let mut stall = 0u64;
    let mut contention = 0u64;
    for (c, tr) in traces.into_iter().enumerate() {
        let (t0, o0) = (c * nt, c * n);
        out.pools.extend(tr.pools.iter().map(|p| Pool {
            name: on_core(c, &p.name).into(),
            ..p.clone()
        }));
        out.tensors.extend(tr.tensors.iter().map(|t| TraceTensor {
            id: t.id + t0,
            name: on_core(c, &t.name),
            pool: on_core(c, &t.pool),
            producer: t.producer.map(|p| p + o0),
            consumers: t.consumers.iter().map(|&x| x + o0).collect(),
            ..t.clone()
        }));
        for (i, o) in tr.ops.iter().enumerate() {
            let own = alone.get(i).copied().unwrap_or(o.stall_ns);
            let waited = o.stall_ns.saturating_sub(own);
            stall = stall.saturating_add(o.stall_ns);
            contention = contention.saturating_add(waited);
            out.ops.push(TraceOp {
                id: o.id + o0,
                name: on_core(c, &o.name),
                inputs: o.inputs.iter().map(|&x| x + t0).collect(),
                outputs: o.outputs.iter().map(|&x| x + t0).collect(),
                streamed: o.streamed.iter().map(|&x| x + t0).collect(),
                unit: Some(Unit(match &o.unit {
                    Some(u) => on_core(c, u.as_str()),
                    None => format_compact!("core{c}"),
                })),
                contention_ns: Some(waited),
                ..o.clone()
            });
        }
        for e in tr.events.iter() {
            out.events.push(Event {
                tensor: e.tensor + t0,
                op: e.op.map(|x| x + o0),
                pool: on_core(c, &e.pool),
                thread: Some(c as u64),
                ..e
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
