//! `spillscope report`: the shareable summary of one trace.

use super::args::{ReportArgs, ReportFormat};
use crate::analysis::report::build;
use crate::sim::{simulate, EvictionPolicy};
use crate::Result;

pub fn run(a: &ReportArgs) -> Result<String> {
    let tr = if super::view_cmd::is_model_file(&a.input) {
        let spec = a
            .schedule
            .spec(&a.input, &a.hw, &a.model_opts, &[EvictionPolicy::Lru])?;
        let (g, r) = super::single_run(&spec)?;
        simulate(&g, &r.hardware, &r.first_config())?
    } else {
        a.import.load_at_level(&a.input)?.0
    };
    let r = build(&tr, !a.no_resimulate).with_profile_path(&a.input);
    let text = match a.format {
        ReportFormat::Markdown => crate::report::to_markdown(&r),
        ReportFormat::Json => crate::report::to_json(&r),
        ReportFormat::Html => crate::report::to_html(&r),
    };
    match &a.output {
        Some(path) => {
            crate::output::write_atomic(path, &text, a.force)?;
            Ok(format!("wrote {}\n", path.display()))
        }
        None => Ok(text),
    }
}
