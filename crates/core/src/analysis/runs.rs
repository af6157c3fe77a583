//! The per-run summary (`sim --format json` contract) and its renderings as
//! a text table, markdown and JSON, from one function each so the CLI, the
//! explorer and reports print the same numbers.

use crate::trace::{BoundMethod, TensorKind, Trace};
use crate::units::{fmt_bytes, fmt_ms};
use serde::{Deserialize, Serialize};

/// One row of `runs` in `sim --format json`. The contract's fields come
/// first (docs/trace-format.md); the rest are extensions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRow {
    pub policy: String,
    pub capacity_bytes: u64,
    pub latency_ns: u64,
    /// The ledger's traffic figures, as the trace's summary has them.
    #[serde(flatten)]
    pub traffic: crate::trace::Traffic,
    pub stall_ns: u64,
    pub peak_live_bytes: u64,
    pub peak_resident_bytes: u64,
    pub lower_bound_traffic_bytes: u64,
    #[serde(default)]
    pub lower_bound_method: BoundMethod,
    pub throughput_fps: f64,
    /// Extension: traffic above the lower bound, bytes.
    pub gap_to_bound_bytes: u64,
    /// Extension: that gap over the bound, `(traffic - bound) / bound`;
    /// `null` without a bound or with a bound of 0.
    #[serde(default)]
    pub gap_ratio: Option<f64>,
    pub weight_traffic_bytes: u64,
    #[serde(default)]
    pub input_load_bytes: u64,
    pub energy_uj: f64,
    pub read_bandwidth: f64,
    pub write_bandwidth: f64,
    /// Extension: the graph rewrites and recompute setting of the run (what
    /// a what-if sweep varied besides capacity, bandwidth and policy).
    #[serde(default)]
    pub fuse: bool,
    #[serde(default)]
    pub dtype: crate::sim::ActivationDtype,
    #[serde(default)]
    pub order: Option<crate::sim::config::OrderSpec>,
    #[serde(default)]
    pub recompute: Option<crate::sim::RecomputeSpec>,
    #[serde(default)]
    pub recompute_saved_bytes: u64,
    /// Extension: the capacity of the pools holding what
    /// `peak_live_bytes` counts (every pool with a tensor that is not a
    /// weight), when that is several pools (`capacity_bytes` is the main
    /// pool's); tables give peak live as a share of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub live_pools_capacity_bytes: Option<u64>,
    /// Extension: `refining` while a better bound is being computed,
    /// `unrefined` when the exact program did not run within its budget
    /// (`gap_ratio` is then `null`); absent when the bound is final.
    #[serde(default, skip_serializing_if = "is_final")]
    pub bound_state: BoundState,
    /// Extension: cores on the DRAM bus (written when more than one;
    /// `capacity_bytes` and the peaks are then per core, the largest).
    #[serde(default = "one_core", skip_serializing_if = "is_one_core")]
    pub cores: u32,
    /// Extension: the part of `stall_ns` spent waiting because another
    /// core held the bus (written when more than one core).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contention_ns: Option<u64>,
    /// Extension: ops each core ran (the placement of `--split graph`;
    /// every op on each core for a batch split), when more than one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ops_per_core: Vec<u64>,
    /// Extension: what crossed cores through the pool the cores share
    /// (`[cores] shared`), when the run had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared_pool: Option<SharedCrossing>,
}

/// Tensors that crossed cores in the shared pool instead of DRAM.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SharedCrossing {
    pub capacity_bytes: u64,
    pub tensors: u64,
    pub bytes: u64,
}

impl SharedCrossing {
    /// The shared pool's figures of a multi-core trace, if it has one.
    pub fn of(tr: &Trace) -> Option<SharedCrossing> {
        use crate::cost::hardware::SHARED_POOL;
        let pool = tr.pools.iter().find(|p| p.name == SHARED_POOL)?;
        let (tensors, bytes) = tr
            .tensors
            .iter()
            .filter(|t| t.pool == SHARED_POOL)
            .fold((0u64, 0u64), |(n, b), t| (n + 1, b.saturating_add(t.bytes)));
        Some(SharedCrossing {
            capacity_bytes: pool.capacity_bytes,
            tensors,
            bytes,
        })
    }
}

fn is_final(s: &BoundState) -> bool {
    s.is_final()
}

fn one_core() -> u32 {
    1
}

fn is_one_core(c: &u32) -> bool {
    *c <= 1
}

