//! The shareable report of one trace: summary, hotspots, classification,
//! oscillating tensors, the worst round trips, and — when the trace can be
//! re-simulated — suggestions, a capacity what-if curve and the exact
//! optimum. One data structure; markdown, JSON and HTML render it.

use super::classify::classify_with_causes;
use super::hotspots::{by_op_type, hotspots, order_hotspots, Hotspot, HotspotKey, TypeHotspot};
use super::optimum::{optimal_traffic, Optimum, OptimumLimits};
use super::roundtrips::{round_trips, Back, Out, TensorTrips};
use super::runs::RunRow;
use super::suggest::{inputs_of_trace, suggest, Suggestions};
use super::whatif::{grid, knees, run as sweep, search_knees, Knee};
use crate::analysis::residency::first_pool_resident_by_step;
use crate::sim::prepare_graph;
use crate::trace::ledger::Ledger;
use crate::trace::Trace;
use serde::Serialize;

/// How many rows each ranked section keeps.
const TOP: usize = 15;
/// Points kept per chart series.
const SERIES_POINTS: usize = 400;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClassificationSummary {
    pub capacity_count: usize,
    pub lifetime_count: usize,
    pub capacity_bytes: u64,
    pub lifetime_bytes: u64,
    /// Lifetime-spill causes by kind, most frequent first.
    pub lifetime_causes: Vec<CauseRow>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CauseRow {
    /// `fragmentation`, `late free`, or the simulator's reason.
    pub kind: String,
    pub count: usize,
    /// The first spill of this kind, in full.
    pub example: String,
}

/// One round trip (out by an eviction or stream out, back by a reload or
/// stream in), with names resolved for reading.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TripRow {
    pub tensor: String,
    pub bytes: u64,
    pub out: Out,
    pub out_at_ns: u64,
    /// The op during which it went out.
    pub out_during: String,
    /// How it came back; `None`: it never did.
    pub back: Option<Back>,
    pub back_at_ns: Option<u64>,
    /// The op it came back for (`-` when it never did).
    pub back_for: String,
    pub ops_skipped: usize,
    /// Stall of the op that waited for it to come back.
    pub stall_ns: u64,
}

/// Downsampled time series for charts: `(t_ns, value)`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Series {
    pub live_bytes: Vec<(u64, f64)>,
    pub resident_bytes: Vec<(u64, f64)>,
    pub bus_occupancy: Vec<(u64, f64)>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WhatifCurve {
    pub rows: Vec<RunRow>,
    pub knees: Vec<Knee>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    pub model: String,
    pub source: crate::trace::Source,
    pub policy: String,
    pub summary: RunRow,
    pub op_count: usize,
    pub tensor_count: usize,
    pub event_count: usize,
    pub hotspots: Vec<Hotspot>,
    pub op_types: Vec<TypeHotspot>,
    pub classification: ClassificationSummary,
    pub oscillating: Vec<TensorTrips>,
    pub worst_round_trips: Vec<TripRow>,
    pub suggestions: Option<Suggestions>,
    pub whatif: Option<WhatifCurve>,
    pub optimum: Option<Optimum>,
    /// Why re-simulated sections are missing, if they are.
    pub notes: Vec<String>,
    pub series: Series,
}

fn downsample(samples: &[(u64, f64)], n: usize) -> Vec<(u64, f64)> {
    if samples.len() <= n {
        return samples.to_vec();
    }
    // Keep each bucket's maximum so peaks survive.
    let per = samples.len().div_ceil(n);
    samples
        .chunks(per)
        .filter_map(|c| {
            c.iter()
                .copied()
                .max_by(|a, b| a.1.partial_cmp(&b.1).unwrap_or(std::cmp::Ordering::Equal))
                .map(|m| (c[0].0, m.1))
        })
        .collect()
}

fn series_of(tr: &Trace) -> Series {
    let get = |name: &str| {
        tr.counters
            .iter()
            .find(|c| c.name == name)
            .map(|c| downsample(&c.samples, SERIES_POINTS))
            .unwrap_or_default()
    };
    let mut resident_bytes = get("resident_bytes");
    if resident_bytes.is_empty() {
        // An instrumented trace has events only: what they left on chip
        // (first pool) while each op ran, as the explorer's overview shows.
        if let Some(per_op) = first_pool_resident_by_step(tr) {
            let mut samples: Vec<(u64, f64)> = tr
                .ops
                .iter()
                .zip(per_op)
                .map(|(o, b)| (o.start_ns, b as f64))
                .collect();
            // Ops of several threads interleave.
            samples.sort_by_key(|s| s.0);
            resident_bytes = downsample(&samples, SERIES_POINTS);
        }
    }
    Series {
        live_bytes: get("live_bytes"),
        resident_bytes,
        bus_occupancy: get("bus_occupancy"),
    }
}

