//! `spillscope import`, `export` and `diff`.

use super::args::{DiffArgs, ExportArgs, Format, ImportArgs};
use super::sim_cmd::render;
use spillscope::analysis::diff::{agreement, diff};
use spillscope::analysis::runs::{RunRow, RunsReport};
use spillscope::trace::caps::Capabilities;
use spillscope::trace::export::Chrome;
use spillscope::units::{fmt_bytes, fmt_ms};
use spillscope::Result;

use super::out::warn_all;

pub fn run_import(a: &ImportArgs) -> Result<String> {
    let opts = spillscope::trace::import::ImportOptions {
        etdump: a.etdump.clone(),
        capacity: a.capacity,
        ..a.import.options(&a.model_opts.load_options(), None)?
    };
    let (tr, warnings) = a.import.load_as(&a.file, opts)?;
    // Every level of nested calls is kept unless --op-depth says which.
    let tr = match a.import.op_depth {
        Some(d) => spillscope::trace::nesting::collapse(&tr, d),
        None => tr,
    };
    warn_all(&warnings);
    if let Some(out) = &a.output {
        tr.write(out, a.force)?;
        // The trace went to standard output: no summary after it.
        if out.as_os_str() == "-" {
            return Ok(String::new());
        }
    }
    let caps = spillscope::trace::caps::Capabilities::of(&tr);
    if tr.source == spillscope::trace::Source::Instrumented {
        return Ok(render_measured(
            &spillscope::analysis::measured::summary(&tr, &caps),
            a.format,
        ));
    }
    let rep = RunsReport {
        model: tr.meta.model.clone(),
        runs: vec![RunRow::from_trace(&tr)],
        optimum: None,
        shard: None,
    };
    let mut s = render(&rep, a.format);
    if a.format == Format::Table {
        s += &format!(
            "{}, {}, {} imported\n",
            spillscope::units::count(tr.ops.len() as u64, "op"),
            spillscope::units::count(tr.tensors.len() as u64, "tensor"),
            spillscope::units::count(tr.events.len() as u64, "event"),
        );
    }
    Ok(s)
}

/// A measured trace's summary as a table (label: value), markdown or JSON.
pub fn render_measured(
    m: &spillscope::analysis::measured::MeasuredSummary,
    format: Format,
) -> String {
    match format {
        Format::Json => serde_json::to_string_pretty(m).unwrap_or_default() + "\n",
        Format::Markdown => {
            let mut s = format!("| {} | |\n|---|---|\n", m.model);
            for (k, v) in m.rows() {
                s += &format!("| {k} | {v} |\n");
            }
            s
        }
        Format::Table => {
            let w = m.rows().iter().map(|r| r.0.len()).max().unwrap_or(0);
            let mut s = format!("{}: {}\n", m.heading(), m.model);
            for (k, v) in m.rows() {
                s += &format!("  {k:<w$}  {v}\n");
            }
            s
        }
    }
}

pub fn run_export(a: &ExportArgs) -> Result<String> {
    let (tr, warnings) = a.import.load(&a.trace)?;
    warn_all(&warnings);
    let chrome = Chrome::of(&tr);
    spillscope::output::write_json_atomic(&a.chrome, &chrome, a.force)?;
    Ok(format!(
        "wrote {} ({} trace events)\n",
        a.chrome.display(),
        chrome.records()
    ))
}

