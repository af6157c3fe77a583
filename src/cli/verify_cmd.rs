//! `spillscope verify`: replay a trace, report the first violations, exit 1 on any.

use super::args::{Format, VerifyArgs};
use crate::trace::{verify::verify, Trace};
use crate::Result;

/// Returns the report text and whether the trace passed.
pub fn run(a: &VerifyArgs) -> Result<(String, bool)> {
    let tr = Trace::load(&a.trace)?;
    let rep = verify(&tr, a.limit);
    let text = match a.format {
        Format::Json => serde_json::to_string_pretty(&rep).unwrap_or_default() + "\n",
        _ => {
            let mut s = format!(
                "{}: {} events, {} ops checked: {}\n",
                a.trace.display(),
                rep.events_checked,
                rep.ops_checked,
                if rep.ok() { "OK" } else { "VIOLATIONS" }
            );
            for v in &rep.violations {
                let at = v
                    .event_index
                    .map(|i| format!("event {i}"))
                    .unwrap_or_else(|| "op check".into());
                s += &format!("  [{}] {} at {} ns: {}\n", v.rule, at, v.t_ns, v.detail);
            }
            if rep.more > 0 {
                s += &format!("  ... and {} more\n", rep.more);
            }
            s
        }
    };
    Ok((text, rep.ok()))
}
