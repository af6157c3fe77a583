//! PyTorch profiler Chrome traces with `profile_memory=True`: `cpu_op`
//! slices become ops, each with its `parent` (the op that encloses it on its
//! thread: `aten::conv2d` > `aten::convolution` > ...); `[memory]` instant
//! events (`Addr`, `Bytes`, negative = free, `Total Allocated`) become
//! alloc/free events attributed to the innermost enclosing `cpu_op`. Views
//! fold the nesting into a cut ([`crate::trace::nesting`]).

use super::chrome::{num, read_file};
use super::{us_to_ns, ImportOptions};
use crate::trace::build::TraceBuilder;
use crate::trace::{
    Counter, EventKind, Importer, Instrumented, Producer, Source, TensorKind, Trace, TraceOp,
};
use crate::{Error, Result};
use std::collections::HashMap;
use std::path::Path;

pub fn import(path: &Path, opts: &ImportOptions) -> Result<(Trace, Vec<String>)> {
    let (events, report) = read_file(path, opts.max_events())?;
    let mut warnings = report.warnings;
    let ops: Vec<_> = events
        .iter()
        .filter(|e| e.ph == "X" && e.cat == "cpu_op")
        .collect();
    let mems: Vec<_> = events.iter().filter(|e| e.name == "[memory]").collect();
    if ops.is_empty() && mems.is_empty() {
        return Err(Error::parse(
            path,
            "PyTorch profiler trace",
            "no cpu_op or [memory] events",
        ));
    }
    let t0 = ops
        .iter()
        .map(|e| e.ts)
        .chain(mems.iter().map(|e| e.ts))
        .fold(f64::INFINITY, f64::min);
    let model_name = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut b = TraceBuilder::new(Source::Instrumented, &model_name, "pytorch");
    b.set_producer(Producer::Instrumented(Instrumented::new(Importer::Torch)));
    let pool = "cpu";
    // An address is where the allocator put a block: a number from 0 to
    // 2^64 (offsets below are taken from the lowest one).
    for e in &mems {
        if let Some(a) = e.args().get("Addr") {
            if !num(a).is_some_and(|a| (0.0..1.8446744073709552e19).contains(&a)) {
                return Err(Error::parse(
                    path,
                    "PyTorch profile",
                    format!(
                        "event {}: [memory] Addr {} is not an address from 0 to 2^64",
                        e.index,
                        crate::safe_text::excerpt(&a.to_string())
                    ),
                ));
            }
        }
    }
    let base = mems
        .iter()
        .filter_map(|e| e.args().get("Addr").and_then(num))
        .fold(f64::INFINITY, f64::min);
    let mut live: HashMap<u64, (usize, u64)> = HashMap::new();
    let mut generation: HashMap<u64, usize> = HashMap::new();
    let mut total = Vec::new();
    let mut peak_total: u64 = 0;
    // One sweep in time order with a stack of open ops per thread: the top
    // is the innermost op enclosing the next op or memory event (O(n log n)
    // for the sort, no search). An op's parent is the top when it starts.
    let mut order: Vec<usize> = (0..events.len())
        .filter(|&i| {
            let e = &events[i];
            (e.ph == "X" && e.cat == "cpu_op") || e.name == "[memory]"
        })
        .collect();
    // At one instant: enclosing (longer) ops first, memory events last.
    order.sort_by(|&a, &b| {
        let (x, y) = (&events[a], &events[b]);
        let rank = |e: &super::chrome::ChromeEvent| u8::from(e.name == "[memory]");
        x.ts.partial_cmp(&y.ts)
            .unwrap_or(std::cmp::Ordering::Equal)
            .then(rank(x).cmp(&rank(y)))
            .then(
                y.dur
                    .unwrap_or(0.0)
                    .partial_cmp(&x.dur.unwrap_or(0.0))
                    .unwrap_or(std::cmp::Ordering::Equal),
            )
            .then(a.cmp(&b))
    });
    let mut open: HashMap<i64, Vec<(f64, usize)>> = HashMap::new();
    for e in order.iter().map(|&i| &events[i]) {
        if e.ph == "X" && e.cat == "cpu_op" {
            let start = us_to_ns(e.ts, t0);
            let end_us = e.ts + e.dur.unwrap_or(0.0);
            let end = us_to_ns(end_us, t0);
            let st = open.entry(e.tid).or_default();
            // Ops that ended by now are siblings, not parents.
            while st.last().map(|s| s.0 <= e.ts).unwrap_or(false) {
                st.pop();
            }
            let id = b.op(TraceOp {
                parent: st.last().map(|s| s.1),
                ..TraceOp::span(
                    e.name.as_str(),
                    e.name.trim_start_matches("aten::"),
                    start,
                    end,
                )
            });
            st.push((end_us, id));
            continue;
        }
        if e.name != "[memory]" {
            continue;
        }
        let (Some(addr), Some(bytes)) = (
            e.args().get("Addr").and_then(num),
            e.args().get("Bytes").and_then(num),
        ) else {
            warnings.push(format!(
                "event {}: [memory] without Addr/Bytes, skipped",
                e.index
            ));
            continue;
        };
        let t = us_to_ns(e.ts, t0);
        let addr = addr as u64;
        let offset = (addr as f64 - base).max(0.0) as u64;
        let st = open.entry(e.tid).or_default();
        while st.last().map(|s| s.0 < e.ts).unwrap_or(false) {
            st.pop();
        }
        let op = st.last().map(|s| s.1);
        // A measured counter outside what a device can hold is a broken
        // profile, not a figure to print ("peak live 16777216.0 TiB").
        let limit = crate::limits::MAX_GRAPH_BYTES as f64;
        if bytes.abs() > limit {
            return Err(Error::parse(
                path,
                "PyTorch profile",
                format!(
                    "event {}: [memory] Bytes {bytes:e} is not a byte count from -2^53 to 2^53",
                    e.index
                ),
            ));
        }
        if let Some(tot) = e.args().get("Total Allocated").map(|v| (v, num(v))) {
            let tot = match tot {
                (_, Some(t)) if (0.0..=limit).contains(&t) => t,
                (v, _) => {
                    return Err(Error::parse(
                        path,
                        "PyTorch profile",
                        format!(
                        "event {}: [memory] Total Allocated {} is not a byte count from 0 to 2^53",
                        e.index,
                        crate::safe_text::excerpt(&v.to_string())
                    ),
                    ))
                }
            };
            total.push((t, tot));
            peak_total = peak_total.max(tot.max(0.0) as u64);
        }
        if bytes >= 0.0 {
            let n = generation.entry(addr).or_default();
            *n += 1;
            let name = format!("mem@{addr:#x}#{n}");
            let id = b.tensor(&name, bytes as u64, TensorKind::Activation, pool);
            live.insert(addr, (id, bytes as u64));
            b.event(
                t,
                EventKind::Alloc,
                id,
                bytes as u64,
                pool,
                Some(offset),
                op,
                Some(e.tid.max(0) as u64),
            );
        } else {
            match live.remove(&addr) {
                Some((id, size)) => b.event(
                    t,
                    EventKind::Free,
                    id,
                    size,
                    pool,
                    Some(offset),
                    op,
                    Some(e.tid.max(0) as u64),
                ),
                None => warnings.push(format!(
                    "event {}: free of {addr:#x}, which was not allocated in the trace",
                    e.index
                )),
            }
        }
    }
    if !total.is_empty() {
        b.counters.push(Counter {
            name: "live_bytes".into(),
            unit: "bytes".into(),
            pool: Some(pool.into()),
            samples: total,
        });
        b.peak_live_override = Some(peak_total);
    }
    Ok((b.finish(), warnings))
}
