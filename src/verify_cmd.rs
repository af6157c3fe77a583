//! `spillscope verify`: replay a trace, report the first violations, exit 1 on any.

use super::args::{Format, VerifyArgs};
use spillscope::trace::{verify::verify, Trace};
use spillscope::Result;

/// Returns the report text and whether the trace passed.
pub fn run(a: &VerifyArgs) -> Result<(String, bool)> {
    let tr = match spillscope::input::detect(&a.trace)? {
        spillscope::input::Format::Spillscope => Trace::load(&a.trace)?,
        f if f.is_model() => {
            return Err(spillscope::Error::WrongInput {
                path: a.trace.clone(),
                what: "a model, not a trace".into(),
                hint: format!(
                    "verify replays traces: `spillscope sim {} -o t.json` writes one",
                    a.trace.display()
                ),
            })
        }
        // Runtime traces are imported, then replayed.
        f => spillscope::trace::import::import(&a.trace, Some(f), &Default::default())?.0,
    };
    let rep = verify(&tr, a.limit);
    let text = match a.format {
        Format::Json => serde_json::to_string_pretty(&rep).unwrap_or_default() + "\n",
        _ => {
            let mut s = format!(
                "{}: {}, {} checked: {}\n",
                a.trace.display(),
                spillscope::units::count(rep.events_checked as u64, "event"),
                spillscope::units::count(rep.ops_checked as u64, "op"),
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