crate::holds_traffic!(RunRow);

/// The whole `sim --format json` document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunsReport {
    pub model: String,
    pub runs: Vec<RunRow>,
    /// Extension: the exact program at this capacity (its proven minimum or
    /// LP bound), for graphs small enough to solve; the runs' lower bounds
    /// already include it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub optimum: Option<crate::analysis::optimum::Optimum>,
    /// Extension: which slice of a sharded `whatif` this is
    /// (`spillscope merge` joins the slices and drops it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<crate::analysis::shard::ShardInfo>,
}

/// The label of a run's bound: `minimum traffic (ILP)` when proven, else
/// `lower bound (METHOD)`.
pub fn bound_label(r: &RunRow) -> String {
    match r.lower_bound_method {
        BoundMethod::Ilp => "minimum traffic (ILP)".into(),
        BoundMethod::None => "lower bound".into(),
        m => format!("lower bound ({})", m.as_str()),
    }
}

pub use super::figures::{gap_ratio, gap_text};
use super::figures::{BoundState, PeakLive, TrafficBound};

/// The bound with the run's excess over it: `27.6 MiB per-op (run +42.8
/// MiB (+155%))`; an ILP bound is a proven minimum and says so.
pub fn bound_text(r: &RunRow) -> String {
    let b = r.bound();
    if b.method == BoundMethod::None {
        return "not computed".into();
    }
    format!(
        "{}{} (run +{})",
        b.cell(),
        if b.method == BoundMethod::Ilp {
            ", proven minimum"
        } else {
            ""
        },
        b.gap_text(r.traffic_bytes)
    )
}

/// One line under a table of runs: where the bound the rows show comes
/// from (the exact program's result, how sure it is) and each policy's
/// excess over it, in the same figures as the rows' bound and gap columns.
pub fn optimum_line(rep: &RunsReport) -> Option<String> {
    let o = rep.optimum.as_ref()?;
    let shown: Vec<&RunRow> = rep.runs.iter().filter(|r| r.policy != "ideal").collect();
    let bound = shown.first()?.bound();
    let windows = if o.windows > 1 {
        format!(", {} windows", o.windows)
    } else {
        String::new()
    };
    let note = o.note.clone().map(|n| format!("; {n}")).unwrap_or_default();
    let cores = shown.first().map_or(1, |r| r.cores);
    let at = if cores > 1 {
        format!("over {cores} cores at this capacity each (each core's minimum x {cores})")
    } else {
        "at this capacity".to_string()
    };
    let how = match bound.method {
        BoundMethod::Ilp => format!(
            "minimum traffic {at} {} (ILP, proven in {} ms{windows}; fragmentation and weights relaxed)",
            fmt_bytes(bound.bytes),
            o.solve_ms
        ),
        BoundMethod::Windowed => format!(
            "lower bound {} windowed: the exact program over windows of the schedule ({} ms{note})",
            fmt_bytes(bound.bytes),
            o.solve_ms
        ),
        BoundMethod::Lp => format!(
            "lower bound {} lp: the exact program's LP relaxation ({} ms{windows}{note})",
            fmt_bytes(bound.bytes),
            o.solve_ms
        ),
        m => format!(
            "lower bound {} {}: the exact program found nothing tighter within its budget ({} ms{note})",
            fmt_bytes(bound.bytes),
            m.as_str(),
            o.solve_ms
        ),
    };
    let excess: Vec<String> = shown
        .iter()
        .map(|r| format!("{} +{}", r.policy, r.bound().gap_text(r.traffic_bytes)))
        .collect();
    let mut line = format!("{how}; each policy above it: {}", excess.join(", "));
    if o.cached {
        line += " (the solve came from the result cache)";
    }
    if let Some(saved) = planner_saving(&rep.runs) {
        line += &format!("; {saved}");
    }
    Some(line)
}

/// `a planner would move 3.0 MiB less than belady`: the planned run beside
/// the best of the other policies, when both ran and it moves less.
pub fn planner_saving(runs: &[RunRow]) -> Option<String> {
    let planned = runs.iter().find(|r| r.policy == "planned")?;
    let best = runs
        .iter()
        .filter(|r| !matches!(r.policy.as_str(), "planned" | "ideal"))
        .min_by_key(|r| r.traffic_bytes)?;
    let less = best.traffic_bytes.checked_sub(planned.traffic_bytes)?;
    (less > 0).then(|| {
        format!(
            "a planner would move {} less than {}",
            fmt_bytes(less),
            best.policy
        )
    })
}

