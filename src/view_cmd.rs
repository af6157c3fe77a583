//! `spillscope view`: builds the explorer's source from the arguments.

use super::args::ViewArgs;
use spillscope::sim::EvictionPolicy;
use spillscope::{Error, Result};
use spillscope_explorer::runtime::{run, SessionChoice, Source, TraceOpts, ViewOptions};
use std::path::Path;

/// Whether a file is a model to simulate (ONNX or graph JSON) rather than a
/// trace (spillscope, or anything `import` reads).
pub fn is_model_file(p: &Path) -> bool {
    spillscope::input::detect(p).is_ok_and(|f| f.is_model())
}

pub fn source_for(a: &ViewArgs) -> Result<Source> {
    for p in &a.inputs {
        // The OS's own words: "No such file or directory (os error 2)".
        std::fs::metadata(p).map_err(|e| Error::io(p, e))?;
    }
    let first = &a.inputs[0];
    if !is_model_file(first) {
        if let Some(p) = a.inputs.iter().find(|p| is_model_file(p)) {
            return Err(Error::WrongInput {
                path: p.clone(),
                what: "a model, not a trace".into(),
                hint: "compare needs two traces; `spillscope sim MODEL -o t.json` makes one".into(),
            });
        }
        let opts = TraceOpts {
            format: a.import.format()?,
            import: spillscope::trace::import::ImportOptions {
                keep: Some(
                    a.import
                        .keep
                        .map_or(spillscope::limits::LIVE_WINDOW_EVENTS, |k| k as usize),
                ),
                ..a.import
                    .options(&a.model_opts.load_options(), a.session.trace_store())?
            },
            level: std::sync::Arc::new(std::sync::atomic::AtomicU32::new(
                a.import.op_depth.unwrap_or(1),
            )),
        };
        return Ok(Source::Traces(a.inputs.clone(), opts));
    }
    if a.inputs.len() > 1 {
        return Err(Error::Config(
            "a model is viewed alone; to compare, simulate to traces first (`sim -o`)".into(),
        ));
    }
    let spec = a
        .schedule
        .spec(first, &a.hw, &a.model_opts, &[EvictionPolicy::Lru])?;
    // Fail fast on a spec that does not resolve at start-up (a config that
    // does not parse, two policies).
    if spec.flags.policies.as_ref().is_some_and(|p| p.len() > 1) {
        return Err(Error::Config(
            "view simulates one policy; to compare policies, `sim -o` them and view two traces"
                .into(),
        ));
    }
    spec.schedule_file()?;
    Ok(Source::Model(Box::new(spec)))
}

pub fn run_view(a: &ViewArgs) -> Result<()> {
    let source = source_for(a)?;
    run(ViewOptions {
        source,
        watch: a.watch,
        theme: a.theme.clone(),
        ascii: a.ascii,
        mouse: a.mouse,
        session: SessionChoice {
            budgets: a.session.budgets()?,
            cache: a.session.cache(),
        },
    })
}

/// The bundled sample in the explorer.
pub fn run_sample(theme: Option<String>, ascii: bool) -> Result<()> {
    // LRU first (the common runtime default), ideal beside it for Compare.
    let traces = super::sample::traces()?;
    let mut named: Vec<(String, spillscope::trace::Trace)> = super::sample::SAMPLE_TRACES
        .iter()
        .map(|(n, _)| n.to_string())
        .zip(traces)
        .collect();
    named.retain(|(n, _)| n.contains(".lru.") || n.contains(".ideal."));
    named.sort_by_key(|(n, _)| !n.contains(".lru."));
    // The header names what the sample is, not the file it came from.
    for (_, t) in &mut named {
        t.meta.model = super::sample::SAMPLE_NAME.into();
    }
    let named = named
        .into_iter()
        .map(|(n, t)| (n, std::sync::Arc::new(t)))
        .collect();
    run(ViewOptions {
        source: Source::Embedded(named),
        watch: false,
        theme,
        ascii,
        mouse: false,
        session: Default::default(),
    })
}
