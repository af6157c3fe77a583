//! Generic Chrome traces: slices (`X`, `B`/`E`) become ops, instant events
//! and slices that describe memory (`args.spillscope_event`, or `kind` +
//! `tensor` + `bytes` in args) become events, `C` become counters. A trace
//! spillscope exported is rebuilt exactly from its `spillscope` metadata.

use super::chrome::Loose;
use super::chrome::{num, read_file, ChromeEvent};
use super::{us_to_ns, ImportOptions};
use crate::trace::build::TraceBuilder;
use crate::trace::{
    Bound, Counter, Event, EventKind, Importer, Instrumented, Meta, Pool, Producer, Source,
    Summary, TensorKind, Trace, TraceOp, TraceTensor, Unit,
};
use crate::{Error, Result};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;
use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

fn kind_of(s: &str) -> Option<EventKind> {
    s.parse().ok()
}

pub fn import(path: &Path, opts: &ImportOptions) -> Result<(Trace, Vec<String>)> {
    let (events, report) = read_file(path, opts.max_events())?;
    let mut warnings = report.warnings;
    // Duplicate flow ids are suspicious in a generic trace: warn once each.
    let mut seen_flow: HashMap<(String, bool), usize> = HashMap::new();
    for e in &events {
        if let Some(id) = &e.bind_id {
            // One start and one end per id: `s`/`flow_out` vs `f`/`t`/`flow_in`.
            let out = e.flow_out || e.ph == "s";
            let n = seen_flow.entry((id.clone(), out)).or_default();
            *n += 1;
            if *n == 2 {
                warnings.push(format!(
                    "event {}: flow id {id:?} used more than once",
                    e.index
                ));
            }
        }
    }
    if let Some(meta) = events
        .iter()
        .find(|e| e.ph == "M" && e.name == "spillscope")
    {
        return rebuild(path, meta, &events).map(|t| (t, warnings));
    }
    let t0 = events
        .iter()
        .filter(|e| e.ph != "M")
        .map(|e| e.ts)
        .fold(f64::INFINITY, f64::min);
    let t0 = if t0.is_finite() { t0 } else { 0.0 };
    let model = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut b = TraceBuilder::new(Source::Instrumented, &model, "chrome");
    b.set_producer(Producer::Instrumented(Instrumented::new(Importer::Chrome)));
    // B/E pairs per thread.
    let mut open: HashMap<(i64, i64), Vec<&ChromeEvent>> = HashMap::new();
    let mut slices: Vec<(f64, f64, &ChromeEvent)> = Vec::new();
    let mut counters: BTreeMap<String, Vec<(u64, f64)>> = BTreeMap::new();
    for e in &events {
        match e.ph.as_str() {
            "X" => slices.push((e.ts, e.ts + e.dur.unwrap_or(0.0), e)),
            "B" => open.entry((e.pid, e.tid)).or_default().push(e),
            "E" => match open.get_mut(&(e.pid, e.tid)).and_then(|v| v.pop()) {
                Some(bgn) => slices.push((bgn.ts, e.ts.max(bgn.ts), bgn)),
                None => warnings.push(format!("event {}: `E` without a matching `B`", e.index)),
            },
            "C" => {
                if let Value::Object(m) = e.args() {
                    for (k, v) in m {
                        if let Some(x) = num(v) {
                            let sample = (us_to_ns(e.ts, t0), x);
                            // No allocation for a series already seen.
                            if k == "value" {
                                match counters.get_mut(e.name.as_str()) {
                                    Some(s) => s.push(sample),
                                    None => {
                                        counters.insert(e.name.to_string(), vec![sample]);
                                    }
                                }
                            } else {
                                counters
                                    .entry(format!("{} {k}", e.name))
                                    .or_default()
                                    .push(sample);
                            }
                        }
                    }
                }
            }
            _ => {}
        }
    }
    for (_, v) in open {
        for e in v {
            warnings.push(format!("event {}: `B` never closed", e.index));
        }
    }
    slices.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap_or(std::cmp::Ordering::Equal));
    for (s, end, e) in &slices {
        if memory_kind(e).is_some() {
            continue;
        }
        let start = us_to_ns(*s, t0);
        let end = us_to_ns(*end, t0);
        let op_type = if e.cat.is_empty() {
            "slice"
        } else {
            e.cat.as_str()
        };
        b.op(TraceOp::span(e.name.as_str(), op_type, start, end));
    }
    for e in &events {
        // Typed, borrowing decode of the args: no map, no copies.
        let Some(a) = e.args_as::<MemArgs>() else {
            continue;
        };
        let Some(kind) = a.kind() else { continue };
        let tensor: &str = a.tensor.as_deref().unwrap_or(&e.name);
        let bytes = a.bytes.and_then(|l| l.0).unwrap_or(0.0).max(0.0) as u64;
        let pool: &str = a.pool.as_deref().unwrap_or("mem");
        let size = if kind.is_stream() { 0 } else { bytes };
        let id = b.tensor(tensor, size, TensorKind::Activation, pool);
        let offset = a
            .offset
            .and_then(|l| l.0)
            .map(|v| v as u64)
            .filter(|_| !kind.is_stream());
        b.event(
            us_to_ns(e.ts, t0),
            kind,
            id,
            bytes,
            pool,
            offset,
            None,
            Some(e.tid.max(0) as u64),
        );
        if kind == EventKind::Evict {
            // A runtime's eviction writes the tensor back.
            b.events.update_last(|ev| ev.written_bytes = Some(bytes));
        }
    }
    for (name, mut samples) in counters {
        samples.sort_by_key(|s| s.0);
        b.counters.push(Counter {
            name,
            unit: String::new(),
            pool: None,
            samples,
        });
    }
    if b.ops.is_empty() && b.events.is_empty() {
        return Err(Error::parse(
            path,
            "Chrome trace",
            "no slices, memory events or counters to import",
        ));
    }
    Ok((b.finish(), warnings))
}