/// The capacity of the pools holding what `peak_live_bytes` counts (every
/// pool with a tensor that is not a weight), when there are several such
/// pools; `None` for one, whose capacity is the run's own. With several
/// cores, one core's pools (the peak is per core). O(tensors).
pub fn live_pools_capacity(tr: &Trace) -> Option<u64> {
    let cores = tr.summary.cores.max(1) as usize;
    if tr.pools.len() < 2 * cores {
        return None;
    }
    // Core 0's own tensors (named `core0/...` on several cores; a graph
    // split's parts differ in size), not the pool the cores share.
    let holding: std::collections::HashSet<&str> = tr
        .tensors
        .iter()
        .filter(|t| cores == 1 || t.name.starts_with("core0/"))
        .filter(|t| t.kind != TensorKind::Weight)
        .filter(|t| t.pool != crate::cost::hardware::SHARED_POOL || cores == 1)
        .map(|t| t.pool)
        .collect();
    let live: Vec<u64> = tr
        .pools
        .iter()
        .filter(|p| holding.contains(p.name.as_str()))
        .map(|p| p.capacity_bytes)
        .collect();
    (live.len() > 1).then(|| live.iter().sum())
}

impl RunRow {
    pub fn from_trace(tr: &Trace) -> RunRow {
        let s = &tr.summary;
        let sim = crate::sim::settings::settings(&tr.meta.producer);
        let (hw, cfg) = (sim.as_ref().map(|s| &s.0), sim.as_ref().map(|s| &s.1));
        RunRow {
            policy: tr.meta.policy.clone(),
            capacity_bytes: s.capacity_bytes,
            latency_ns: s.latency_ns,
            traffic: s.traffic,
            stall_ns: s.stall_ns,
            peak_live_bytes: s.peak_live_bytes,
            peak_resident_bytes: s.peak_resident_bytes,
            lower_bound_traffic_bytes: s.lower_bound_traffic_bytes,
            lower_bound_method: s.lower_bound_method,
            throughput_fps: s.throughput_fps,
            gap_to_bound_bytes: s.traffic_bytes.saturating_sub(s.lower_bound_traffic_bytes),
            gap_ratio: gap_ratio(
                s.traffic_bytes,
                s.lower_bound_traffic_bytes,
                s.lower_bound_method,
            ),
            weight_traffic_bytes: s.weight_traffic_bytes,
            input_load_bytes: s.input_load_bytes,
            energy_uj: s.energy_uj,
            read_bandwidth: hw.map(|h| h.dram.read_bandwidth.0).unwrap_or(0.0),
            write_bandwidth: hw.map(|h| h.dram.write_bandwidth.0).unwrap_or(0.0),
            fuse: cfg.is_some_and(|c| c.fuse),
            dtype: cfg.map(|c| c.dtype).unwrap_or_default(),
            order: cfg.map(|c| c.order.clone()),
            recompute: cfg.map(|c| c.recompute.clone()),
            recompute_saved_bytes: s.recompute_saved_bytes,
            live_pools_capacity_bytes: live_pools_capacity(tr),
            bound_state: BoundState::Final,
            cores: s.cores.max(1),
            contention_ns: (s.cores > 1).then_some(s.contention_ns),
            ops_per_core: ops_per_core(tr),
            shared_pool: (s.cores > 1).then(|| SharedCrossing::of(tr)).flatten(),
        }
    }

    /// The run's bound as a figure.
    pub fn bound(&self) -> TrafficBound {
        TrafficBound {
            bytes: self.lower_bound_traffic_bytes,
            method: self.lower_bound_method,
            state: self.bound_state,
        }
    }

    /// The row with `b` as its bound (gap fields follow).
    pub fn with_bound(mut self, b: TrafficBound) -> RunRow {
        self.lower_bound_traffic_bytes = b.bytes;
        self.lower_bound_method = b.method;
        self.bound_state = b.state;
        self.gap_to_bound_bytes = b.gap_bytes(self.traffic_bytes);
        self.gap_ratio = b.gap_ratio(self.traffic_bytes);
        self
    }

    /// Raises the run's bound to what the exact program found, if tighter
    /// (a proven minimum says so in the method).
    pub fn tighten_bound(&mut self, o: &crate::analysis::optimum::Optimum) {
        if self.policy == "ideal" {
            return;
        }
        *self = self.clone().with_bound(self.bound().refined(o));
    }
}