/// Builds the report. `resimulate` allows the sections that re-run the
/// simulator (suggestions, what-if curve, exact optimum) for simulator traces.
pub fn build(tr: &Trace, resimulate: bool) -> Report {
    let ledger = Ledger::of(tr);
    let hs = hotspots(tr, &ledger);
    let order = order_hotspots(&hs, HotspotKey::Traffic, false);
    let top: Vec<Hotspot> = order
        .iter()
        .take(TOP)
        .map(|&i| hs[i].clone())
        .filter(|h| h.traffic_bytes + h.stall_ns > 0)
        .collect();
    let c = classify_with_causes(tr, &ledger);
    let mut causes: Vec<CauseRow> = Vec::new();
    for s in c
        .spills
        .iter()
        .filter(|s| s.class == super::classify::SpillClass::Lifetime)
    {
        let kind = s.cause.split(':').next().unwrap_or("").to_string();
        match causes.iter_mut().find(|r| r.kind == kind) {
            Some(r) => r.count += 1,
            None => causes.push(CauseRow {
                kind,
                count: 1,
                example: s.cause.clone(),
            }),
        }
    }
    causes.sort_by_key(|c| std::cmp::Reverse(c.count));
    causes.truncate(TOP);
    let trips = round_trips(tr, &ledger);
    let op_name = |o: Option<usize>| {
        o.and_then(|i| tr.ops.get(i))
            .map(|x| x.name.clone())
            .unwrap_or_else(|| "-".into())
    };
    let mut worst: Vec<TripRow> = trips
        .iter()
        .flat_map(|t| {
            t.trips.iter().map(|r| TripRow {
                tensor: t.name.clone(),
                bytes: r.bytes,
                out: r.out,
                out_at_ns: r.out_t_ns,
                out_during: op_name(r.out_op),
                back: r.back,
                back_at_ns: r.back_t_ns,
                back_for: op_name(r.back_op),
                ops_skipped: r.ops_skipped,
                stall_ns: r
                    .back_op
                    .and_then(|o| tr.ops.get(o))
                    .map(|o| o.stall_ns)
                    .unwrap_or(0),
            })
        })
        .collect();
    worst.sort_by(|a, b| {
        b.stall_ns
            .cmp(&a.stall_ns)
            .then(b.bytes.cmp(&a.bytes))
            .then(a.out_at_ns.cmp(&b.out_at_ns))
    });
    worst.truncate(TOP);
    let mut notes = Vec::new();
    let (mut suggestions, mut whatif, mut optimum) = (None, None, None);
    if resimulate {
        match inputs_of_trace(tr) {
            Ok((g, hw, cfg)) => {
                match suggest(&g, &hw, &cfg) {
                    Ok(s) => suggestions = Some(s),
                    Err(e) => notes.push(format!("suggestions: {e}")),
                }
                let cap = hw.memory.capacity.0;
                let peak = tr.summary.peak_live_bytes.max(1);
                let top = (peak + peak / 4).max(cap);
                let lo = (cap / 4).max(1);
                let step = ((top - lo) / 23).max(1);
                let caps: Vec<u64> = (0..24).map(|i| lo + i * step).collect();
                let rows = sweep(&g, &hw, &cfg, &grid(&caps, &[None], &[cfg.policy]), &|| {});
                let searched = search_knees(&g, &hw, &cfg, &[cfg.policy]);
                match rows.and_then(|r| searched.map(|s| (r, s))) {
                    Ok((rows, searched)) => {
                        whatif = Some(WhatifCurve {
                            knees: knees(&rows, &searched),
                            rows,
                        })
                    }
                    Err(e) => notes.push(format!("what-if: {e}")),
                }
                match prepare_graph(&g, &cfg) {
                    Ok(p) => {
                        let o = optimal_traffic(
                            &p,
                            cap,
                            OptimumLimits {
                                time_limit_s: 3.0,
                                ..Default::default()
                            },
                        );
                        if o.exact_bytes.is_some() || o.lp_bound_bytes.is_some() {
                            optimum = Some(o);
                        } else if let Some(n) = o.note {
                            notes.push(format!("exact optimum: {n}"));
                        }
                    }
                    Err(e) => notes.push(format!("exact optimum: {e}")),
                }
            }
            Err(e) => notes.push(format!(
                "suggestions, what-if and the exact optimum re-simulate: {e}"
            )),
        }
    }
    let mut summary = RunRow::from_trace(tr);
    if let Some(o) = &optimum {
        summary.tighten_bound(o);
    }
    Report {
        model: tr.meta.model.clone(),
        source: tr.source,
        policy: tr.meta.policy.clone(),
        summary,
        op_count: tr.ops.len(),
        tensor_count: tr.tensors.len(),
        event_count: tr.events.len(),
        op_types: by_op_type(&hs).into_iter().take(TOP).collect(),
        hotspots: top,
        classification: ClassificationSummary {
            capacity_count: c.capacity_count,
            lifetime_count: c.lifetime_count,
            capacity_bytes: c.capacity_bytes,
            lifetime_bytes: c.lifetime_bytes,
            lifetime_causes: causes,
        },
        oscillating: trips
            .into_iter()
            .filter(|t| t.oscillating)
            .take(TOP)
            .collect(),
        worst_round_trips: worst,
        suggestions,
        whatif,
        optimum,
        notes,
        series: series_of(tr),
    }
}
