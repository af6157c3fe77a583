//! `spillscope sim`: one simulation per policy, summary on stdout, traces to files.

use super::args::{Format, SimArgs};
use spillscope::analysis::runs::{render_json, render_markdown, render_table, RunsReport};
use spillscope::session::{Request, Source, Wants};
use spillscope::sim::EvictionPolicy;
use spillscope::Result;
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

pub use spillscope::output::write_atomic;

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
pub fn resolve_notes(r: &spillscope::run::Resolved, ops: usize) -> String {
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
                spillscope::units::fmt_ms(t.roofline_ns),
                spillscope::units::fmt_ms(t.measured_ns),
                t.ratio
            );
        }
    }
    if !r.hardware.is_single_pool() {
        // The capacity column is sram's; say what the other pools hold.
        let hw = &r.hardware;
        let mut pools = vec![format!(
            "{} {} (the capacity column; every tensor no other pool takes)",
            hw.main_pool(),
            spillscope::units::fmt_bytes_precise(hw.memory.capacity.0)
        )];
        for p in &hw.pools {
            let mut takes: Vec<String> = p
                .kinds
                .iter()
                .map(|k| format!("{k:?}").to_lowercase() + "s")
                .collect();
            takes.extend(p.names.iter().map(|n| format!("{n:?}")));
            pools.push(format!(
                "{} {} ({})",
                p.name,
                spillscope::units::fmt_bytes_precise(p.capacity.0),
                takes.join(", ")
            ));
        }
        notes += &format!(
            "pools: {}; each run's bound adds up every pool's own (the exact program and the planned policy model one pool)\n",
            pools.join("; ")
        );
    }
    if let Some((p, n)) = &r.free_at_from {
        notes += &format!(
            "\nfree points from {}: {}\n",
            p.display(),
            spillscope::units::count(*n as u64, "tensor")
        );
    }
    notes
}

pub fn run(a: &SimArgs) -> Result<String> {
    let spec = a
        .schedule
        .spec(&a.model, &a.hw, &a.model_opts, &EvictionPolicy::ALL)?;
    // Outputs are checked before anything runs (the policies as resolved).
    if let Some(out) = &a.output {
        let mut r = spec.policies()?;
        // Among several, planned is left out with several pools (as the
        // session does).
        if r.len() > 1 && !spec.resolve_hardware()?.is_single_pool() {
            r.retain(|&p| p != EvictionPolicy::Planned);
        }
        let several = r.len() > 1;
        if out.as_os_str() == "-" && several {
            return Err(spillscope::Error::Config(
                "-o - writes one trace to standard output: choose one --policy".into(),
            ));
        }
        for &p in &r {
            spillscope::output::check_writable(&output_path_for(out, p, several), a.force)?;
        }
    }
    if let Some(path) = &a.write_placement {
        let graph_split = spec.split()? == spillscope::sim::config::Split::Graph;
        if !graph_split || spec.resolve_hardware()?.cores.count < 2 {
            return Err(spillscope::Error::Config(
                "--write-placement: only a graph split places ops on cores (add --cores N --split graph)".into(),
            ));
        }
        spillscope::output::check_writable(path, a.force)?;
    }
    let request = Request {
        source: Source::Model(Box::new(spec)),
        wants: Wants {
            bound: true,
            // Only the table is printed: no run keeps its trace.
            summary_only: a.output.is_none() && a.write_placement.is_none(),
            ..Default::default()
        },
        budgets: a.session.budgets()?,
        cache: a.session.cache(),
    };
    let mut outcome = spillscope::session::run(&request, &|_| {})?;
    let (g, r) = match (&outcome.graph, &outcome.resolved) {
        (Some(g), Some(r)) => (g, r),
        _ => return Err(spillscope::Error::Config("nothing was simulated".into())),
    };
    let mut notes = resolve_notes(r, g.ops.len());
    for n in &outcome.notes {
        notes += &format!("\n{n}\n");
    }
    let several = outcome.runs.len() > 1;
    if let Some(out) = &a.output {
        for run in &mut outcome.runs {
            let p = run.policy.unwrap_or_default();
            run.settle_bound();
            run.trace
                .write(&output_path_for(out, p, several), a.force)?;
        }
        // The trace is the output: no table after it.
        if out.as_os_str() == "-" {
            return Ok(String::new());
        }
    }
    if let (Some(path), Some(run)) = (&a.write_placement, outcome.runs.first()) {
        write_placement(path, &run.trace, a.force)?;
    }
    let rep = outcome.report(&g.name);
    if a.format == Format::Json {
        if !notes.is_empty() {
            super::out::note(&notes);
        }
        return Ok(render(&rep, a.format));
    }
    Ok(render(&rep, a.format) + &notes)
}

/// `sim --write-placement`: the run's placement as a schedule config.
fn write_placement(path: &Path, tr: &spillscope::trace::Trace, force: bool) -> Result<()> {
    let placement = spillscope::analysis::cores::placement(tr);
    let file = spillscope::sim::ScheduleFile {
        split: Some(spillscope::sim::config::Split::Graph),
        placement,
        ..Default::default()
    };
    let text = format!(
        "# written by `spillscope sim --write-placement`: where the list schedule\n# placed each op of {} on {} cores; edit a line to move an op, then\n# pass this file with --config (ops left out are placed by the schedule).\n{}",
        tr.meta.model,
        tr.summary.cores,
        file.to_toml()
    );
    spillscope::output::write_atomic(path, &text, force)
}