/// What the columns of a table of runs lead with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lead {
    /// `sim`: one row per policy.
    Policy,
    /// `whatif`: capacity first, then policy.
    Capacity,
}

const HEADERS: [&str; 15] = [
    "policy",
    "capacity",
    "latency",
    "evictions",
    "evicted out",
    "reloaded",
    "streamed",
    "traffic",
    "stall",
    "contention",
    "fps",
    "peak live",
    "bound",
    "gap",
    "cores",
];

/// The contention column, shown only when some run had several cores.
const CONTENTION: usize = 9;
/// The cores column, shown only when the runs differ in core count
/// (`whatif --cores`), after the capacity.
const CORES: usize = 14;

fn cells(r: &RunRow) -> [String; 15] {
    [
        r.policy.clone(),
        crate::units::fmt_bytes_precise(r.capacity_bytes),
        fmt_ms(r.latency_ns),
        r.spill_count.to_string(),
        fmt_bytes(r.spilled_bytes),
        fmt_bytes(r.reloaded_bytes),
        fmt_bytes(r.streamed_in_bytes + r.streamed_out_bytes),
        fmt_bytes(r.traffic_bytes),
        fmt_ms(r.stall_ns),
        r.contention_ns.map_or_else(|| "-".into(), fmt_ms),
        format!("{:.1}", r.throughput_fps),
        PeakLive::of_run(
            r.peak_live_bytes,
            r.capacity_bytes,
            r.live_pools_capacity_bytes,
        )
        .cell(),
        r.bound().cell(),
        r.bound().gap_text(r.traffic_bytes),
        r.cores.to_string(),
    ]
}

/// Whether the runs differ in core count.
fn cores_vary(rep: &RunsReport) -> bool {
    rep.runs.windows(2).any(|w| w[0].cores != w[1].cores)
}

/// Column order for a lead: capacity first for sweeps; the contention
/// column only where some run had several cores.
fn order(lead: Lead, rep: &RunsReport) -> Vec<usize> {
    let multi = rep.runs.iter().any(|r| r.cores > 1);
    let cores = cores_vary(rep).then_some(CORES);
    let cols: Vec<usize> = match lead {
        Lead::Policy => [0, 1].into_iter().chain(cores).chain(2..CORES).collect(),
        Lead::Capacity => [1]
            .into_iter()
            .chain(cores)
            .chain([0])
            .chain(2..CORES)
            .collect(),
    };
    cols.into_iter()
        .filter(|&i| multi || i != CONTENTION)
        .collect()
}

/// A plain aligned table for terminals and logs.
pub fn render_table(rep: &RunsReport) -> String {
    render_table_led(rep, Lead::Policy)
}

/// [`render_table`] with the given leading column.
pub fn render_table_led(rep: &RunsReport, lead: Lead) -> String {
    let cols = order(lead, rep);
    let rows: Vec<Vec<String>> = rep
        .runs
        .iter()
        .map(|r| {
            let c = cells(r);
            cols.iter().map(|&i| c[i].clone()).collect()
        })
        .collect();
    let heads: Vec<String> = cols.iter().map(|&i| HEADERS[i].to_string()).collect();
    let mut width: Vec<usize> = heads.iter().map(|h| h.chars().count()).collect();
    for r in &rows {
        for (i, c) in r.iter().enumerate() {
            width[i] = width[i].max(c.chars().count());
        }
    }
    let mut out = format!("model: {}\n", rep.model);
    let line = |cols: &[String]| -> String {
        cols.iter()
            .enumerate()
            .map(|(i, c)| {
                if i == 0 {
                    format!("{c:<w$}", w = width[i])
                } else {
                    format!("{c:>w$}", w = width[i])
                }
            })
            .collect::<Vec<_>>()
            .join("  ")
    };
    out += &line(&heads);
    out.push('\n');
    out += &width
        .iter()
        .map(|&w| "-".repeat(w))
        .collect::<Vec<_>>()
        .join("  ");
    out.push('\n');
    for r in &rows {
        out += &line(r);
        out.push('\n');
    }
    out += LEGEND;
    if rep.runs.iter().any(|r| r.cores > 1) {
        out += CORES_LEGEND;
        out += &placement_line(rep).unwrap_or_default();
    }
    if let Some(l) = optimum_line(rep) {
        out += &l;
        out.push('\n');
    }
    out
}