pub fn run_diff(a: &DiffArgs) -> Result<String> {
    let (ta, wa) = a.import.load_at_level(&a.a, None)?;
    let (tb, wb) = a.import.load_at_level(&a.b, None)?;
    warn_all(&wa);
    warn_all(&wb);
    let d = diff(&ta, &tb);
    let ag = agreement(&ta, &tb, a.limit);
    // Vela's plan on either side: the like-for-like comparison too.
    let vela = spillscope::analysis::vela::compare(&ta, &tb)
        .map(|c| ('A', c))
        .or_else(|| spillscope::analysis::vela::compare(&tb, &ta).map(|c| ('B', c)));
    // ExecuTorch's plan on either side: its spilled set against the run.
    let plan = spillscope::analysis::executorch::compare(&ta, &tb)
        .map(|c| ('A', c))
        .or_else(|| spillscope::analysis::executorch::compare(&tb, &ta).map(|c| ('B', c)));
    let (ca, cb) = (Capabilities::of(&ta), Capabilities::of(&tb));
    // Spill figures only where both sides record spills: against a runtime
    // profile, ops compare by time.
    let spills = ca.spill_events && cb.spill_events;
    if a.format == Format::Json {
        let ops: Vec<_> = d.ops.iter().take(a.limit).collect();
        let tensors: Vec<_> = d.tensors.iter().take(a.limit).collect();
        let mut v = serde_json::json!({
            "a": a.a, "b": a.b, "agreement": ag, "latency_delta_ns": d.latency_delta_ns, "traffic_delta_bytes": d.traffic_delta_bytes,
            "ops": ops, "tensors": tensors, "only_in_a": d.only_in_a, "only_in_b": d.only_in_b,
            "ops_by": if d.by_time { "duration" } else { "traffic" },
            "capabilities": {"a": ca, "b": cb},
        });
        if !spills {
            if let Some(m) = v.as_object_mut() {
                m.remove("traffic_delta_bytes");
                m.remove("tensors");
            }
        }
        if let (Some((side, c)), Some(m)) = (&vela, v.as_object_mut()) {
            m.insert("vela_side".into(), serde_json::json!(side.to_string()));
            m.insert("vela".into(), serde_json::to_value(c).unwrap_or_default());
        }
        if let (Some((side, c)), Some(m)) = (&plan, v.as_object_mut()) {
            m.insert(
                "executorch_side".into(),
                serde_json::json!(side.to_string()),
            );
            m.insert(
                "executorch".into(),
                serde_json::to_value(c).unwrap_or_default(),
            );
        }
        return Ok(serde_json::to_string_pretty(&v).unwrap_or_default() + "\n");
    }
    let side =
        |label: &str, p: &std::path::Path, t: &spillscope::trace::Trace, c: &Capabilities| {
            format!(
                "{label}: {}  ({}, {})\n",
                p.display(),
                fmt_ms(t.summary.latency_ns),
                if c.spill_events {
                    format!("{} spill traffic", fmt_bytes(t.summary.traffic_bytes))
                } else {
                    "measured: no spill events".to_string()
                }
            )
        };
    let mut s = side("A", &a.a, &ta, &ca) + &side("B", &a.b, &tb, &cb);
    if let Some((which, c)) = &vela {
        // Against Vela's plan the like-for-like view replaces the generic
        // event matching (Vela's graph and events are not spillscope's).
        s += &format!(
            "latency B-A: {} (Vela's cycle estimate vs the hardware profile's)\n",
            spillscope::units::fmt_ms_delta(d.latency_delta_ns)
        );
        s += &super::vela_text::render(*which, c, a.limit);
        return Ok(s);
    }
    if spills {
        s += &format!(
            "agreement: spill events {:.1}% ({} matched of {} / {}), alloc/free {:.1}% ({} of {} / {})\n",
            ag.spill_pct, ag.spill_matched, ag.spill_a, ag.spill_b, ag.alloc_pct, ag.alloc_matched, ag.alloc_a, ag.alloc_b
        );
        s += &format!(
            "latency B-A: {}, spill traffic B-A: {}\n\n",
            spillscope::units::fmt_ms_delta(d.latency_delta_ns),
            spillscope::units::fmt_bytes_delta(d.traffic_delta_bytes)
        );
        s += &format!(
            "{:<48} {:>12} {:>12} {:>12} {:>12}\n",
            "op (by |traffic B-A|, then |dur B-A|)", "dur A", "dur B", "traffic A", "traffic B"
        );
    } else {
        s += &format!(
            "latency B-A: {} (one side records no spill events: ops compare by time)\n\n",
            spillscope::units::fmt_ms_delta(d.latency_delta_ns),
        );
        s += &format!(
            "{:<48} {:>12} {:>12} {:>12}\n",
            "op (by |dur B-A|)", "dur A", "dur B", "B/A"
        );
    }
    let shown: Vec<_> = d.ops.iter().take(a.limit).collect();
    let names: Vec<&str> = shown.iter().map(|o| o.name.as_str()).collect();
    for (o, name) in shown
        .iter()
        .zip(spillscope::names::elide_all(&names, 48, false))
    {
        let (x, y) = if spills {
            (fmt_bytes(o.a_traffic_bytes), fmt_bytes(o.b_traffic_bytes))
        } else if o.a_duration_ns > 0 {
            (
                format!("{:.2}x", o.b_duration_ns as f64 / o.a_duration_ns as f64),
                String::new(),
            )
        } else {
            ("-".into(), String::new())
        };
        s += format!(
            "{:<48} {:>12} {:>12} {:>12} {:>12}\n",
            name,
            fmt_ms(o.a_duration_ns),
            fmt_ms(o.b_duration_ns),
            x,
            y
        )
        .trim_end();
        s += "\n";
    }
    let moved: Vec<_> = d
        .tensors
        .iter()
        .filter(|t| spills && (t.a_trips != t.b_trips || t.a_bytes_moved != t.b_bytes_moved))
        .take(a.limit)
        .collect();
    if !moved.is_empty() {
        s += &format!(
            "\n{:<48} {:>8} {:>8} {:>12} {:>12}\n",
            "tensor (by |moved B-A|)", "trips A", "trips B", "moved A", "moved B"
        );
        let names: Vec<&str> = moved.iter().map(|t| t.name.as_str()).collect();
        for (t, name) in moved
            .iter()
            .zip(spillscope::names::elide_all(&names, 48, false))
        {
            s += &format!(
                "{:<48} {:>8} {:>8} {:>12} {:>12}\n",
                name,
                t.a_trips,
                t.b_trips,
                fmt_bytes(t.a_bytes_moved),
                fmt_bytes(t.b_bytes_moved)
            );
        }
    }
    if !d.only_in_a.is_empty() || !d.only_in_b.is_empty() {
        s += &format!(
            "\nops only in A: {} ({}), only in B: {} ({})\n",
            d.only_in_a.len(),
            d.only_in_a
                .iter()
                .take(5)
                .cloned()
                .collect::<Vec<_>>()
                .join(", "),
            d.only_in_b.len(),
            d.only_in_b
                .iter()
                .take(5)
                .cloned()
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    if !ag.unmatched.is_empty() {
        s += "\nunmatched events (side kind tensor @ op):\n";
        for (side, k, t, o) in &ag.unmatched {
            s += &format!("  {side} {k} {t} @ {o}\n");
        }
    }
    if let Some((which, c)) = &plan {
        s += &plan_text(*which, c, a.limit);
    }
    Ok(s)
}

/// ExecuTorch's plan (on side `side`) against the spillscope run: the
/// spilled-set agreement, the traffic with the bound, and the tensors only
/// one side keeps in DRAM.
fn plan_text(
    side: char,
    c: &spillscope::analysis::executorch::PlanComparison,
    limit: usize,
) -> String {
    let other = if side == 'A' { 'B' } else { 'A' };
    let mut s = format!(
        "\nExecuTorch's plan ({side}): arena 1 {}; spillscope ({other}): {} at {}\n",
        fmt_bytes(c.sram_bytes),
        c.sim_policy,
        fmt_bytes(c.sim_capacity_bytes)
    );
    if c.sram_bytes != c.sim_capacity_bytes {
        s += &format!(
            "  note: the on-chip sizes differ; simulate with --capacity {} to compare like for like\n",
            c.sram_bytes
        );
    }
    for l in c.lines() {
        s += &format!("{l}\n");
    }
    for (label, names) in [
        ("in DRAM only in ExecuTorch's plan", &c.only_plan_spilled),
        ("in DRAM only in spillscope's run", &c.only_sim_spilled),
    ] {
        if !names.is_empty() {
            let shown: Vec<&str> = names.iter().take(limit).map(String::as_str).collect();
            s += &format!("  {label}: {}", shown.join(", "));
            if names.len() > shown.len() {
                s += &format!(" and {} more", names.len() - shown.len());
            }
            s.push('\n');
        }
    }
    s
}