/// The args of a memory event (`kind`, `tensor`, `bytes`, `pool`,
/// `offset`), or of an exported spillscope event.
#[derive(Deserialize)]
struct MemArgs<'a> {
    #[serde(default, borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    tensor: Option<Cow<'a, str>>,
    #[serde(default)]
    bytes: Option<Loose>,
    #[serde(default, borrow)]
    pool: Option<Cow<'a, str>>,
    #[serde(default)]
    offset: Option<Loose>,
    #[serde(default, borrow)]
    spillscope_event: Option<&'a RawValue>,
}

impl MemArgs<'_> {
    fn kind(&self) -> Option<EventKind> {
        if let Some(se) = self.spillscope_event {
            #[derive(Deserialize)]
            struct K<'a> {
                #[serde(borrow)]
                kind: Cow<'a, str>,
            }
            return serde_json::from_str::<K>(se.get())
                .ok()
                .and_then(|k| kind_of(&k.kind));
        }
        if self.tensor.is_some() && self.bytes.is_some() {
            return self.kind.as_deref().and_then(kind_of);
        }
        None
    }
}

fn memory_kind(e: &ChromeEvent) -> Option<EventKind> {
    e.args_as::<MemArgs>().and_then(|a| a.kind())
}

/// Rebuilds a spillscope export exactly.
fn rebuild(path: &Path, meta: &ChromeEvent, events: &[ChromeEvent]) -> Result<Trace> {
    let bad = |what: &str| Error::parse(path, "spillscope Chrome export", what.to_string());
    let a = meta.args();
    let t0 = a.get("t0_ns").and_then(|v| v.as_u64()).unwrap_or(0);
    let mut tensors: Vec<TraceTensor> = Vec::new();
    let mut by_name: HashMap<String, usize> = HashMap::new();
    for (i, t) in a
        .get("tensors")
        .and_then(|v| v.as_array())
        .ok_or_else(|| bad("metadata has no tensors"))?
        .iter()
        .enumerate()
    {
        let name = t
            .get("name")
            .and_then(|v| v.as_str())
            .unwrap_or_default()
            .to_string();
        by_name.insert(name.clone(), i);
        tensors.push(TraceTensor {
            id: i,
            name: name.into(),
            bytes: t.get("bytes").and_then(|v| v.as_u64()).unwrap_or(0),
            kind: match t.get("kind") {
                Some(k) => {
                    TensorKind::deserialize(k).map_err(|e| bad(&format!("tensor kind: {e}")))?
                }
                None => TensorKind::Activation,
            },
            pool: t.get("pool").and_then(|v| v.as_str()).unwrap_or("").into(),
            producer: None,
            consumers: Vec::new(),
        });
    }
    let ids = |v: Option<&Value>| -> Vec<usize> {
        v.and_then(|v| v.as_array())
            .map(|a| {
                a.iter()
                    .filter_map(|n| n.as_str().and_then(|n| by_name.get(n).copied()))
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut ops: Vec<TraceOp> = Vec::new();
    let mut op_ids: HashMap<String, usize> = HashMap::new();
    for e in events.iter().filter(|e| e.ph == "X" && e.cat == "op") {
        let g = |k: &str| e.args().get(k);
        let id = ops.len();
        op_ids.entry(e.name.to_string()).or_insert(id);
        ops.push(TraceOp {
            id,
            name: e.name.to_string().into(),
            op_type: g("op_type").and_then(|v| v.as_str()).unwrap_or("").into(),
            start_ns: g("start_ns")
                .and_then(|v| v.as_u64())
                .unwrap_or_else(|| us_to_ns(e.ts, 0.0).saturating_add(t0)),
            end_ns: g("end_ns")
                .and_then(|v| v.as_u64())
                .unwrap_or_else(|| us_to_ns(e.ts + e.dur.unwrap_or(0.0), 0.0).saturating_add(t0)),
            stall_ns: g("stall_ns").and_then(|v| v.as_u64()).unwrap_or(0),
            inputs: ids(g("inputs")),
            outputs: ids(g("outputs")),
            streamed: ids(g("streamed")),
            flops: g("flops").and_then(|v| v.as_f64()),
            bound: g("bound").and_then(|v| Bound::deserialize(v).ok()),
            unit: g("unit").and_then(|v| v.as_str()).map(|u| Unit(u.into())),
            parent: g("parent").and_then(|v| v.as_u64()).map(|p| p as usize),
            self_ns: g("self_ns").and_then(|v| v.as_u64()),
            contention_ns: None,
        });
    }
    for o in &ops {
        for &t in &o.outputs {
            tensors[t].producer.get_or_insert(o.id);
        }
        for &t in &o.inputs {
            if tensors[t].consumers.last() != Some(&o.id) {
                tensors[t].consumers.push(o.id);
            }
        }
    }
    let mut evs: Vec<(usize, Event)> = Vec::new();
    // Exported events decode straight from their raw args (no JSON tree).
    #[derive(Deserialize)]
    struct Exported<'a> {
        #[serde(borrow)]
        spillscope_event: Option<&'a RawValue>,
    }
    #[derive(Deserialize)]
    struct Extra<'a> {
        #[serde(default, borrow)]
        tensor_name: Option<Cow<'a, str>>,
        #[serde(default)]
        index: Option<usize>,
    }
    for e in events {
        let Some(raw) = e.args_as::<Exported>().and_then(|x| x.spillscope_event) else {
            continue;
        };
        let mut ev: Event = serde_json::from_str(raw.get())
            .map_err(|err| bad(&format!("event {}: {err}", e.index)))?;
        let extra: Extra = serde_json::from_str(raw.get())
            .map_err(|err| bad(&format!("event {}: {err}", e.index)))?;
        if let Some(&t) = extra.tensor_name.as_deref().and_then(|n| by_name.get(n)) {
            ev.tensor = t;
        }
        evs.push((extra.index.unwrap_or(evs.len()), ev));
    }
    evs.sort_by_key(|x| x.0);
    let specs: Vec<(String, String, Option<String>)> = a
        .get("counters")
        .and_then(|v| v.as_array())
        .map(|v| {
            v.iter()
                .map(|c| {
                    (
                        c.get("name")
                            .and_then(|x| x.as_str())
                            .unwrap_or("")
                            .to_string(),
                        c.get("unit")
                            .and_then(|x| x.as_str())
                            .unwrap_or("")
                            .to_string(),
                        c.get("pool").and_then(|x| x.as_str()).map(str::to_string),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    let mut counters: Vec<Counter> = specs
        .iter()
        .map(|(n, u, p)| Counter {
            name: n.clone(),
            unit: u.clone(),
            pool: p.clone(),
            samples: Vec::new(),
        })
        .collect();
    for e in events.iter().filter(|e| e.ph == "C") {
        let key = e.id.clone().unwrap_or_else(|| e.name.to_string());
        if let (Some(c), Some(v)) = (
            counters.iter_mut().find(|c| c.name == key),
            e.args().get("value").and_then(num),
        ) {
            c.samples.push((us_to_ns(e.ts, 0.0).saturating_add(t0), v));
        }
    }
    for c in &mut counters {
        c.samples.sort_by_key(|s| s.0);
    }
    let parse = |k: &str| {
        a.get(k)
            .cloned()
            .ok_or_else(|| bad(&format!("metadata has no {k}")))
    };
    Ok(Trace {
        schema: a
            .get("schema")
            .and_then(|v| v.as_str())
            .unwrap_or(crate::trace::SCHEMA)
            .into(),
        source: match a.get("source") {
            Some(s) => Source::deserialize(s).map_err(|e| bad(&format!("source: {e}")))?,
            None => Source::Simulator,
        },
        meta: serde_json::from_value::<Meta>(parse("meta")?).map_err(|e| bad(&e.to_string()))?,
        pools: serde_json::from_value::<Vec<Pool>>(parse("pools")?)
            .map_err(|e| bad(&e.to_string()))?,
        tensors: tensors.into(),
        ops: ops.into(),
        events: evs.into_iter().map(|x| x.1).collect(),
        counters,
        summary: serde_json::from_value::<Summary>(parse("summary")?)
            .map_err(|e| bad(&e.to_string()))?,
        recomputed: Vec::new(),
    })
    .map(|mut t| {
        t.settle();
        t
    })
}
