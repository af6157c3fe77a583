//! A loaded trace with everything the explorer's views need, computed once
//! by the session (off the UI thread) so that frames only read; the same
//! figures are available headless from the analyses it calls.

use crate::analysis::classify::{classify, classify_with_causes, Classification};
use crate::analysis::diff::{diff_with, TraceDiff};
use crate::analysis::hotspots::Hotspots;
use crate::analysis::memmap::{OccupancyIndex, Placement, Placements};
use crate::analysis::residency::first_pool_resident_by_step;
use crate::analysis::roundtrips::TensorTrips;
use crate::analysis::timeline::{SeriesIndex, TimelineIndex};
use crate::analysis::trip_table::Trips;
use crate::trace::ledger::Ledger;
use crate::trace::Trace;
use std::sync::Arc;

/// The end of a trace's time axis (as the timeline index computes it).
fn trace_end(tr: &Trace) -> u64 {
    // The column, not the rows: a row per op was 150 ms of a 10M-event
    // trace's first frame.
    let ops = tr.ops.end_col().iter().copied();
    ops.chain(std::iter::once(tr.events.max_end_ns()))
        .chain(std::iter::once(tr.summary.latency_ns))
        .max()
        .unwrap_or(0)
        .max(1)
}

/// Core 0's live bytes per step of a multi-core trace (its `live_bytes`
/// counter, pool `core0/...`, one sample per op of core 0).
fn core0_live_by_step(trace: &Trace) -> Vec<u64> {
    let on_core0 = |p: Option<&str>| p.is_some_and(|p| p == "core0" || p.starts_with("core0/"));
    let Some(c) = trace
        .counters
        .iter()
        .find(|c| c.name == "live_bytes" && on_core0(c.pool.as_deref()))
    else {
        return Vec::new();
    };
    let ops = trace
        .ops
        .iter()
        .filter(|o| crate::analysis::cores::core_of(*o) == Some(0))
        .count();
    if c.samples.len() != ops {
        return Vec::new();
    }
    c.samples.iter().map(|s| s.1 as u64).collect()
}

/// Bytes per op step for the overview chart: the `live_bytes` counter (a
/// simulation's working set), else (`true`) what the events left resident
/// in the first pool while each op ran (an instrumented run).
fn live_by_step(trace: &Trace) -> (Vec<u64>, bool) {
    let live = live_counter_by_step(trace);
    if !live.is_empty() || trace.ops.is_empty() {
        return (live, false);
    }
    match first_pool_resident_by_step(trace) {
        Some(per_op) => (per_op, true),
        None => (Vec::new(), false),
    }
}

/// Live bytes per op step, from the `live_bytes` counter. On several
/// cores, core 0's steps and counter: the cores' steps are not one
/// sequence (each core's counter follows its own ops).
fn live_counter_by_step(trace: &Trace) -> Vec<u64> {
    if trace.summary.cores > 1 {
        return core0_live_by_step(trace);
    }
    match trace.counters.iter().find(|c| c.name == "live_bytes") {
        Some(c) if c.samples.len() == trace.ops.len() => {
            c.samples.iter().map(|s| s.1 as u64).collect()
        }
        // Samples at their own times (a runtime's counter): the most any
        // sample shows while the op runs, with the value it started with,
        // so the chart's peak is the counter's peak.
        Some(c) => trace
            .ops
            .iter()
            .map(|o| {
                let i = c.samples.partition_point(|s| s.0 <= o.start_ns);
                // An op recorded as ending before it starts (a damaged
                // trace the reader lets through) spans no samples.
                let j = c.samples.partition_point(|s| s.0 <= o.end_ns).max(i);
                let at_start = i.checked_sub(1).map(|i| c.samples[i].1).unwrap_or(0.0);
                c.samples[i..j].iter().map(|s| s.1).fold(at_start, f64::max) as u64
            })
            .collect(),
        None => Vec::new(),
    }
}

