//! `spillscope report`: the shareable summary of one trace.

use super::args::{ReportArgs, ReportFormat};
use crate::analysis::report::build;
use crate::sim::{simulate, SimConfig};
use crate::{Error, Result};

pub fn run(a: &ReportArgs) -> Result<String> {
    let tr = if super::view_cmd::is_model_file(&a.input) {
        let g = crate::graph::load(&a.input, &a.model_opts.load_options())?;
        let hw = a.hw.resolve()?;
        let mut cfg = SimConfig {
            policy: a.policy.parse().map_err(Error::Config)?,
            weights: a.weights.parse().map_err(Error::Config)?,
            ..Default::default()
        };
        if let Some(c) = &a.config {
            cfg = crate::sim::ScheduleFile::load(c)?.apply(cfg);
        }
        simulate(&g, &hw, &a.rewrite.apply(cfg)?)?
    } else {
        a.import.load(&a.input)?.0
    };
    let r = build(&tr, !a.no_resimulate);
    let text = match a.format {
        ReportFormat::Markdown => crate::report::to_markdown(&r),
        ReportFormat::Json => crate::report::to_json(&r),
        ReportFormat::Html => crate::report::to_html(&r),
    };
    match &a.output {
        Some(path) => {
            super::sim_cmd::write_atomic(path, &text, a.force)?;
            Ok(format!("wrote {}\n", path.display()))
        }
        None => Ok(text),
    }
}
