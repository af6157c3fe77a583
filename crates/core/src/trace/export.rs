//! Perfetto / chrome://tracing export: ops as slices on a compute track,
//! DMA transfers as slices on one track per ledger part (evicted out,
//! reloaded, streamed in, streamed out, weights, input loads) with each
//! round trip joined by a flow arrow (v2 `bind_id`: from the evict or
//! stream out to the reload or stream in that brings the tensor back),
//! counters, named tracks, times relative to the start. A `spillscope`
//! metadata record carries what Chrome events cannot (tensors, pools,
//! summary), so importing the export loses nothing.

use super::ledger::{Ledger, Part};
use super::{EventKind, Trace};
use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use serde::Serialize;
use serde_json::{json, Value};
use std::collections::HashMap;

pub const PID: i64 = 1;
pub const TID_COMPUTE: i64 = 1;
/// Memory events without a transfer (alloc, free, a drop without a write).
pub const TID_MEMORY: i64 = 4;

/// The DMA track of a ledger part.
pub fn tid_of(part: Part) -> i64 {
    10 + part as i64
}

fn us(ns: u64, t0: u64) -> f64 {
    ns.saturating_sub(t0) as f64 / 1000.0
}

/// The Chrome trace JSON of `tr` as a document (tests, small traces);
/// [`Chrome`] writes the same JSON without building it.
pub fn to_chrome(tr: &Trace) -> Value {
    serde_json::to_value(Chrome::of(tr)).unwrap_or(Value::Null)
}

/// The Chrome trace JSON of a trace, made record by record as it is
/// serialised: the document built whole took 13 GB and 49 s for a
/// 1M-event trace (a map per event and per field). Keys are written in
/// sorted order, as the document (a sorted map) wrote them, so the bytes
/// are what they were.
pub struct Chrome<'a> {
    tr: &'a Trace,
    t0: u64,
    ledger: Ledger,
}

impl<'a> Chrome<'a> {
    pub fn of(tr: &'a Trace) -> Chrome<'a> {
        let t0 = tr
            .ops
            .iter()
            .map(|o| o.start_ns)
            .chain(tr.events.iter().map(|e| e.t_ns))
            .min()
            .unwrap_or(0);
        Chrome {
            tr,
            t0,
            ledger: Ledger::of(tr),
        }
    }

    /// Trace events written: metadata, ops, memory events, counter samples.
    pub fn records(&self) -> usize {
        4 + Part::ALL.len()
            + self.tr.ops.len()
            + self.tr.events.len()
            + self
                .tr
                .counters
                .iter()
                .map(|c| c.samples.len())
                .sum::<usize>()
    }

    fn name(&self, t: usize) -> &'a str {
        self.tr.tensors.get(t).map(|x| x.name).unwrap_or_default()
    }

    /// The metadata records: process and track names, and the `spillscope`
    /// record with what Chrome events cannot carry.
    fn head(&self) -> Vec<Value> {
        let tr = self.tr;
        let mut ev = vec![
            json!({"ph": "M", "name": "process_name", "pid": PID, "tid": 0, "args": {"name": format!("spillscope: {} [{}]", tr.meta.model, tr.meta.policy)}}),
            json!({"ph": "M", "name": "thread_name", "pid": PID, "tid": TID_COMPUTE, "args": {"name": "compute"}}),
            json!({"ph": "M", "name": "thread_name", "pid": PID, "tid": TID_MEMORY, "args": {"name": "memory events"}}),
        ];
        for p in Part::ALL {
            ev.push(json!({"ph": "M", "name": "thread_name", "pid": PID, "tid": tid_of(p), "args": {"name": format!("DMA {}", p.label())}}));
        }
        ev
    }
}

/// A record's `bind_id` and which end of the round trip it is.
type Flow = Option<(String, &'static str)>;

fn flow_fields(flow: &Flow) -> (Option<&str>, Option<bool>, Option<bool>) {
    match flow {
        Some((id, "flow_in")) => (Some(id), Some(true), None),
        Some((id, _)) => (Some(id), None, Some(true)),
        None => (None, None, None),
    }
}

#[derive(Serialize)]
struct OpArgs<'a> {
    bound: Option<super::Bound>,
    end_ns: u64,
    flops: Option<f64>,
    inputs: Vec<&'a str>,
    op_type: &'a str,
    outputs: Vec<&'a str>,
    stall_ns: u64,
    start_ns: u64,
    streamed: Vec<&'a str>,
    unit: Option<&'a super::Unit>,
}

#[derive(Serialize)]
struct OpRecord<'a> {
    args: OpArgs<'a>,
    cat: &'static str,
    dur: f64,
    name: &'a str,
    ph: &'static str,
    pid: i64,
    tid: i64,
    ts: f64,
}