/// One trace plus its analyses.
#[derive(Debug, Clone)]
pub struct Dataset {
    pub label: String,
    /// When this dataset was built (the run or load it holds had just
    /// finished): what "last load" on screen says.
    pub built_at: std::time::SystemTime,
    /// Shared between the quick first view and the complete analyses.
    pub trace: Arc<Trace>,
    /// The ledger of the trace, computed once; every traffic figure the
    /// views show comes from it.
    pub ledger: Arc<Ledger>,
    /// False while the heavy analyses (timeline index, round trips, hotspots,
    /// memory map) are still being computed in the background.
    pub complete: bool,
    end_ns: u64,
    pub index: TimelineIndex,
    pub bus: Option<SeriesIndex>,
    /// Every op's hotspot (rows made from the trace when asked for).
    pub hotspots: Hotspots,
    /// The hotspots grouped by op name (Hotspots' `g`; `report`'s table of
    /// the same for runtime profiles); empty when no name is called twice.
    pub hotspots_by_name: Hotspots,
    /// Round trips per tensor (rows made from the trace when asked for).
    pub trips: Trips,
    pub class: Classification,
    /// Placements sorted by start time.
    pub placements: Placements,
    /// Per tensor, the shade the memory map draws it in (neighbours differ).
    pub shades: Vec<u8>,
    /// Per pool (in the trace's order; one for a trace without pools).
    pub occupancy: Vec<OccupancyIndex>,
    /// Live bytes per op step (from the `live_bytes` counter).
    pub live_by_step: Vec<u64>,
    /// Block maxima of `live_by_step`: a frame's chart columns and its peak
    /// without reading every step.
    pub live_max: crate::analysis::range_max::RangeMax,
    /// `live_by_step` is on-chip residency from the events (no
    /// `live_bytes` counter in the trace).
    pub live_is_resident: bool,
    pub capacity: u64,
    /// The capacity of the pools holding what peak live counts, when that
    /// is several pools (`analysis::runs::live_pools_capacity`).
    pub live_pools_capacity: Option<u64>,
    /// What the trace records; views leave out what it cannot support.
    pub caps: crate::trace::caps::Capabilities,
    /// A runtime trace's own figures (what it can support).
    pub measured: Option<crate::analysis::measured::MeasuredSummary>,
    /// Nested ops: the level shown (1 = top level) and how many there are.
    pub level: u32,
    pub levels: u32,
    /// One timeline per unit (pipe) for kernel traces (e.g. from `npu
    /// import`), where pipes run ops in parallel.
    pub pipes: Vec<(String, TimelineIndex)>,
    /// One lane per on-chip pool when a trace has several (an NPU kernel's
    /// L1, UB, L0A/L0B/L0C): the pool's name, capacity and its resident
    /// bytes as a fraction of that capacity over time.
    pub pools: Vec<PoolLane>,
    /// How the trace's times print (cycles for an NPU case).
    pub clock: crate::units::Clock,
    /// What the reader skipped or doubted (malformed stream lines, events
    /// the runtime dropped): shown in the banner so a view built from
    /// partial data says so.
    pub warnings: Vec<String>,
}

/// The measured summary of a runtime trace (none for simulations).
fn measured_of(tr: &Trace) -> Option<crate::analysis::measured::MeasuredSummary> {
    (tr.source == crate::trace::Source::Instrumented)
        .then(|| crate::analysis::measured::summary(tr, &crate::trace::caps::Capabilities::of(tr)))
}

/// A pool's timeline lane (see [`Dataset::pools`]).
#[derive(Debug, Clone)]
pub struct PoolLane {
    pub name: String,
    pub capacity: u64,
    /// Highest resident bytes over the run.
    pub peak: u64,
    /// Resident bytes / capacity, max per column at any zoom.
    pub fill: crate::analysis::timeline::SeriesIndex,
}

/// Pool lanes for a trace with two or more pools (built once at load).
fn pool_lanes(tr: &Trace, end_ns: u64) -> Vec<PoolLane> {
    if tr.pools.len() < 2 {
        return Vec::new();
    }
    tr.pools
        .iter()
        .map(|p| {
            let series = crate::analysis::residency::resident_over_time(tr, &p.name);
            let cap = p.capacity_bytes.max(1) as f64;
            let samples: Vec<(u64, f64)> =
                series.iter().map(|&(t, b)| (t, b as f64 / cap)).collect();
            PoolLane {
                name: p.name.clone(),
                capacity: p.capacity_bytes,
                peak: series.iter().map(|s| s.1).max().unwrap_or(0),
                fill: crate::analysis::timeline::SeriesIndex::build(&samples, end_ns),
            }
        })
        .collect()
}

