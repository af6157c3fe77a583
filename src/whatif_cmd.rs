//! `spillscope whatif`: a parallel sweep with a progress bar on a terminal.

use super::args::{SweepFormat, WhatifArgs};
use spillscope::analysis::runs::{render_table_led, Lead, RunRow, RunsReport};
use spillscope::analysis::shard::merge;
use spillscope::analysis::whatif::{
    grid_on_cores, parse_bandwidth_range, parse_cores_range, parse_size_range,
};
use spillscope::session::cache::Cache;
use spillscope::session::{Budgets, Request, Source, Stage, Wants, WhatIfGrid};
use spillscope::sim::EvictionPolicy;
use spillscope::{Error, Result};
use std::io::IsTerminal;

/// CSV of the rows (one header line, then one line per configuration).
pub fn to_csv(rows: &[RunRow]) -> String {
    let mut s = String::from("capacity_bytes,policy,read_bandwidth,write_bandwidth,latency_ns,spill_count,spilled_bytes,reloaded_bytes,streamed_in_bytes,streamed_out_bytes,traffic_bytes,stall_ns,peak_live_bytes,peak_resident_bytes,lower_bound_traffic_bytes,lower_bound_method,throughput_fps,cores,contention_ns\n");
    for r in rows {
        s += &format!(
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{:.3},{},{}\n",
            r.capacity_bytes,
            r.policy,
            r.read_bandwidth,
            r.write_bandwidth,
            r.latency_ns,
            r.spill_count,
            r.spilled_bytes,
            r.reloaded_bytes,
            r.streamed_in_bytes,
            r.streamed_out_bytes,
            r.traffic_bytes,
            r.stall_ns,
            r.peak_live_bytes,
            r.peak_resident_bytes,
            r.lower_bound_traffic_bytes,
            r.lower_bound_method.as_str(),
            r.throughput_fps,
            r.cores,
            r.contention_ns.unwrap_or(0)
        );
    }
    s
}

/// A flag's value refused, named once: `--cores 0: 0 cores: from 1 to 64`
/// (the value's own error without a second `config:`).
fn flag_error(flag: &str, value: &str, e: Error) -> Error {
    let why = match e {
        Error::Config(m) => m,
        other => other.to_string(),
    };
    Error::Config(format!("{flag} {value}: {why}"))
}

pub fn run_whatif(a: &WhatifArgs) -> Result<String> {
    let hw_opts = super::args::HwOpts {
        hw: a.hw.clone(),
        capacity: None,
        bandwidth: None,
        cores: None,
    };
    let spec = a
        .schedule
        .spec(&a.model, &hw_opts, &a.model_opts, &[EvictionPolicy::Lru])?;
    let capacities = match &a.capacity {
        Some(r) => {
            let v = parse_size_range(r).map_err(|e| flag_error("--capacity", r, e))?;
            if v.contains(&0) {
                return Err(spillscope::Error::Config(format!(
                    "--capacity {r}: a capacity must be greater than zero"
                )));
            }
            v
        }
        None => vec![spec.resolve_hardware()?.memory.capacity.0],
    };
    let bandwidths: Vec<Option<f64>> = match &a.bandwidth {
        Some(r) => parse_bandwidth_range(r)
            .map_err(|e| flag_error("--bandwidth", r, e))?
            .into_iter()
            .map(Some)
            .collect(),
        None => vec![None],
    };
    let cores: Vec<Option<u32>> = match &a.cores {
        Some(r) => parse_cores_range(r)
            .map_err(|e| flag_error("--cores", r, e))?
            .into_iter()
            .map(Some)
            .collect(),
        None => vec![None],
    };
    if a.shard.is_some() && a.format != SweepFormat::Json {
        return Err(Error::Config(
            "--shard writes JSON for `spillscope merge`: add --format json".into(),
        ));
    }
    if !a.ilp_time.is_finite() || a.ilp_time < 0.0 {
        return Err(Error::Config(format!(
            "--ilp-time {}: seconds, 0 or more",
            a.ilp_time
        )));
    }
    let policies = spec.policies()?;
    let total = grid_on_cores(&capacities, &bandwidths, &cores, &policies).len();
    let shown = a.shard.map_or(total, |s| s.range(total).len());
    let bar = (std::io::stderr().is_terminal() && shown > 1).then(|| {
        let pb = indicatif::ProgressBar::new(shown as u64);
        pb.set_style(
            indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} {msg} {elapsed}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        pb
    });
    let request = Request {
        source: Source::Model(Box::new(spec)),
        wants: Wants {
            whatif: Some(WhatIfGrid {
                capacities,
                curve: None,
                bandwidths,
                cores,
                shard: a.shard,
                knees: a.format == SweepFormat::Table,
            }),
            ..Default::default()
        },
        budgets: Budgets {
            whatif_bound_s: a.ilp_time,
            ..Default::default()
        },
        cache: (!a.no_cache).then(Cache::user).flatten(),
    };
    let tick = |p: &spillscope::session::Progress| {
        if let (Some(b), Stage::WhatIf) = (&bar, p.stage) {
            b.set_length(p.total as u64);
            b.set_position(p.done as u64);
            b.set_message("bounds and configurations");
        }
    };
    let outcome = spillscope::session::run(&request, &tick)?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let Some(w) = outcome.whatif else {
        return Err(Error::Config("the sweep did not run".into()));
    };
    Ok(match a.format {
        SweepFormat::Json => serde_json::to_string_pretty(&w.report).unwrap_or_default() + "\n",
        SweepFormat::Csv => to_csv(&w.report.runs),
        SweepFormat::Table => {
            let mut s = render_table_led(&w.report, Lead::Capacity);
            s.push('\n');
            for k in &w.knees {
                s += &k.text;
                s.push('\n');
            }
            s
        }
    })
}