/// A memory event as the record's `args` hold it: the event's own fields
/// and its tensor's and op's names and its index, keys sorted.
#[derive(Serialize)]
struct EventArgs<'a> {
    bytes: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    dma_end_ns: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    dma_start_ns: Option<u64>,
    index: usize,
    kind: EventKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    live_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    offset: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    op: Option<usize>,
    op_name: Option<&'a str>,
    pool: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<&'a str>,
    t_ns: u64,
    tensor: usize,
    tensor_name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    thread: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    written_bytes: Option<u64>,
}

#[derive(Serialize)]
struct Wrapped<'a> {
    spillscope_event: EventArgs<'a>,
}

/// A memory event's record: a slice on its DMA track, or an instant on
/// the memory track.
#[derive(Serialize)]
struct EventRecord<'a> {
    args: Wrapped<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    bind_id: Option<&'a str>,
    cat: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    dur: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    flow_in: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    flow_out: Option<bool>,
    name: String,
    ph: &'static str,
    pid: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    s: Option<&'static str>,
    tid: i64,
    ts: f64,
}

#[derive(Serialize)]
struct ValueArg {
    value: f64,
}

#[derive(Serialize)]
struct CounterRecord<'a> {
    args: ValueArg,
    cat: &'static str,
    id: &'a str,
    name: &'a str,
    ph: &'static str,
    pid: i64,
    ts: f64,
}

#[derive(Serialize)]
struct TensorRecord<'a> {
    bytes: u64,
    kind: super::TensorKind,
    name: &'a str,
    pool: &'a str,
}

impl Serialize for Chrome<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(3))?;
        m.serialize_entry("displayTimeUnit", "ns")?;
        m.serialize_entry(
            "otherData",
            &json!({"generator": format!("spillscope {}", env!("CARGO_PKG_VERSION"))}),
        )?;
        m.serialize_entry("traceEvents", &Records(self))?;
        m.end()
    }
}

/// The `traceEvents` array.
struct Records<'c, 'a>(&'c Chrome<'a>);

impl Serialize for Records<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let c = self.0;
        let (tr, t0) = (c.tr, c.t0);
        let mut seq = s.serialize_seq(Some(c.records()))?;
        let head = c.head();
        // The process name, the two tracks, then the `spillscope` record.
        for v in &head[..3] {
            seq.serialize_element(v)?;
        }
        seq.serialize_element(&SpillscopeRecord(c))?;
        for v in &head[3..] {
            seq.serialize_element(v)?;
        }
        let names = |v: &[usize]| v.iter().map(|&t| c.name(t)).collect::<Vec<_>>();
        for o in &tr.ops {
            seq.serialize_element(&OpRecord {
                args: OpArgs {
                    bound: o.bound,
                    end_ns: o.end_ns,
                    flops: o.flops,
                    inputs: names(o.inputs),
                    op_type: o.op_type,
                    outputs: names(o.outputs),
                    stall_ns: o.stall_ns,
                    start_ns: o.start_ns,
                    streamed: names(o.streamed),
                    unit: o.unit,
                },
                cat: "op",
                dur: o.end_ns.saturating_sub(o.start_ns) as f64 / 1000.0,
                name: o.name,
                ph: "X",
                pid: PID,
                tid: TID_COMPUTE,
                ts: us(o.start_ns, t0),
            })?;
        }
        // Round trips: the k-th eviction of a tensor and the reload after
        // it share a bind_id.
        let mut trips: HashMap<usize, usize> = HashMap::new();
        let mut back: std::collections::HashSet<(usize, usize)> = Default::default();
        for (i, e) in tr.events.iter().enumerate() {
            let flow: Flow = match e.kind {
                EventKind::Evict | EventKind::StreamOut => {
                    let k = trips.entry(e.tensor).or_default();
                    *k += 1;
                    Some((format!("rt-{}-{}", e.tensor, k), "flow_out"))
                }
                EventKind::Reload | EventKind::StreamIn => match trips.get(&e.tensor) {
                    Some(&k) if back.insert((e.tensor, k)) => {
                        Some((format!("rt-{}-{}", e.tensor, k), "flow_in"))
                    }
                    _ => None,
                },
                _ => None,
            };
            let (bind_id, flow_in, flow_out) = flow_fields(&flow);
            let args = Wrapped {
                spillscope_event: EventArgs {
                    bytes: e.bytes,
                    dma_end_ns: e.dma_end_ns,
                    dma_start_ns: e.dma_start_ns,
                    index: i,
                    kind: e.kind,
                    live_bytes: e.live_bytes,
                    offset: e.offset,
                    op: e.op,
                    op_name: e.op.and_then(|o| tr.ops.get(o)).map(|o| o.name),
                    pool: e.pool,
                    reason: e.reason,
                    t_ns: e.t_ns,
                    tensor: e.tensor,
                    tensor_name: c.name(e.tensor),
                    thread: e.thread,
                    written_bytes: e.written_bytes,
                },
            };
            let name = format!("{} {}", e.kind.as_str(), c.name(e.tensor));
            let rec = match (e.dma_start_ns, e.dma_end_ns, c.ledger.part(i)) {
                (Some(st), Some(en), Some(part)) => EventRecord {
                    args,
                    bind_id,
                    cat: "dma",
                    dur: Some(en.saturating_sub(st) as f64 / 1000.0),
                    flow_in,
                    flow_out,
                    name,
                    ph: "X",
                    pid: PID,
                    s: None,
                    tid: tid_of(part),
                    ts: us(st, t0),
                },
                _ => EventRecord {
                    args,
                    bind_id,
                    cat: "memory",
                    dur: None,
                    flow_in,
                    flow_out,
                    name,
                    ph: "i",
                    pid: PID,
                    s: Some("t"),
                    tid: TID_MEMORY,
                    ts: us(e.t_ns, t0),
                },
            };
            seq.serialize_element(&rec)?;
        }
        for ctr in &tr.counters {
            let series = match &ctr.pool {
                Some(p) => format!("{} ({p})", ctr.name),
                None => ctr.name.clone(),
            };
            for &(t, v) in &ctr.samples {
                seq.serialize_element(&CounterRecord {
                    args: ValueArg { value: v },
                    cat: "counter",
                    id: &ctr.name,
                    name: &series,
                    ph: "C",
                    pid: PID,
                    ts: us(t, t0),
                })?;
            }
        }
        seq.end()
    }
}

