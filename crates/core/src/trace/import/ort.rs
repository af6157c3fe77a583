//! ONNX Runtime profiler JSON: node events (`<node>_kernel_time`) with sizes
//! and allocator figures written as strings. Each `model_run` is a run; the
//! first differs from later ones (warm-up), so runs are selectable.

use super::chrome::{num, read_file, ChromeEvent};
use super::ort_link::{Link, LinkSummary, Linker};
use super::{us_to_ns, ImportOptions};
use crate::graph::{Graph, Liveness, TensorKind};
use crate::trace::build::TraceBuilder;
use crate::trace::{Counter, EventKind, Importer, Instrumented, Producer, Source, Trace, TraceOp};
use crate::{Error, Result};
use std::path::Path;

/// The runs in an ORT profile: (start µs, end µs).
pub fn runs(events: &[ChromeEvent]) -> Vec<(f64, f64)> {
    let mut r: Vec<(f64, f64)> = events
        .iter()
        .filter(|e| e.cat == "Session" && e.name == "model_run")
        .map(|e| (e.ts, e.ts + e.dur.unwrap_or(0.0)))
        .collect();
    r.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap_or(std::cmp::Ordering::Equal));
    r
}

/// Node name of a node event, if it is a kernel-time event.
pub fn node_name(e: &ChromeEvent) -> Option<&str> {
    if e.cat != "Node" {
        return None;
    }
    e.name.strip_suffix("_kernel_time")
}

fn arg_u64(e: &ChromeEvent, key: &str) -> Option<u64> {
    e.args().get(key).and_then(num).map(|v| v.max(0.0) as u64)
}

/// Linked nodes whose recorded output size was compared with the model's.
#[derive(Default)]
struct ShapeCheck {
    sized: usize,
    differ: usize,
    /// The first that differed: (node, profile bytes, model bytes).
    first: Option<(String, u64, u64)>,
}

