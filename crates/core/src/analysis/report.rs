//! The shareable report of one trace: summary, hotspots, classification,
//! oscillating tensors, the worst round trips, and — when the trace can be
//! re-simulated — suggestions, a capacity what-if curve and the exact
//! optimum. One data structure; markdown, JSON and HTML render it.

use super::classify::classify_with_causes;
use super::hotspots::{
    by_name, by_op_type, hotspots, order_hotspots, Hotspot, HotspotKey, TypeHotspot,
};
use super::measured::{summary as measured_summary, MeasuredSummary};
use super::optimum::Optimum;
use super::roundtrips::{round_trips, Back, Out, TensorTrips};
use super::runs::RunRow;
use super::suggest::Suggestions;
use super::whatif::Knee;
use crate::analysis::residency::first_pool_resident_by_step;
use crate::trace::caps::Capabilities;
use crate::trace::ledger::Ledger;
use crate::trace::{Source, Trace};
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

/// The run's figures, without those the trace cannot support: serialized
/// as the [`RunRow`] minus the fields named in `hidden`.
#[derive(Debug, Clone, PartialEq)]
pub struct GatedRow {
    pub row: RunRow,
    pub hidden: Vec<&'static str>,
}

impl Serialize for GatedRow {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut v = serde_json::to_value(&self.row).map_err(serde::ser::Error::custom)?;
        if let Some(m) = v.as_object_mut() {
            for k in &self.hidden {
                m.remove(*k);
            }
        }
        v.serialize(s)
    }
}

impl std::ops::Deref for GatedRow {
    type Target = RunRow;
    fn deref(&self) -> &RunRow {
        &self.row
    }
}

/// The summary fields a trace with `caps` cannot support.
pub fn unsupported_fields(caps: &Capabilities) -> Vec<&'static str> {
    let mut v = Vec::new();
    if !caps.capacity {
        v.extend([
            "capacity_bytes",
            "lower_bound_traffic_bytes",
            "lower_bound_method",
            "gap_to_bound_bytes",
            "gap_ratio",
        ]);
    }
    if !caps.frees {
        v.extend(["peak_live_bytes", "peak_resident_bytes"]);
    }
    if !caps.spill_events {
        v.extend([
            "spill_count",
            "spilled_bytes",
            "reloaded_bytes",
            "streamed_in_bytes",
            "streamed_out_bytes",
            "traffic_bytes",
            "stall_ns",
            "lower_bound_traffic_bytes",
            "lower_bound_method",
            "gap_to_bound_bytes",
            "gap_ratio",
            "energy_uj",
            "read_bandwidth",
            "write_bandwidth",
        ]);
    }
    v.sort_unstable();
    v.dedup();
    v
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    pub model: String,
    pub source: crate::trace::Source,
    pub policy: String,
    /// What the trace records; sections it cannot support are left out.
    pub capabilities: Capabilities,
    /// For runtime traces: the figures they support, what is missing and how
    /// to get it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub measured: Option<MeasuredSummary>,
    pub summary: GatedRow,
    pub op_count: usize,
    pub tensor_count: usize,
    pub event_count: usize,
    /// The column the hotspots are ranked by (spill traffic; self time for
    /// traces without spill events).
    pub hotspots_by: HotspotKey,
    pub hotspots: Vec<Hotspot>,
    /// Ops ranked by memory (bytes live at the peak, else allocated), for
    /// traces that record allocations.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub memory_hotspots: Vec<Hotspot>,
    /// Runtime traces whose op names repeat (a profile calls `aten::conv2d`
    /// once per layer): the names ranked by total time (a name's calls
    /// hold the time of what they call), each name's calls summed (`calls`
    /// counts them).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hotspots_by_name: Vec<Hotspot>,
    pub op_types: Vec<TypeHotspot>,
    /// Only where capacity and lifetimes are known.
    pub classification: Option<ClassificationSummary>,
    pub oscillating: Vec<TensorTrips>,
    pub worst_round_trips: Vec<TripRow>,
    pub suggestions: Option<Suggestions>,
    pub whatif: Option<WhatifCurve>,
    pub optimum: Option<Optimum>,
    /// Why re-simulated sections are missing, if they are.
    pub notes: Vec<String>,
    /// A runtime profile with op times: the command that simulates its
    /// model with them (`PROFILE` until [`Report::with_profile_path`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub calibrate: Option<String>,
    pub series: Series,
    /// Each core's share of a multi-core run (empty on one core).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cores: Vec<super::cores::CoreRow>,
    /// How a multi-core run spread over its cores, when the trace records
    /// its config.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub split: Option<crate::sim::config::Split>,
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

impl Report {
    /// Names the profile file in the calibration command.
    pub fn with_profile_path(mut self, p: &std::path::Path) -> Report {
        if self.calibrate.is_some() {
            let model = self
                .measured
                .as_ref()
                .and_then(|m| m.linked.as_ref().map(|l| l.model.clone()));
            self.calibrate = Some(super::measured::calibrate_command(p, model.as_deref()));
        }
        self
    }
}

/// What re-simulating the trace's run found (the session computes it):
/// suggestions, the what-if curve with its knees, the exact program and the
/// run's bound from it, and why any of them is missing.
#[derive(Debug, Clone, Default)]
pub struct Resimulated {
    pub suggestions: Option<Suggestions>,
    pub whatif: Option<WhatifCurve>,
    pub optimum: Option<Optimum>,
    pub bound: Option<crate::analysis::figures::TrafficBound>,
    pub notes: Vec<String>,
}