/// `spillscope merge`: the shards, checked to be one sweep, joined.
pub fn run_merge(a: &super::args::MergeArgs) -> Result<String> {
    let mut shards = Vec::with_capacity(a.shards.len());
    for p in &a.shards {
        let bytes = spillscope::input::read(p)?;
        let r: RunsReport =
            serde_json::from_slice(&bytes).map_err(|e| Error::parse(p, "whatif shard JSON", e))?;
        shards.push((p.display().to_string(), r));
    }
    let all = merge(shards)?;
    let text = serde_json::to_string_pretty(&all).unwrap_or_default() + "\n";
    match &a.output {
        Some(path) => {
            spillscope::output::write_atomic(path, &text, a.force)?;
            Ok(String::new())
        }
        None => Ok(text),
    }
}

/// `spillscope suggest`.
pub fn run_suggest(a: &super::args::SuggestArgs) -> Result<String> {
    let source = if super::view_cmd::is_model_file(&a.model) {
        let spec = a
            .schedule
            .spec(&a.model, &a.hw, &a.model_opts, &[EvictionPolicy::Lru])?;
        super::single_policy(&spec)?;
        Source::Model(Box::new(spec))
    } else {
        // A simulator trace carries its graph, hardware and config.
        let tr = spillscope::trace::Trace::load(&a.model)?;
        spillscope::analysis::suggest::inputs_of_trace(&tr)?;
        let label = spillscope::session::source::label_of(&a.model);
        Source::Embedded(vec![(label, std::sync::Arc::new(tr))])
    };
    let request = Request {
        source,
        wants: Wants {
            suggestions: true,
            ..Default::default()
        },
        budgets: a.session.budgets()?,
        cache: a.session.cache(),
    };
    let outcome = spillscope::session::run(&request, &|_| {})?;
    let name = outcome
        .graph
        .as_ref()
        .map(|g| g.name.clone())
        .or_else(|| outcome.runs.first().map(|r| r.trace.meta.model.clone()))
        .unwrap_or_default();
    let s = match outcome.suggestions {
        Some(Ok(s)) => s,
        Some(Err(e)) => return Err(Error::Config(e)),
        None => return Err(Error::Config("no suggestions were computed".into())),
    };
    if let Some(path) = &a.write_config {
        // The best suggestion a schedule config can express.
        let best = s.suggestions.iter().find(|x| x.sim_config.is_some());
        let (Some(best), Some(new)) = (best, best.and_then(|b| b.sim_config.as_ref())) else {
            return Err(Error::Config(
                "no suggestion a schedule config can express saves time; nothing written".into(),
            ));
        };
        let text = format!(
            "# written by `spillscope suggest`: {} (saves {:.3} ms, {:.1} %)\n{}",
            best.description,
            best.gain_ns as f64 / 1e6,
            best.gain_pct,
            spillscope::sim::ScheduleFile::from_config(new).to_toml()
        );
        spillscope::output::write_atomic(path, &text, a.force)?;
    }
    if a.format == super::args::Format::Json {
        // Each suggestion also says how to make it, as flags and config line.
        return Ok(spillscope::report::change::suggestions_json(&s));
    }
    let b = &s.baseline;
    let mut out = format!(
        "baseline: {} [{}] at {}: {}, {}, {} spill traffic\n",
        name,
        b.policy,
        spillscope::units::fmt_bytes_precise(b.capacity_bytes),
        spillscope::units::fmt_ms(b.latency_ns),
        spillscope::units::count(b.spill_count, "eviction"),
        spillscope::units::fmt_bytes(b.traffic_bytes)
    );
    out += &format!(
        "changes that save more than {} (0.1 % of the latency, at least 1 us), re-simulated:\n\n",
        spillscope::units::fmt_ms(spillscope::analysis::suggest::noise_floor_ns(b.latency_ns))
    );
    if s.suggestions.is_empty() {
        out += "no change tried saves time above that\n";
    }
    for (i, x) in s.suggestions.iter().enumerate() {
        out += &format!(
            "{}. -{:.3} ms ({:.1} %)  {}\n     {}\n",
            i + 1,
            x.gain_ns as f64 / 1e6,
            x.gain_pct,
            x.description,
            spillscope::report::change::how(&x.change)
        );
    }
    // An ExecuTorch program with a banked plan: its own plan beside the
    // planner's at the same on-chip size.
    let is_pte = spillscope::input::detect(&a.model).ok() == Some(spillscope::input::Format::Pte);
    if let (true, Some(g), Some(r)) = (is_pte, &outcome.graph, &outcome.resolved) {
        let cfg = r.first_config();
        if let Some(c) =
            spillscope::analysis::executorch::against_plan(&a.model, g, &r.hardware, &cfg)?
        {
            out += &format!("\n{}\n", c.line());
        }
    }
    Ok(out)
}