pub fn import(path: &Path, opts: &ImportOptions) -> Result<(Trace, Vec<String>)> {
    let (events, report) = read_file(path, opts.max_events())?;
    let mut warnings = report.warnings;
    let all_runs = runs(&events);
    let nodes: Vec<&ChromeEvent> = events
        .iter()
        .filter(|e| node_name(e).is_some() && e.ph == "X")
        .collect();
    if nodes.is_empty() {
        return Err(Error::parse(
            path,
            "ONNX Runtime profile",
            "no node events (`<node>_kernel_time`); was profiling on?",
        ));
    }
    let (run_no, window) = if all_runs.is_empty() {
        (1, (f64::MIN, f64::MAX))
    } else {
        let n = opts.run.unwrap_or(all_runs.len());
        if n == 0 || n > all_runs.len() {
            return Err(Error::Config(format!(
                "{}: --run {n}: the profile has {}",
                path.display(),
                crate::units::count(all_runs.len() as u64, "run")
            )));
        }
        (n, all_runs[n - 1])
    };
    // A node event in no run at all is not some other run's: say it is
    // left out rather than lose an op without a word.
    let orphans: Vec<&&ChromeEvent> = nodes
        .iter()
        .filter(|e| !all_runs.is_empty() && !all_runs.iter().any(|w| e.ts >= w.0 && e.ts <= w.1))
        .collect();
    if let Some(first) = orphans.first() {
        let n = orphans.len();
        warnings.push(format!(
            "{n} node {} outside every model_run (the first: {:?} at {} µs): not counted in any run",
            if n == 1 { "event lies" } else { "events lie" },
            node_name(first).unwrap_or_default(),
            first.ts
        ));
    }
    let in_run: Vec<&ChromeEvent> = nodes
        .into_iter()
        .filter(|e| e.ts >= window.0 && e.ts <= window.1)
        .collect();
    let t0 = if window.0 > f64::MIN {
        window.0
    } else {
        in_run.first().map(|e| e.ts).unwrap_or(0.0)
    };
    let model_name = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut b = TraceBuilder::new(Source::Instrumented, &model_name, "onnxruntime");
    let pool = "cpu";
    let mut in_use = Vec::new();
    let mut peak = Vec::new();
    let mut held = Vec::new();
    let graph = opts.model.as_deref();
    let linker = graph.map(Linker::new);
    let live = graph.map(Liveness::compute);
    let mut op_of_node: Vec<Option<usize>> =
        graph.map(|g| vec![None; g.ops.len()]).unwrap_or_default();
    let mut link = LinkSummary::default();
    let mut seen: std::collections::HashSet<&str> = Default::default();
    let mut shapes = ShapeCheck::default();
    for e in &in_run {
        let name = node_name(e).unwrap_or_default();
        let op_type = e
            .args()
            .get("op_name")
            .and_then(|v| v.as_str())
            .unwrap_or("Unknown")
            .to_string();
        let start = us_to_ns(e.ts, t0);
        let end = us_to_ns(e.ts + e.dur.unwrap_or(0.0), t0);
        let (how, group) = match &linker {
            Some(l) => l.link(name),
            None => (Link::Unmatched, Vec::new()),
        };
        if seen.insert(name) {
            link.profile_nodes += 1;
            match how {
                Link::ByName => link.by_name += 1,
                Link::Renamed => link.renamed += 1,
                Link::Inserted => link.inserted += 1,
                Link::Unmatched => {
                    link.unmatched += 1;
                    if link.unmatched_names.len() < 10 {
                        link.unmatched_names.push(name.to_string());
                    }
                }
            }
        }
        let (op_name, inputs, outputs) = match (graph, group.first()) {
            (Some(g), Some(&anchor)) => {
                let (ins, outs) = group_operands(g, &group);
                let declare = |b: &mut TraceBuilder, t: usize| {
                    let tt = &g.tensors.at(t);
                    b.tensor(tt.name, tt.bytes, tt.kind, pool)
                };
                // The profile's own output size against the model's: a
                // profile of another batch or shape links by name but its
                // bytes are not the model's.
                if let Some(measured) = arg_u64(e, "output_size").filter(|&m| m > 0) {
                    let modelled: u64 = outs.iter().map(|&t| g.tensors.at(t).bytes).sum();
                    shapes.sized += 1;
                    if modelled != measured {
                        shapes.differ += 1;
                        shapes
                            .first
                            .get_or_insert((name.to_string(), measured, modelled));
                    }
                }
                let ins: Vec<usize> = ins.into_iter().map(|t| declare(&mut b, t)).collect();
                let outs: Vec<usize> = outs.into_iter().map(|t| declare(&mut b, t)).collect();
                // Named after the graph node it ran (the convolution of a
                // fused group), so calibration and Compare match by name.
                (g.ops.at(anchor).name, ins, outs)
            }
            _ => {
                let bytes = arg_u64(e, "output_size").unwrap_or(0);
                (
                    name,
                    Vec::new(),
                    vec![b.tensor(&format!("{name}:out"), bytes, TensorKind::Activation, pool)],
                )
            }
        };
        let id = b.op(TraceOp {
            id: 0,
            name: op_name.into(),
            op_type: op_type.into(),
            start_ns: start,
            end_ns: end.max(start),
            stall_ns: 0,
            inputs,
            outputs: outputs.clone(),
            streamed: Vec::new(),
            flops: None,
            bound: None,
            unit: None,
            parent: None,
            self_ns: None,
            contention_ns: None,
        });
        for &gop in &group {
            op_of_node[gop] = Some(id);
        }
        if graph.is_none() {
            for &t in &outputs {
                let bytes = b.tensors[t].bytes;
                b.event(
                    start,
                    EventKind::Alloc,
                    t,
                    bytes,
                    pool,
                    None,
                    Some(id),
                    None,
                );
            }
        }
        if let Some(v) = arg_u64(e, "mem_bytes_in_use") {
            in_use.push((end, v as f64));
        }
        if let Some(v) = arg_u64(e, "mem_in_use_peak") {
            peak.push((end, v as f64));
        }
        if let Some(v) = arg_u64(e, "mem_arena_held") {
            held.push((end, v as f64));
        }
    }
    if let (Some(g), Some((node, measured, modelled))) = (graph, &shapes.first) {
        // Most linked nodes disagree: the model is not the one that ran.
        if shapes.differ * 2 > shapes.sized {
            // A whole multiple is a batch (or a dim) the model was not
            // read at: say by how much, and the flag that reads it so.
            let ratio = *measured as f64 / (*modelled).max(1) as f64;
            let how = if ratio >= 1.5 && (ratio - ratio.round()).abs() < 0.01 {
                format!(
                    "the profile's tensors are {:.0}x the model's: read the model at the batch it ran with --batch N (or --dim NAME=N)",
                    ratio.round()
                )
            } else {
                "read the model at the shapes it ran with --batch N or --dim NAME=N".to_string()
            };
            return Err(Error::Trace {
                path: path.to_path_buf(),
                detail: format!(
                "the profile does not match {} at its shapes: {} of {} linked nodes write other sizes (node {:?}: {} in the profile, {} in the model); {how}",
                g.name,
                shapes.differ,
                shapes.sized,
                node,
                crate::units::fmt_bytes_precise(*measured),
                crate::units::fmt_bytes_precise(*modelled)
                ),
            });
        }
    }
    // With the model: allocate at the producer, free after the last consumer
    // (both as measured), following the liveness definition.
    if let (Some(g), Some(live), Some(l)) = (graph, live, &linker) {
        let direct = op_of_node.iter().filter(|o| o.is_some()).count();
        let absorbed = l.absorb(&mut op_of_node);
        link.model = g.name.clone();
        // Constant nodes are folded into initializers by ORT, never run.
        link.graph_nodes = g.ops.iter().filter(|o| o.op_type != "Constant").count();
        link.graph_nodes_run = direct + absorbed;
        link.fused = absorbed + direct.saturating_sub(link.by_name + link.renamed);
        link_lifetimes(&mut b, g, &live, &op_of_node, pool);
    } else if let Some(m) = in_use.iter().map(|s| s.1 as u64).max() {
        // Without the model, frees are unknown: the allocator's own figure
        // (shown only as a counter; views do not call it peak live).
        b.peak_live_override = Some(m);
    }
    b.set_producer(Producer::Instrumented(Instrumented {
        run: Some(run_no),
        runs: Some(all_runs.len()),
        model: graph.map(|g| g.name.clone()),
        linked: graph.map(|_| link.clone()),
        ..Instrumented::new(Importer::Ort)
    }));
    for (name, s) in [
        ("allocator_in_use_bytes", in_use),
        ("allocator_peak_bytes", peak),
        ("arena_held_bytes", held),
    ] {
        if !s.is_empty() {
            b.counters.push(Counter {
                name: name.into(),
                unit: "bytes".into(),
                pool: Some(pool.into()),
                samples: s,
            });
        }
    }
    let mut tr = b.finish();
    if graph.is_some() {
        // The peak of the activation pool in the order ORT ran the nodes
        // (fused groups hold their inner tensors while they run).
        let arena = tr.events.iter().filter(|e| e.pool == pool);
        tr.summary.peak_live_bytes =
            crate::trace::residency::walk(arena.map(|e| crate::trace::residency::kind_delta(&e)))
                .map(|(_, b)| b)
                .max()
                .unwrap_or(0);
    }
    Ok((tr, warnings))
}

