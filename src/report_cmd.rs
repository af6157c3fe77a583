//! `spillscope report`: the shareable summary of one trace (a model is
//! simulated first), with what the session re-simulates for its run.

use super::args::{ReportArgs, ReportFormat};
use spillscope::analysis::report::{build_with, Resimulated, WhatifCurve};
use spillscope::session::{Outcome, Request, Source, Wants, WhatIfGrid};
use spillscope::sim::EvictionPolicy;
use spillscope::Result;

/// Points of the report's capacity what-if curve.
const CURVE_POINTS: usize = 24;

pub fn run(a: &ReportArgs) -> Result<String> {
    let model = super::view_cmd::is_model_file(&a.input);
    let source = if model {
        let spec = a
            .schedule
            .spec(&a.input, &a.hw, &a.model_opts, &[EvictionPolicy::Lru])?;
        super::single_policy(&spec)?;
        Source::Model(Box::new(spec))
    } else {
        let (tr, _) = a.import.load_at_level(&a.input, a.session.trace_store())?;
        let label = spillscope::session::source::label_of(&a.input);
        Source::Embedded(vec![(label, std::sync::Arc::new(tr))])
    };
    let resimulate = !a.no_resimulate;
    let request = Request {
        source,
        wants: Wants {
            bound: resimulate,
            suggestions: resimulate,
            whatif: resimulate.then_some(WhatIfGrid {
                capacities: Vec::new(),
                curve: Some(CURVE_POINTS),
                bandwidths: vec![None],
                cores: Vec::new(),
                shard: None,
                knees: true,
            }),
            ..Default::default()
        },
        // The curve is latency against capacity: its points keep their
        // quick bounds, unrefined (no gap printed against them), so a
        // report does not solve 24 programs.
        budgets: spillscope::session::Budgets {
            whatif_bound_s: 0.0,
            ..a.session.budgets()?
        },
        cache: a.session.cache(),
    };
    let outcome = spillscope::session::run(&request, &|_| {})?;
    let Some(run) = outcome.runs.first() else {
        return Err(spillscope::Error::Config("nothing to report".into()));
    };
    let extra = resimulated(
        &outcome,
        resimulate && run.trace.source == spillscope::trace::Source::Simulator,
    );
    let r = build_with(&run.trace, extra).with_profile_path(&a.input);
    let text = match a.format {
        ReportFormat::Markdown => spillscope::report::to_markdown(&r),
        ReportFormat::Json => spillscope::report::to_json(&r),
        ReportFormat::Html => spillscope::report::to_html(&r),
    };
    match &a.output {
        Some(path) => {
            spillscope::output::write_atomic(path, &text, a.force)?;
            Ok(format!("wrote {}\n", path.display()))
        }
        None => Ok(text),
    }
}

/// The report's re-simulated sections from the session's outcome.
fn resimulated(o: &Outcome, asked: bool) -> Resimulated {
    let run = o.runs.first();
    let mut notes = o.notes.clone();
    let suggestions = match &o.suggestions {
        Some(Ok(s)) => Some(s.clone()),
        Some(Err(e)) => {
            notes.push(format!("suggestions: {e}"));
            None
        }
        None => None,
    };
    if asked && o.whatif.is_none() && !notes.iter().any(|n| n.contains("re-simulate")) {
        notes.push("what-if: not computed".into());
    }
    Resimulated {
        suggestions,
        whatif: o.whatif.as_ref().map(|w| WhatifCurve {
            rows: w.report.runs.clone(),
            knees: w.knees.clone(),
        }),
        optimum: o.optimum.clone().filter(|x| {
            x.exact_bytes.is_some() || x.lp_bound_bytes.is_some() || x.window_bound_bytes.is_some()
        }),
        bound: run.map(|r| r.bound),
        notes,
    }
}