/// The report of a trace as it stands (no re-simulated sections).
pub fn build(tr: &Trace) -> Report {
    build_with(tr, Resimulated::default())
}

/// The report with what re-simulating its run found.
pub fn build_with(tr: &Trace, extra: Resimulated) -> Report {
    let caps = Capabilities::of(tr);
    let ledger = Ledger::of(tr);
    let hs = hotspots(tr, &ledger);
    let by = if caps.spill_events {
        HotspotKey::Traffic
    } else {
        HotspotKey::SelfTime
    };
    let order = order_hotspots(&hs, by, false);
    let top: Vec<Hotspot> = order
        .iter()
        .take(TOP)
        .map(|&i| hs[i].clone())
        .filter(|h| !caps.spill_events || h.traffic_bytes + h.stall_ns > 0)
        .collect();
    let memory_key = if caps.frees {
        HotspotKey::AtPeak
    } else {
        HotspotKey::Allocated
    };
    let memory_hotspots: Vec<Hotspot> = if hs.iter().any(|h| h.allocs > 0) {
        order_hotspots(&hs, memory_key, false)
            .iter()
            .take(TOP)
            .map(|&i| hs[i].clone())
            .filter(|h| h.alloc_bytes > 0)
            .collect()
    } else {
        Vec::new()
    };
    let names = by_name(&hs);
    let hotspots_by_name: Vec<Hotspot> = if !caps.spill_events && names.len() < hs.len() {
        order_hotspots(&names, HotspotKey::TotalTime, false)
            .iter()
            .take(TOP)
            .map(|&i| names[i].clone())
            .collect()
    } else {
        Vec::new()
    };
    let c = classify_with_causes(tr, &ledger);
    let mut causes: Vec<CauseRow> = Vec::new();
    let sp = &c.spills;
    for k in (0..sp.len()).filter(|&k| sp.class(k) == super::classify::SpillClass::Lifetime) {
        let cause = sp.cause(k);
        let kind = cause.split(':').next().unwrap_or("");
        match causes.iter_mut().find(|r| r.kind == kind) {
            Some(r) => r.count += 1,
            None => causes.push(CauseRow {
                kind: kind.to_string(),
                count: 1,
                example: cause.to_string(),
            }),
        }
    }
    causes.sort_by_key(|c| std::cmp::Reverse(c.count));
    causes.truncate(TOP);
    let trips = round_trips(tr, &ledger);
    let op_name = |o: Option<usize>| o.and_then(|i| tr.ops.get(i)).map(|x| x.name).unwrap_or("-");
    let mut worst: Vec<TripRow> = trips
        .iter()
        .flat_map(|t| {
            t.trips.iter().map(|r| TripRow {
                tensor: t.name.clone(),
                bytes: r.bytes,
                out: r.out,
                out_at_ns: r.out_t_ns,
                out_during: op_name(r.out_op).into(),
                back: r.back,
                back_at_ns: r.back_t_ns,
                back_for: op_name(r.back_op).into(),
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
    let measured = (tr.source == Source::Instrumented).then(|| measured_summary(tr, &caps));
    let calibrate = measured.as_ref().filter(|_| caps.op_times).map(|m| {
        super::measured::calibrate_command(
            std::path::Path::new("PROFILE"),
            m.linked.as_ref().map(|l| l.model.as_str()),
        )
    });
    let Resimulated {
        suggestions,
        whatif,
        optimum,
        bound,
        mut notes,
    } = extra;
    if measured.is_some() {
        // A profile records no hardware or schedule: nothing to re-run.
        notes.push(
            "suggestions, what-if and the exact optimum re-simulate a model: a measured profile records no hardware or schedule".into(),
        );
    }
    let mut summary = RunRow::from_trace(tr);
    if let Some(b) = bound {
        summary = summary.with_bound(b);
    }
    let mut series = series_of(tr);
    if !caps.frees {
        // Without frees, "live" bytes only ever grow: not a figure.
        series.live_bytes.clear();
        series.resident_bytes.clear();
    }
    Report {
        model: tr.meta.model.clone(),
        source: tr.source,
        policy: tr.meta.policy.clone(),
        capabilities: caps,
        measured,
        summary: GatedRow {
            row: summary,
            hidden: unsupported_fields(&caps),
        },
        hotspots_by: by,
        memory_hotspots,
        hotspots_by_name,
        op_count: tr.ops.len(),
        tensor_count: tr.tensors.len(),
        event_count: tr.events.len(),
        op_types: by_op_type(&hs).into_iter().take(TOP).collect(),
        hotspots: top,
        classification: caps.capacity_figures().then_some(ClassificationSummary {
            capacity_count: c.capacity_count,
            lifetime_count: c.lifetime_count,
            capacity_bytes: c.capacity_bytes,
            lifetime_bytes: c.lifetime_bytes,
            lifetime_causes: causes,
        }),
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
        calibrate,
        series,
        cores: super::cores::per_core(tr, &hs),
        split: (tr.summary.cores > 1)
            .then(|| crate::sim::settings::settings(&tr.meta.producer))
            .flatten()
            .map(|(_, cfg)| cfg.split),
    }
}