/// The `spillscope` metadata record: what Chrome events cannot carry
/// (tensors, pools, counters' units, the summary), so importing the
/// export loses nothing.
struct SpillscopeRecord<'c, 'a>(&'c Chrome<'a>);

impl Serialize for SpillscopeRecord<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let tr = self.0.tr;
        // Sorted keys throughout, as a document's maps wrote them: the
        // small parts go through a document, the tensors one by one.
        let counters: Vec<Value> = tr
            .counters
            .iter()
            .map(|c| json!({"name": c.name, "unit": c.unit, "pool": c.pool}))
            .collect();
        let tensors = crate::output::SeqOf(|| {
            tr.tensors.iter().map(|t| TensorRecord {
                bytes: t.bytes,
                kind: t.kind,
                name: t.name,
                pool: t.pool,
            })
        });
        let mut args = s.serialize_map(Some(5))?;
        args.serialize_entry(
            "args",
            &Args {
                counters,
                meta: sorted(&tr.meta),
                pools: sorted(&tr.pools),
                schema: &tr.schema,
                source: tr.source,
                summary: sorted(&tr.summary),
                t0_ns: self.0.t0,
                tensors,
            },
        )?;
        args.serialize_entry("name", "spillscope")?;
        args.serialize_entry("ph", "M")?;
        args.serialize_entry("pid", &PID)?;
        args.serialize_entry("tid", &0)?;
        args.end()
    }
}

#[derive(Serialize)]
struct Args<'a, T> {
    counters: Vec<Value>,
    meta: Value,
    pools: Value,
    schema: &'a str,
    source: super::Source,
    summary: Value,
    t0_ns: u64,
    tensors: T,
}

/// A part as a document: its maps' keys sorted, as the export writes them.
fn sorted<T: Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two sample traces (one with counters), and one with a unit and
    /// flops on its ops.
    fn traces() -> Vec<Trace> {
        let mut out: Vec<Trace> = ["encdec-1mib.lru.json", "edge-resnet50-b3.planned.json"]
            .iter()
            .map(|n| Trace::load(&super::super::sample_path(n)).unwrap())
            .collect();
        let mut units = out[0].clone();
        units.ops.update_all(|i, o| {
            o.unit = Some(super::super::Unit(
                if i % 2 == 0 { "cube" } else { "vector" }.into(),
            ));
            o.flops = (i % 3 != 0).then_some(i as f64 * 1.5);
        });
        out.push(units);
        out
    }

    #[test]
    fn the_streamed_export_is_the_document_byte_for_byte() {
        for tr in traces() {
            let c = Chrome::of(&tr);
            let streamed = serde_json::to_string(&c).unwrap();
            let doc = to_chrome(&tr);
            // A document's maps are sorted: equal text means every record
            // writes its keys in that order.
            assert_eq!(streamed, doc.to_string());
            let n = doc["traceEvents"].as_array().unwrap().len();
            assert_eq!(c.records(), n);
            // Round trips are joined by flow arrows.
            assert!(streamed.contains("\"flow_out\":true"));
            assert!(streamed.contains("\"flow_in\":true"));
        }
    }
}
