//! The per-run summary (`sim --format json` contract) and its renderings as
//! a text table, markdown and JSON, from one function each so the CLI, the
//! explorer and reports print the same numbers.

use crate::trace::Trace;
use crate::units::{fmt_bytes, fmt_ms};
use serde::{Deserialize, Serialize};

/// One row of `runs` in `sim --format json`. The first twelve fields are the
/// contract; the rest are extensions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRow {
    pub policy: String,
    pub capacity_bytes: u64,
    pub latency_ns: u64,
    pub spill_count: u64,
    pub spilled_bytes: u64,
    pub reloaded_bytes: u64,
    pub traffic_bytes: u64,
    pub stall_ns: u64,
    pub peak_live_bytes: u64,
    pub peak_resident_bytes: u64,
    pub lower_bound_traffic_bytes: u64,
    pub throughput_fps: f64,
    /// Extension: traffic above the lower bound, bytes.
    pub gap_to_bound_bytes: u64,
    pub weight_traffic_bytes: u64,
    pub streamed_bytes: u64,
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
}

/// The whole `sim --format json` document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunsReport {
    pub model: String,
    pub runs: Vec<RunRow>,
    /// Extension: the exact minimum traffic (ILP) at this capacity, for
    /// graphs small enough to solve.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub optimum: Option<crate::analysis::optimum::Optimum>,
}

/// One line that puts the exact optimum beside the policies.
pub fn optimum_line(rep: &RunsReport) -> Option<String> {
    let o = rep.optimum.as_ref()?;
    let worst_gap = |best: u64| -> String {
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
    Some(match (o.exact_bytes, o.lp_bound_bytes) {
        (Some(e), lp) => format!(
            "exact minimum traffic (ILP, fragmentation and weights relaxed): {}{} in {} ms; above it: {}",
            fmt_bytes(e),
            lp.map(|b| format!(" (LP bound {})", fmt_bytes(b)))
                .unwrap_or_default(),
            o.solve_ms,
            worst_gap(e)
        ),
        (None, Some(b)) => format!(
            "LP lower bound on traffic: {} ({}); above it: {}",
            fmt_bytes(b),
            o.note.clone().unwrap_or_default(),
            worst_gap(b)
        ),
        (None, None) => format!(
            "exact minimum traffic: not computed ({})",
            o.note.clone().unwrap_or_default()
        ),
    })
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
            traffic_bytes: s.traffic_bytes,
            stall_ns: s.stall_ns,
            peak_live_bytes: s.peak_live_bytes,
            peak_resident_bytes: s.peak_resident_bytes,
            lower_bound_traffic_bytes: s.lower_bound_traffic_bytes,
            throughput_fps: s.throughput_fps,
            gap_to_bound_bytes: s.traffic_bytes.saturating_sub(s.lower_bound_traffic_bytes),
            weight_traffic_bytes: s.weight_traffic_bytes,
            streamed_bytes: s.streamed_bytes,
            energy_uj: s.energy_uj,
            read_bandwidth: hw.map(|h| h.dram.read_bandwidth.0).unwrap_or(0.0),
            write_bandwidth: hw.map(|h| h.dram.write_bandwidth.0).unwrap_or(0.0),
            fuse: cfg.is_some_and(|c| c.fuse),
            dtype: cfg.map(|c| c.dtype).unwrap_or_default(),
            order: cfg.map(|c| c.order.clone()),
            recompute: cfg.map(|c| c.recompute.clone()),
            recompute_saved_bytes: s.recompute_saved_bytes,
        }
    }
}

const HEADERS: [&str; 10] = [
    "policy",
    "latency",
    "spills",
    "spilled",
    "reloaded",
    "stall",
    "fps",
    "peak live / cap",
    "lower bound",
    "gap",
];

fn cells(r: &RunRow) -> [String; 10] {
    let ratio = if r.capacity_bytes > 0 {
        format!(
            "{} / {} ({:.0}%)",
            fmt_bytes(r.peak_live_bytes),
            fmt_bytes(r.capacity_bytes),
            r.peak_live_bytes as f64 * 100.0 / r.capacity_bytes as f64
        )
    } else {
        fmt_bytes(r.peak_live_bytes)
    };
    [
        r.policy.clone(),
        fmt_ms(r.latency_ns),
        r.spill_count.to_string(),
        fmt_bytes(r.spilled_bytes),
        fmt_bytes(r.reloaded_bytes),
        fmt_ms(r.stall_ns),
        format!("{:.1}", r.throughput_fps),
        ratio,
        fmt_bytes(r.lower_bound_traffic_bytes),
        if r.policy == "ideal" {
            "-".into()
        } else {
            fmt_bytes(r.gap_to_bound_bytes)
        },
    ]
}

/// A plain aligned table for terminals and logs.
pub fn render_table(rep: &RunsReport) -> String {
    let rows: Vec<[String; 10]> = rep.runs.iter().map(cells).collect();
    let mut width = HEADERS.map(|h| h.chars().count());
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
    out += &line(&HEADERS.map(String::from));
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
    if let Some(l) = optimum_line(rep) {
        out += &l;
        out.push('\n');
    }
    out
}

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
    if let Some(l) = optimum_line(rep) {
        out += &format!("\n{l}\n");
    }
    out
}

pub fn render_json(rep: &RunsReport) -> String {
    serde_json::to_string_pretty(rep).unwrap_or_default()
}
