//! `spillscope view`: builds the explorer's source from the arguments.

use super::args::ViewArgs;
use crate::sim::{EvictionPolicy, SimConfig, WeightMode};
use crate::tui::runtime::{run, Source, ViewOptions};
use crate::{Error, Result};
use std::io::Read;
use std::path::Path;

/// Whether a `.json` file is a spillscope trace (rather than graph JSON).
/// Whether a file is a model to simulate (ONNX or graph JSON) rather than a
/// trace (spillscope, or anything `import` reads).
pub fn is_model_file(p: &Path) -> bool {
    if p.extension()
        .map(|e| e.eq_ignore_ascii_case("onnx"))
        .unwrap_or(false)
    {
        return true;
    }
    let mut head = vec![0u8; 8192];
    let n = std::fs::File::open(p)
        .and_then(|mut f| f.read(&mut head))
        .unwrap_or(0);
    let t = String::from_utf8_lossy(&head[..n]);
    t.trim_start().starts_with('{')
        && t.contains("\"tensors\"")
        && !t.contains("\"schema\"")
        && !t.contains("\"traceEvents\"")
        && !matches!(
            crate::trace::import::detect(p),
            Ok(crate::trace::import::Format::Jsonl)
        )
}

pub fn source_for(a: &ViewArgs) -> Result<Source> {
    for p in &a.inputs {
        if !p.exists() {
            return Err(Error::io(
                p,
                std::io::Error::from(std::io::ErrorKind::NotFound),
            ));
        }
    }
    let first = &a.inputs[0];
    if !is_model_file(first) {
        if let Some(p) = a.inputs.iter().find(|p| is_model_file(p)) {
            return Err(Error::Config(format!(
                "{}: a model, not a trace (compare needs two traces)",
                p.display()
            )));
        }
        return Ok(Source::Traces(a.inputs.clone()));
    }
    if a.inputs.len() > 1 {
        return Err(Error::Config(
            "a model is viewed alone; to compare, simulate to traces first (`sim -o`)".into(),
        ));
    }
    let policy: EvictionPolicy = a.policy.parse().map_err(Error::Config)?;
    let weights: WeightMode = a.weights.parse().map_err(Error::Config)?;
    if let Some(c) = &a.config {
        // Fail fast on a config that does not parse at start-up.
        crate::sim::ScheduleFile::load(c)?;
    }
    Ok(Source::Model {
        model: first.clone(),
        hw: a.hw.hw.clone(),
        config: a.config.clone(),
        load: a.model_opts.load_options(),
        base: Box::new(a.rewrite.apply(SimConfig {
            policy,
            weights,
            pins: a.pins.clone(),
            ..Default::default()
        })?),
        capacity: a.hw.capacity,
        bandwidth: a.hw.bandwidth,
    })
}

pub fn run_view(a: &ViewArgs) -> Result<()> {
    let source = source_for(a)?;
    // Load before taking over the terminal, so a bad input is one clear
    // line, not a flash of the UI; the explorer starts with this data.
    let data = source.load_quick()?;
    run(
        ViewOptions {
            source,
            watch: a.watch,
            theme: a.theme.clone(),
            ascii: a.ascii,
            mouse: a.mouse,
        },
        Some(data),
    )
}

/// The bundled sample in the explorer.
pub fn run_sample(theme: Option<String>, ascii: bool) -> Result<()> {
    // LRU first (the common runtime default), ideal beside it for Compare.
    let traces = super::sample::traces()?;
    let mut named: Vec<(String, crate::trace::Trace)> = super::sample::SAMPLE_TRACES
        .iter()
        .map(|(n, _)| n.to_string())
        .zip(traces)
        .collect();
    named.retain(|(n, _)| n.contains(".lru.") || n.contains(".ideal."));
    named.sort_by_key(|(n, _)| !n.contains(".lru."));
    run(
        ViewOptions {
            source: Source::Embedded(named),
            watch: false,
            theme,
            ascii,
            mouse: false,
        },
        None,
    )
}
