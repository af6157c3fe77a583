//! `spillscope report`: the shareable summary of one trace.

use super::args::{ReportArgs, ReportFormat};
use spillscope::analysis::report::build;
use spillscope::sim::{simulate, EvictionPolicy};
use spillscope::Result;

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