/// Per-unit timeline indexes when ops carry the unit (pipe) they ran on.
fn pipe_indexes(tr: &Trace) -> Vec<(String, TimelineIndex)> {
    let mut names: Vec<&str> = Vec::new();
    for o in &tr.ops {
        match &o.unit {
            Some(u) => {
                if !names.contains(&u.as_str()) {
                    names.push(u.as_str());
                }
            }
            None => return Vec::new(),
        }
    }
    if names.len() < 2 {
        return Vec::new();
    }
    names.sort_unstable();
    names
        .into_iter()
        .map(|p| {
            let sub = Trace {
                ops: tr
                    .ops
                    .iter()
                    .filter(|o| o.unit.is_some_and(|u| u.as_str() == p))
                    // A lane reads only times; the index keeps this trace.
                    .map(|o| crate::trace::TraceOp {
                        name: Default::default(),
                        op_type: Default::default(),
                        inputs: Vec::new(),
                        outputs: Vec::new(),
                        streamed: Vec::new(),
                        ..o.owned()
                    })
                    .collect(),
                counters: Vec::new(),
                tensors: crate::trace::Tensors::new(),
                ..tr.clone_header()
            };
            (
                p.to_string(),
                TimelineIndex::build(&Arc::new(sub), &Ledger::default()),
            )
        })
        .collect()
}

/// The heavy analyses of a complete dataset.
struct Analyses {
    index: TimelineIndex,
    hotspots: Hotspots,
    trips: Trips,
    class: Classification,
    bus: Option<SeriesIndex>,
    placements: Placements,
    shades: Vec<u8>,
    occupancy: Vec<OccupancyIndex>,
    pipes: Vec<(String, TimelineIndex)>,
    pools: Vec<PoolLane>,
}

/// The timeline index, hotspots, round trips, classification with causes
/// and memory map of `trace` (the independent ones on both cores).
fn analyses(trace: &Arc<Trace>, ledger: &Ledger, capacity: u64) -> Analyses {
    let (index, (hotspots, trips, class, placements)) = std::thread::scope(|s| {
        let other = s.spawn(move || {
            (
                Hotspots::of(trace, ledger),
                Trips::of(trace, ledger),
                classify_with_causes(trace, ledger),
                Placements::of(trace),
            )
        });
        let index = TimelineIndex::build(trace, ledger);
        let rest = match other.join() {
            Ok(r) => r,
            Err(p) => std::panic::resume_unwind(p),
        };
        (index, rest)
    });
    let bus = trace
        .counters
        .iter()
        .find(|c| c.name == "bus_occupancy")
        .map(|c| SeriesIndex::build(&c.samples, index.end_ns));
    // One grid per pool, from that pool's placements only.
    let occupancy: Vec<OccupancyIndex> = if trace.pools.len() > 1 {
        trace
            .pools
            .iter()
            .map(|p| {
                let mine = placements.iter().filter(|x| x.pool(trace) == p.name);
                OccupancyIndex::build(mine, index.end_ns, p.capacity_bytes)
            })
            .collect()
    } else {
        vec![OccupancyIndex::build(
            placements.iter(),
            index.end_ns,
            capacity,
        )]
    };
    let pools = pool_lanes(trace, index.end_ns);
    let shades = crate::analysis::memmap::shades(&placements, trace.tensors.len());
    Analyses {
        pipes: pipe_indexes(trace),
        index,
        hotspots,
        trips,
        class,
        bus,
        placements,
        shades,
        occupancy,
        pools,
    }
}

/// How much of a dataset to compute: what the first frame needs, or every
/// analysis the views use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Depth {
    Quick,
    Complete,
}

/// A quick dataset's parts that its complete one reuses
/// ([`Dataset::completion`]).
pub struct Completion {
    label: String,
    trace: Arc<Trace>,
    ledger: Arc<Ledger>,
    live_by_step: Vec<u64>,
    live_is_resident: bool,
    warnings: Vec<String>,
    levels: (u32, u32),
}

