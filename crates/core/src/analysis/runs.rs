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
    pub spill_count: u64,
    pub spilled_bytes: u64,
    pub reloaded_bytes: u64,
    #[serde(default)]
    pub streamed_in_bytes: u64,
    #[serde(default)]
    pub streamed_out_bytes: u64,
    pub traffic_bytes: u64,
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
}

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

/// `(traffic - bound) / bound`, when there is a bound above 0.
pub fn gap_ratio(traffic: u64, bound: u64, method: BoundMethod) -> Option<f64> {
    (method != BoundMethod::None && bound > 0)
        .then(|| traffic.saturating_sub(bound) as f64 / bound as f64)
}

/// A run's gap to its bound, as every table and view prints it:
/// `4.6 MiB (+30%)`; `0 B (optimal)` when the bound is a proven minimum
/// the run reaches; `-` without a bound.
pub fn gap_text(traffic: u64, bound: u64, method: BoundMethod) -> String {
    let gap = traffic.saturating_sub(bound);
    match (method, gap_ratio(traffic, bound, method)) {
        (BoundMethod::None, _) => "-".into(),
        (BoundMethod::Ilp, _) if gap == 0 => format!("{} (optimal)", fmt_bytes(0)),
        (_, Some(r)) => format!("{} (+{:.0}%)", fmt_bytes(gap), r * 100.0),
        (_, None) => fmt_bytes(gap),
    }
}

/// The bound with the run's excess over it: `27.6 MiB per-op (run +42.8
/// MiB (+155%))`; an ILP bound is a proven minimum and says so.
pub fn bound_text(r: &RunRow) -> String {
    if r.lower_bound_method == BoundMethod::None {
        return "not computed".into();
    }
    format!(
        "{} {}{} (run +{})",
        fmt_bytes(r.lower_bound_traffic_bytes),
        r.lower_bound_method.as_str(),
        if r.lower_bound_method == BoundMethod::Ilp {
            ", proven minimum"
        } else {
            ""
        },
        gap_text(
            r.traffic_bytes,
            r.lower_bound_traffic_bytes,
            r.lower_bound_method
        )
    )
}

