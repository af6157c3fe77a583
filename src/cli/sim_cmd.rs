//! `spillscope sim`: one simulation per policy, summary on stdout, traces to files.

use super::args::{Format, SimArgs};
use crate::analysis::runs::{render_json, render_markdown, render_table, RunRow, RunsReport};
use crate::sim::{simulate, EvictionPolicy, SimConfig, WeightMode};
use crate::trace::Trace;
use crate::{Error, Result};
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

/// Writes `text` to `path` atomically (temp file + rename); refuses to
/// overwrite unless `force`.
pub fn write_atomic(path: &Path, text: &str, force: bool) -> Result<()> {
    if path.exists() && !force {
        return Err(Error::Config(format!(
            "{} exists; pass --force to overwrite it",
            path.display()
        )));
    }
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let tmp = dir.join(format!(
        ".{}.tmp{}",
        path.file_name()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default(),
        std::process::id()
    ));
    std::fs::write(&tmp, text).map_err(|e| Error::io(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        Error::io(path, e)
    })
}

/// Renders a runs report in the chosen format.
pub fn render(rep: &RunsReport, format: Format) -> String {
    match format {
        Format::Table => render_table(rep),
        Format::Json => render_json(rep) + "\n",
        Format::Markdown => render_markdown(rep),
    }
}

pub fn run(a: &SimArgs) -> Result<String> {
    let mut policies = EvictionPolicy::parse_list(&a.policy).map_err(Error::Config)?;
    let sched = match &a.config {
        Some(p) => Some(crate::sim::ScheduleFile::load(p)?),
        None => None,
    };
    if let Some(p) = sched.as_ref().and_then(|s| s.policy) {
        policies = vec![p];
    }
    let weights: WeightMode = a.weights.parse().map_err(Error::Config)?;
    let hw = a.hw.resolve()?;
    let g = crate::graph::load(&a.model, &a.model_opts.load_options())?;
    let several = policies.len() > 1;
    if let Some(out) = &a.output {
        for &p in &policies {
            let path = output_path_for(out, p, several);
            if path.exists() && !a.force {
                return Err(Error::Config(format!(
                    "{} exists; pass --force to overwrite it",
                    path.display()
                )));
            }
        }
    }
    // Imported with the model, so ORT nodes link to the graph's tensors
    // (the copy of the graph is made only when a profile is given).
    let load = |p: &Path| {
        let import_opts = crate::trace::import::ImportOptions {
            model: Some(g.clone()),
            ..Default::default()
        };
        crate::trace::import::import(p, None, &import_opts).map(|x| x.0)
    };
    let mut notes = String::new();
    let measured = match &a.calibrate {
        Some(p) => {
            let m = crate::analysis::calibrate::measured_durations(&load(p)?);
            let (types, matched) = crate::analysis::calibrate::roofline_vs_measured(&g, &hw, &m);
            notes += &format!("\ncalibration from {}: {matched} of {} ops measured; roofline vs measured per op type:\n", p.display(), g.ops.len());
            notes += &format!(
                "{:<24} {:>5} {:>14} {:>14} {:>9}\n",
                "op type", "ops", "roofline", "measured", "ratio"
            );
            for t in &types {
                notes += &format!(
                    "{:<24} {:>5} {:>14} {:>14} {:>8.2}x\n",
                    t.op_type,
                    t.ops,
                    crate::units::fmt_ms(t.roofline_ns),
                    crate::units::fmt_ms(t.measured_ns),
                    t.ratio
                );
            }
            Some(std::sync::Arc::new(m))
        }
        None => None,
    };
    let free_at = match &a.free_at {
        Some(p) => {
            let f = crate::analysis::calibrate::free_points(&g, &load(p)?);
            notes += &format!("\nfree points from {}: {} tensors\n", p.display(), f.len());
            f
        }
        None => Vec::new(),
    };
    let mut traces: Vec<Trace> = Vec::new();
    for &p in &policies {
        let cfg = SimConfig {
            policy: p,
            weights,
            pins: a.pins.clone(),
            prefetch_distance: a.prefetch,
            free_at: free_at.clone(),
            measured_ns: measured.clone(),
            ..Default::default()
        };
        let cfg = match &sched {
            Some(s) => s.apply(cfg),
            None => cfg,
        };
        let cfg = a.rewrite.apply(cfg)?;
        traces.push(simulate(&g, &hw, &cfg)?);
    }
    if let Some(out) = &a.output {
        for (tr, &p) in traces.iter().zip(&policies) {
            write_atomic(&output_path_for(out, p, several), &tr.to_json(), a.force)?;
        }
    }
    // The exact optimum at this capacity, for graphs small enough.
    let optimum = if a.ilp_time > 0.0 && policies.iter().any(|&p| p != EvictionPolicy::Ideal) {
        let cfg = a.rewrite.apply(SimConfig::default())?;
        let cfg = match &sched {
            Some(s) => s.apply(cfg),
            None => cfg,
        };
        let prepared = crate::sim::prepare_graph(&g, &cfg)?;
        let limits = crate::analysis::optimum::OptimumLimits {
            time_limit_s: a.ilp_time,
            ..Default::default()
        };
        (prepared.tensors.len() <= limits.max_tensors).then(|| {
            crate::analysis::optimum::optimal_traffic(&prepared, hw.memory.capacity.0, limits)
        })
    } else {
        None
    };
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