impl Completion {
    /// The complete dataset: every analysis the views use.
    pub fn complete(self) -> Dataset {
        let reuse = (self.ledger, self.live_by_step, self.live_is_resident);
        Dataset::new(self.label, self.trace, Some(reuse), None, Depth::Complete)
            .with_warnings(self.warnings)
            .with_levels(self.levels.0, self.levels.1)
    }
}

impl Dataset {
    pub fn build(label: impl Into<String>, trace: Trace) -> Dataset {
        Self::complete(label, Arc::new(trace))
    }

    /// What the first frame needs, fast: summary, classification and the
    /// live-bytes profile. The rest is empty until [`Dataset::completed`].
    pub fn quick(label: impl Into<String>, trace: Arc<Trace>) -> Dataset {
        Self::new(label.into(), trace, None, None, Depth::Quick)
    }

    /// [`Dataset::quick`] with the ledger and classification kept beside
    /// a cached trace instead of computed again (they are of `trace` as
    /// read: [`super::kept`]).
    pub(crate) fn quick_from(
        label: impl Into<String>,
        trace: Arc<Trace>,
        kept: super::kept::QuickParts,
    ) -> Dataset {
        Self::new(label.into(), trace, None, Some(kept), Depth::Quick)
    }

    /// What of this quick dataset is worth keeping beside its trace.
    pub(crate) fn quick_parts(&self) -> super::kept::QuickParts {
        super::kept::QuickParts {
            ledger: self.ledger.clone(),
            class: self.class.clone(),
        }
    }

    /// Every analysis the views use, computed once.
    pub fn complete(label: impl Into<String>, trace: Arc<Trace>) -> Dataset {
        Self::new(label.into(), trace, None, None, Depth::Complete)
    }

    /// The complete dataset of one opened with [`Dataset::quick`], reusing
    /// what that computed (the ledger and the step profile) and keeping
    /// its label, warnings and levels.
    pub fn completed(&self) -> Dataset {
        self.completion().complete()
    }

    /// What [`Dataset::completed`] reuses, apart from the dataset: a job
    /// that posts its quick dataset keeps only this (the quick one's
    /// classification, a large trace's 13 MB, goes with the post).
    pub fn completion(&self) -> Completion {
        Completion {
            label: self.label.clone(),
            trace: self.trace.clone(),
            ledger: self.ledger.clone(),
            live_by_step: self.live_by_step.clone(),
            live_is_resident: self.live_is_resident,
            warnings: self.warnings.clone(),
            levels: (self.level, self.levels),
        }
    }

    /// [`Dataset::completed`] from its parts (kept for callers that hold
    /// them apart).
    pub fn complete_after(
        label: impl Into<String>,
        trace: Arc<Trace>,
        quick: Option<(Arc<Ledger>, Vec<u64>, bool)>,
    ) -> Dataset {
        Self::new(label.into(), trace, quick, None, Depth::Complete)
    }

