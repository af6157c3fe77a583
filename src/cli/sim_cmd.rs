//! `spillscope sim`: one simulation per policy, summary on stdout, traces to files.

use super::args::{Format, SimArgs};
use crate::analysis::runs::{render_json, render_markdown, render_table, RunRow, RunsReport};
use crate::sim::{simulate, EvictionPolicy};
use crate::trace::Trace;
use crate::Result;
use std::path::{Path, PathBuf};

/// Where the trace of `policy` goes when several policies share one `-o`.
pub fn output_path_for(base: &Path, policy: EvictionPolicy, several: bool) -> PathBuf {
    if !several {
        return base.to_path_buf();
    }
    let stem = base
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let ext = base
        .extension()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "json".into());
    base.with_file_name(format!("{stem}.{}.{ext}", policy.as_str()))
}

pub use crate::output::write_atomic;

/// Renders a runs report in the chosen format.
pub fn render(rep: &RunsReport, format: Format) -> String {
    match format {
        Format::Table => render_table(rep),
        Format::Json => render_json(rep) + "\n",
        Format::Markdown => render_markdown(rep),
    }
}

/// What resolving the spec read besides the model: the calibration table
/// and the free points, as lines under the summary.
pub fn resolve_notes(r: &crate::run::Resolved, ops: usize) -> String {
    let mut notes = String::new();
    if let Some(c) = &r.calibration {
        notes += &format!(
            "\ncalibration from {}: {} of {ops} ops measured; roofline vs measured per op type:\n",
            c.profile.display(),
            c.matched_ops
        );
        notes += &format!(
            "{:<24} {:>5} {:>14} {:>14} {:>9}\n",
            "op type", "ops", "roofline", "measured", "ratio"
        );
        for t in &c.by_type {
            notes += &format!(
                "{:<24} {:>5} {:>14} {:>14} {:>8.2}x\n",
                t.op_type,
                t.ops,
                crate::units::fmt_ms(t.roofline_ns),
                crate::units::fmt_ms(t.measured_ns),
                t.ratio
            );
        }
    }
    if let Some((p, n)) = &r.free_at_from {
        notes += &format!(
            "\nfree points from {}: {}\n",
            p.display(),
            crate::units::count(*n as u64, "tensor")
        );
    }
    notes
}

pub fn run(a: &SimArgs) -> Result<String> {
    let spec = a
        .schedule
        .spec(&a.model, &a.hw, &a.model_opts, &EvictionPolicy::ALL)?;
    let (g, r) = spec.resolve()?;
    let policies = r.policies.clone();
    let several = policies.len() > 1;
    if let Some(out) = &a.output {
        for &p in &policies {
            crate::output::check_writable(&output_path_for(out, p, several), a.force)?;
        }
    }
    let notes = resolve_notes(&r, g.ops.len());
    // The bound at this capacity (the exact program, windowed on long
    // schedules), of the same (rewritten) graph the runs simulate, and the
    // plan the planned policy follows.
    let optimum = if a.ilp_time > 0.0 && policies.iter().any(|&p| p != EvictionPolicy::Ideal) {
        let prepared = crate::sim::prepare_graph(&g, &r.config)?;
        let limits = crate::analysis::optimum::OptimumLimits {
            time_limit_s: a.ilp_time,
            // The plan is solved whether or not the planned policy runs,
            // so the bound (which shares the time budget) is the same as
            // the explorer's and the report's.
            ..Default::default()
        };
        Some(crate::analysis::optimum::optimal_traffic(
            &prepared,
            crate::analysis::optimum::PoolSize::of(&r.hardware),
            limits,
        ))
    } else {
        None
    };
    // The planned policy follows that same solve (solved in the run when
    // there is none).
    let plan = optimum.as_ref().and_then(|o| o.plan.clone());
    let mut traces: Vec<Trace> = policies
        .iter()
        .map(|&p| {
            let mut cfg = r.config_for(p);
            if p == EvictionPolicy::Planned {
                cfg.plan = plan.clone();
            }
            simulate(&g, &r.hardware, &cfg)
        })
        .collect::<Result<_>>()?;
    // One bound per run, everywhere: the tightest found, in the traces too.
    if let Some(o) = &optimum {
        for tr in &mut traces {
            o.tighten(&mut tr.summary);
        }
    }
    if let Some(out) = &a.output {
        let to_stdout = out.as_os_str() == "-";
        if to_stdout && several {
            return Err(crate::Error::Config(
                "-o - writes one trace to standard output: choose one --policy".into(),
            ));
        }
        for (tr, &p) in traces.iter().zip(&policies) {
            write_atomic(&output_path_for(out, p, several), tr.to_json(), a.force)?;
        }
        // The trace is the output: no table after it.
        if to_stdout {
            return Ok(String::new());
        }
    }
    let rep = RunsReport {
        model: g.name.clone(),
        runs: traces.iter().map(RunRow::from_trace).collect(),
        optimum,
    };
    if a.format == Format::Json {
        if !notes.is_empty() {
            eprint!("{notes}");
        }
        return Ok(render(&rep, a.format));
    }
    Ok(render(&rep, a.format) + &notes)
}