/// One line under a table of runs: what the exact program found. The
/// runs' bound column already shows it; this says how sure it is.
pub fn optimum_line(rep: &RunsReport) -> Option<String> {
    let o = rep.optimum.as_ref()?;
    let excess = |best: u64| -> String {
        rep.runs
            .iter()
            .filter(|r| r.policy != "ideal")
            .map(|r| {
                format!(
                    "{} +{}",
                    r.policy,
                    fmt_bytes(r.traffic_bytes.saturating_sub(best))
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut line = match (o.exact_bytes, o.window_bound_bytes, o.lp_bound_bytes) {
        (Some(e), _, _) => format!(
            "minimum traffic at this capacity (ILP, proven in {} ms{}; fragmentation and weights relaxed): {}; each policy's excess: {}",
            o.solve_ms,
            if o.windows > 1 {
                format!(", {} windows", o.windows)
            } else {
                String::new()
            },
            fmt_bytes(e),
            excess(e)
        ),
        (None, Some(w), _) => format!(
            "lower bound from the exact program over windows of the schedule: {} ({}); each policy above it: {}",
            fmt_bytes(w),
            o.note.clone().unwrap_or_default(),
            excess(w)
        ),
        (None, None, Some(b)) => format!(
            "lower bound from the LP relaxation: {} ({}); each policy above it: {}",
            fmt_bytes(b),
            o.note.clone().unwrap_or_default(),
            excess(b)
        ),
        (None, None, None) => format!(
            "exact program: not solved ({})",
            o.note.clone().unwrap_or_default()
        ),
    };
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
/// pools; `None` for one, whose capacity is the run's own. O(tensors).
pub fn live_pools_capacity(tr: &Trace) -> Option<u64> {
    if tr.pools.len() < 2 {
        return None;
    }
    let holding: std::collections::HashSet<&str> = tr
        .tensors
        .iter()
        .filter(|t| t.kind != TensorKind::Weight)
        .map(|t| t.pool.as_str())
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
        let sim = tr.meta.producer.simulation();
        let (hw, cfg) = (sim.map(|s| s.0), sim.map(|s| s.1));
        RunRow {
            policy: tr.meta.policy.clone(),
            capacity_bytes: s.capacity_bytes,
            latency_ns: s.latency_ns,
            spill_count: s.spill_count,
            spilled_bytes: s.spilled_bytes,
            reloaded_bytes: s.reloaded_bytes,
            streamed_in_bytes: s.streamed_in_bytes,
            streamed_out_bytes: s.streamed_out_bytes,
            traffic_bytes: s.traffic_bytes,
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
        }
    }

    /// Raises the run's bound to what the exact program found, if tighter
    /// (a proven minimum says so in the method).
    pub fn tighten_bound(&mut self, o: &crate::analysis::optimum::Optimum) {
        if self.policy == "ideal" {
            return;
        }
        let (bound, method) = o.tightest(self.lower_bound_traffic_bytes, self.lower_bound_method);
        self.lower_bound_traffic_bytes = bound;
        self.lower_bound_method = method;
        self.gap_to_bound_bytes = self.traffic_bytes.saturating_sub(bound);
        self.gap_ratio = gap_ratio(self.traffic_bytes, bound, method);
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

const HEADERS: [&str; 13] = [
    "policy",
    "capacity",
    "latency",
    "evictions",
    "evicted out",
    "reloaded",
    "streamed",
    "traffic",
    "stall",
    "fps",
    "peak live",
    "bound",
    "gap",
];

fn cells(r: &RunRow) -> [String; 13] {
    [
        r.policy.clone(),
        fmt_bytes(r.capacity_bytes),
        fmt_ms(r.latency_ns),
        r.spill_count.to_string(),
        fmt_bytes(r.spilled_bytes),
        fmt_bytes(r.reloaded_bytes),
        fmt_bytes(r.streamed_in_bytes + r.streamed_out_bytes),
        fmt_bytes(r.traffic_bytes),
        fmt_ms(r.stall_ns),
        format!("{:.1}", r.throughput_fps),
        match r.live_pools_capacity_bytes {
            // Peak live counts the tensors of several pools: its share of them.
            Some(all) if all > 0 => format!(
                "{} ({:.0}% of {})",
                fmt_bytes(r.peak_live_bytes),
                r.peak_live_bytes as f64 * 100.0 / all as f64,
                fmt_bytes(all)
            ),
            _ if r.capacity_bytes > 0 => format!(
                "{} ({:.0}%)",
                fmt_bytes(r.peak_live_bytes),
                r.peak_live_bytes as f64 * 100.0 / r.capacity_bytes as f64
            ),
            _ => fmt_bytes(r.peak_live_bytes),
        },
        match r.lower_bound_method {
            BoundMethod::None => "-".into(),
            m => format!("{} {}", fmt_bytes(r.lower_bound_traffic_bytes), m.as_str()),
        },
        gap_text(
            r.traffic_bytes,
            r.lower_bound_traffic_bytes,
            r.lower_bound_method,
        ),
    ]
}

/// Column order for a lead: capacity first for sweeps.
fn order(lead: Lead) -> Vec<usize> {
    match lead {
        Lead::Policy => (0..HEADERS.len()).collect(),
        Lead::Capacity => std::iter::once(1)
            .chain(std::iter::once(0))
            .chain(2..HEADERS.len())
            .collect(),
    }
}

/// A plain aligned table for terminals and logs.
pub fn render_table(rep: &RunsReport) -> String {
    render_table_led(rep, Lead::Policy)
}

/// [`render_table`] with the given leading column.
pub fn render_table_led(rep: &RunsReport, lead: Lead) -> String {
    let cols = order(lead);
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
    if let Some(l) = optimum_line(rep) {
        out += &l;
        out.push('\n');
    }
    out
}

/// What the columns mean, under every table of runs.
const LEGEND: &str = "traffic = evicted out (write-backs of evictions) + reloaded + streamed (in and out); bound: the tightest lower bound on traffic computed (per-op, lp, or ilp: a proven minimum)\n";

/// A GitHub-flavoured markdown table.
pub fn render_markdown(rep: &RunsReport) -> String {
    let mut out = format!(
        "**model:** `{}`\n\n| {} |\n|",
        rep.model,
        HEADERS.join(" | ")
    );
    for i in 0..HEADERS.len() {
        out += if i == 0 { "---|" } else { "---:|" };
    }
    out.push('\n');
    for r in &rep.runs {
        out += &format!("| {} |\n", cells(r).join(" | "));
    }
    out += &format!("\n{LEGEND}");
    if let Some(l) = optimum_line(rep) {
        out += &format!("\n{l}\n");
    }
    out
}

pub fn render_json(rep: &RunsReport) -> String {
    serde_json::to_string_pretty(rep).unwrap_or_default()
}