/// What the columns mean, under every table of runs.
const LEGEND: &str = "traffic = evicted out (write-backs of evictions) + reloaded + streamed (in and out); bound: the tightest lower bound on traffic computed (per-op, lp, or ilp: a proven minimum)\n";

/// Ops per core of a multi-core run (its ops' units `core{c}`); empty for
/// one core.
fn ops_per_core(tr: &Trace) -> Vec<u64> {
    let cores = tr.summary.cores;
    if cores < 2 {
        return Vec::new();
    }
    let mut n = vec![0u64; cores as usize];
    for o in &tr.ops {
        if let Some(c) = super::cores::core_of(o).filter(|&c| c < cores) {
            n[c as usize] += 1;
        }
    }
    n
}

/// Under a table of multi-core runs: how the ops were spread, per run
/// when the runs differ.
fn placement_line(rep: &RunsReport) -> Option<String> {
    let multi: Vec<&RunRow> = rep.runs.iter().filter(|r| r.cores > 1).collect();
    let first = multi.first()?;
    let list = |r: &RunRow| {
        r.ops_per_core
            .iter()
            .map(|n| n.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let crossings: Vec<(&RunRow, SharedCrossing)> = multi
        .iter()
        .filter_map(|r| r.shared_pool.map(|s| (*r, s)))
        .collect();
    let same = crossings.windows(2).all(|w| w[0].1 == w[1].1);
    let shared = crossings
        .iter()
        .take(if same { 1 } else { crossings.len() })
        .map(|(r, s)| {
            format!(
                "{}{} ({}) crossed cores through the {} shared pool, not DRAM",
                if same {
                    String::new()
                } else {
                    format!("{}: ", r.policy)
                },
                crate::units::count(s.tensors, "tensor"),
                fmt_bytes(s.bytes),
                fmt_bytes(s.capacity_bytes)
            )
        })
        .collect::<Vec<_>>();
    let shared = if shared.is_empty() {
        String::new()
    } else {
        format!("{}\n", shared.join("; "))
    };
    Some(placement_counts(rep, &multi, first, list)? + &shared)
}

/// The "ops per core" line of [`placement_line`].
fn placement_counts(
    rep: &RunsReport,
    multi: &[&RunRow],
    first: &RunRow,
    list: impl Fn(&RunRow) -> String,
) -> Option<String> {
    if multi.iter().all(|r| r.ops_per_core == first.ops_per_core) {
        Some(format!("ops per core: {}\n", list(first)))
    } else {
        let vary = cores_vary(rep);
        let mut each: Vec<String> = Vec::new();
        for r in multi {
            let label = if vary {
                format!("{} on {} cores", r.policy, r.cores)
            } else {
                r.policy.clone()
            };
            let item = format!("{label} {}", list(r));
            if !each.contains(&item) {
                each.push(item);
            }
        }
        Some(format!("ops per core: {}\n", each.join("; ")))
    }
}

/// What the figures of a multi-core run mean, under its table.
const CORES_LEGEND: &str = "cores share one DRAM bus: capacity and peak live are per core; traffic, stall and bound add up the cores; contention = the part of the stall spent waiting because another core held the bus\n";

/// A GitHub-flavoured markdown table.
pub fn render_markdown(rep: &RunsReport) -> String {
    let cols = order(Lead::Policy, rep);
    let heads: Vec<&str> = cols.iter().map(|&i| HEADERS[i]).collect();
    let mut out = format!("**model:** `{}`\n\n| {} |\n|", rep.model, heads.join(" | "));
    for i in 0..cols.len() {
        out += if i == 0 { "---|" } else { "---:|" };
    }
    out.push('\n');
    for r in &rep.runs {
        let c = cells(r);
        let row: Vec<&str> = cols.iter().map(|&i| c[i].as_str()).collect();
        out += &format!("| {} |\n", row.join(" | "));
    }
    out += &format!("\n{LEGEND}");
    if rep.runs.iter().any(|r| r.cores > 1) {
        out += CORES_LEGEND;
        out += &placement_line(rep).unwrap_or_default();
    }
    if let Some(l) = optimum_line(rep) {
        out += &format!("\n{l}\n");
    }
    out
}

pub fn render_json(rep: &RunsReport) -> String {
    serde_json::to_string_pretty(rep).unwrap_or_default()
}