/// A group's operands: inputs not made inside it, and outputs used
/// outside it (or by nobody: graph outputs).
fn group_operands(g: &Graph, group: &[usize]) -> (Vec<usize>, Vec<usize>) {
    let inside = |o: &usize| group.contains(o);
    let mut ins = Vec::new();
    let mut outs = Vec::new();
    for &o in group {
        for &t in g.ops.at(o).inputs {
            let made_inside = g.tensors.at(t).producer.as_ref().is_some_and(inside);
            if !made_inside && !ins.contains(&t) {
                ins.push(t);
            }
        }
        for &t in g.ops.at(o).outputs {
            let c = &g.tensors.at(t).consumers;
            if (c.is_empty() || !c.iter().all(inside)) && !outs.contains(&t) {
                outs.push(t);
            }
        }
    }
    (ins, outs)
}

fn link_lifetimes(
    b: &mut TraceBuilder,
    g: &Graph,
    live: &Liveness,
    op_of_node: &[Option<usize>],
    pool: &str,
) {
    for t in &g.tensors {
        if t.kind == TensorKind::Weight {
            // Initializers live in the session, not the activation arena:
            // resident from their first use to their last, in their own pool.
            let ops: Vec<usize> = t
                .consumers
                .iter()
                .filter_map(|&c| op_of_node.get(c).copied().flatten())
                .collect();
            let (Some(&a), Some(&z)) = (ops.first(), ops.last()) else {
                continue;
            };
            let id = b.tensor(t.name, t.bytes, TensorKind::Weight, "weights");
            let (ta, tz) = (b.ops[a].start_ns, b.ops[z].end_ns);
            b.event(
                ta,
                EventKind::Alloc,
                id,
                t.bytes,
                "weights",
                None,
                Some(a),
                None,
            );
            b.event(
                tz,
                EventKind::Free,
                id,
                t.bytes,
                "weights",
                None,
                Some(z),
                None,
            );
            continue;
        }
        if live.intervals.get(t.id).is_none() {
            continue;
        }
        // Made and used inside one fused node: ORT never materialised it.
        let mapped = |o: usize| op_of_node.get(o).copied().flatten();
        if let (Some(p), false) = (t.producer.and_then(mapped), t.kind == TensorKind::Output) {
            if !t.consumers.is_empty() && t.consumers.iter().all(|&c| mapped(c) == Some(p)) {
                continue;
            }
        }
        // Measured times of its producer and consumers (ORT may run nodes in
        // another order than the file; Constant nodes it folds are absent).
        let users: Vec<usize> = t
            .producer
            .iter()
            .chain(t.consumers.iter())
            .filter_map(|&s| op_of_node.get(s).copied().flatten())
            .collect();
        let Some(&a) = users.iter().min_by_key(|&&o| b.ops[o].start_ns) else {
            continue;
        };
        let Some(&z) = users.iter().max_by_key(|&&o| b.ops[o].end_ns) else {
            continue;
        };
        let id = b.tensor(t.name, t.bytes, t.kind, pool);
        let ta = if t.producer.is_some() {
            b.ops[a].start_ns
        } else {
            0
        };
        let run_end = b.ops.iter().map(|o| o.end_ns).max().unwrap_or(0);
        let tz = if t.kind == TensorKind::Output {
            run_end
        } else {
            b.ops[z].end_ns
        };
        b.event(ta, EventKind::Alloc, id, t.bytes, pool, None, Some(a), None);
        b.event(tz, EventKind::Free, id, t.bytes, pool, None, Some(z), None);
    }
}
