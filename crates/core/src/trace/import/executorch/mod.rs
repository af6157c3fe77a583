//! ExecuTorch in: a program's own memory plan as a trace ([`plan`]), timed
//! by the cost model or by an ETDump profile of the program ([`etdump`]),
//! and an ETDump alone as a measured profile (op times, no memory).

pub mod etdump;
pub mod plan;

pub use etdump::Etdump;
pub use plan::{plan_trace, ExecutorchInfo, PlannedBuffer};

use super::ImportOptions;
use crate::graph::executorch::{model_name, Program};
use crate::trace::build::TraceBuilder;
use crate::trace::{Importer, Instrumented, Producer, Source, Trace, TraceOp};
use crate::{Error, Result};
use std::path::Path;

/// `import MODEL.pte [--etdump RUN.etdp]`: the program's plan as a trace.
pub fn import_program(path: &Path, opts: &ImportOptions) -> Result<(Trace, Vec<String>)> {
    let p = Program::load(path)?;
    let mut notes = Vec::new();
    let (times, run) = match &opts.etdump {
        Some(e) => {
            let d = Etdump::load(e)?;
            let (k, run) = d.run(opts.run).map_err(Error::Config)?;
            let (times, missing) = times_of(&p, run);
            if missing > 0 {
                notes.push(format!(
                    "{}: {missing} of the program's {} kernel calls have no event in run {k}: shown with no time",
                    e.display(),
                    p.calls.len()
                ));
            }
            (Some(times), Some((k, d.runs.len())))
        }
        None => (None, None),
    };
    let (mut tr, more) = plan_trace(&p, &model_name(path), opts.capacity, times)
        .map_err(|d| Error::parse(path, crate::graph::executorch::FORMAT, d))?;
    notes.extend(more);
    if let (Some((k, n)), Producer::Instrumented(i)) = (run, &mut tr.meta.producer) {
        if let Some(info) = i.executorch.as_mut() {
            info.run = Some(k);
            info.runs = Some(n);
        }
        i.run = Some(k);
        i.runs = Some(n);
    }
    Ok((tr, notes))
}

/// Per program call, its (start, end) in ns from `run`'s instruction
/// events (relative to the run's first), and how many calls had none.
pub fn times_of(p: &Program, run: &etdump::Run) -> (plan::Times, usize) {
    let t0 = run.start();
    let mut at: std::collections::HashMap<i32, (u64, u64)> = Default::default();
    for e in run.calls() {
        at.entry(e.instruction)
            .or_insert((e.start - t0, e.end - t0));
    }
    let mut missing = 0;
    let mut last = 0;
    let times = p
        .calls
        .iter()
        .map(
            |c| match i32::try_from(c.instruction).ok().and_then(|i| at.get(&i)) {
                Some(&span) => {
                    last = span.1;
                    span
                }
                None => {
                    missing += 1;
                    (last, last)
                }
            },
        )
        .collect();
    (times, missing)
}

/// `import RUN.etdp [--model MODEL.pte]`: with the program, its plan timed
/// by the profile; alone, a measured profile of op times.
pub fn import_etdump(path: &Path, opts: &ImportOptions) -> Result<(Trace, Vec<String>)> {
    if let Some(program) = &opts.program {
        let with = ImportOptions {
            etdump: Some(path.to_path_buf()),
            ..opts.clone()
        };
        return import_program(program, &with);
    }
    let d = Etdump::load(path)?;
    let (k, run) = d.run(opts.run).map_err(Error::Config)?;
    let t0 = run.start();
    let kernels = run.kernels();
    let model = path
        .file_name()
        .map(|s| s.to_string_lossy().trim_end_matches(".etdp").to_string())
        .unwrap_or_default();
    let mut b = TraceBuilder::new(Source::Instrumented, &model, "runtime");
    b.set_producer(Producer::Instrumented(Instrumented {
        run: Some(k),
        runs: Some(d.runs.len()),
        ..Instrumented::new(Importer::Etdump)
    }));
    for e in run.calls() {
        let kernel = kernels
            .get(&e.instruction)
            .copied()
            .unwrap_or("instruction");
        let short = kernel.split('.').next().unwrap_or(kernel);
        b.op(TraceOp::span(
            format!("{short}_{}", e.instruction),
            short,
            e.start - t0,
            e.end - t0,
        ));
    }
    let notes = vec![format!(
        "{}: op times only (run {k} of {}): give the program (--model MODEL.pte) for its memory plan",
        path.display(),
        d.runs.len()
    )];
    Ok((b.finish(), notes))
}