    /// The one builder: every field from `trace`, the heavy analyses only
    /// at [`Depth::Complete`]; `reuse` is a quick dataset's ledger and step
    /// profile, `kept` the ledger and classification kept with a cached
    /// trace.
    fn new(
        label: String,
        trace: Arc<Trace>,
        reuse: Option<(Arc<Ledger>, Vec<u64>, bool)>,
        kept: Option<super::kept::QuickParts>,
        depth: Depth,
    ) -> Dataset {
        let (ledger, profile) = match reuse {
            Some((l, live, resident)) => (Some(l), Some((live, resident))),
            None => (None, None),
        };
        let (ledger, kept_class) = match kept {
            Some(k) => (Some(k.ledger), Some(k.class)),
            None => (ledger, None),
        };
        let quick = depth == Depth::Quick;
        // The ledger (and, for the first frame, the classification it
        // feeds) on one core, the step profile and the time axis's end on
        // the other.
        let ((ledger, class), ((live_by_step, live_is_resident), end)) = rayon::join(
            || {
                let l = ledger.unwrap_or_else(|| Arc::new(Ledger::of(&trace)));
                let class = quick.then(|| kept_class.unwrap_or_else(|| classify(&trace, &l)));
                (l, class)
            },
            || {
                let profile = profile.unwrap_or_else(|| live_by_step(&trace));
                (profile, quick.then(|| trace_end(&trace)))
            },
        );
        let capacity = trace.pools.first().map(|p| p.capacity_bytes).unwrap_or(0);
        let heavy = (!quick).then(|| analyses(&trace, &ledger, capacity));
        let end_ns = heavy.as_ref().map_or_else(
            || end.unwrap_or_else(|| trace_end(&trace)),
            |h| h.index.end_ns,
        );
        let h = heavy.unwrap_or_else(|| Analyses {
            index: TimelineIndex::build_empty(end_ns),
            hotspots: Hotspots::default(),
            trips: Trips::default(),
            class: class.unwrap_or_else(|| classify(&trace, &ledger)),
            bus: None,
            placements: Placements::default(),
            shades: Vec::new(),
            occupancy: vec![OccupancyIndex::build(std::iter::empty(), end_ns, capacity)],
            pipes: Vec::new(),
            pools: Vec::new(),
        });
        Dataset {
            label,
            built_at: std::time::SystemTime::now(),
            complete: depth == Depth::Complete,
            end_ns,
            hotspots_by_name: h.hotspots.by_name_if_repeated(),
            hotspots: h.hotspots,
            trips: h.trips,
            class: h.class,
            index: h.index,
            bus: h.bus,
            placements: h.placements,
            shades: h.shades,
            occupancy: h.occupancy,
            live_max: crate::analysis::range_max::RangeMax::build(&live_by_step),
            live_by_step,
            live_is_resident,
            capacity,
            live_pools_capacity: crate::analysis::runs::live_pools_capacity(&trace),
            caps: crate::trace::caps::Capabilities::of(&trace),
            measured: measured_of(&trace),
            level: 1,
            levels: 1,
            pipes: h.pipes,
            pools: h.pools,
            clock: trace.meta.clock(),
            warnings: Vec::new(),
            trace,
            ledger,
        }
    }

    /// The reader's warnings for this trace.
    pub fn with_warnings(mut self, warnings: Vec<String>) -> Dataset {
        self.warnings = warnings;
        self
    }

    /// Records the level of nested calls shown (1 = top) and how many the
    /// trace has.
    pub fn with_levels(mut self, level: u32, levels: u32) -> Dataset {
        self.level = level;
        self.levels = levels;
        self
    }

    pub fn end_ns(&self) -> u64 {
        self.end_ns
    }

    /// Where the trace's time begins on screen: 0, or for a window of a
    /// longer stream the window's start (nothing before it is held).
    pub fn start_ns(&self) -> u64 {
        self.trace
            .window()
            .filter(|w| w.is_trimmed())
            .map_or(0, |w| w.from_ns.min(self.end_ns))
    }

    /// The op running at `t` (the first by index where several are), as
    /// the timeline's cursor line names it: from the timeline index once it
    /// is built, else (the quick dataset) from the op columns.
    pub fn op_at(&self, t: u64) -> Option<usize> {
        if self.index.is_built() {
            return self.index.op_at(t);
        }
        let ops = &self.trace.ops;
        let (start, end) = (ops.start_col(), ops.end_col());
        (0..ops.len()).find(|&i| crate::analysis::timeline::runs_at(start[i], end[i], t))
    }

    /// Round trips of a tensor, if it has any.
    pub fn trips_of(&self, tensor: usize) -> Option<TensorTrips> {
        self.trips.of_tensor(&self.trace, tensor)
    }

    /// Placements overlapping `[t0, t1)`.
    pub fn placements_in(&self, t0: u64, t1: u64) -> impl Iterator<Item = Placement> + '_ {
        self.placements.overlapping(t0, t1)
    }
}

/// The compare pair's diff, computed once when both sides are loaded.
pub fn compare(a: &Dataset, b: &Dataset) -> TraceDiff {
    diff_with(&a.trace, &a.ledger, &b.trace, &b.ledger)
}
