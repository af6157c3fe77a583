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

/// The Chrome trace JSON of `tr`.
pub fn to_chrome(tr: &Trace) -> Value {
    let t0 = tr
        .ops
        .iter()
        .map(|o| o.start_ns)
        .chain(tr.events.iter().map(|e| e.t_ns))
        .min()
        .unwrap_or(0);
    let name = |t: usize| tr.tensors.get(t).map(|x| x.name).unwrap_or_default();
    let names = |v: &[usize]| v.iter().map(|&t| name(t)).collect::<Vec<_>>();
    let mut ev: Vec<Value> = vec![
        json!({"ph": "M", "name": "process_name", "pid": PID, "tid": 0, "args": {"name": format!("spillscope: {} [{}]", tr.meta.model, tr.meta.policy)}}),
        json!({"ph": "M", "name": "thread_name", "pid": PID, "tid": TID_COMPUTE, "args": {"name": "compute"}}),
        json!({"ph": "M", "name": "thread_name", "pid": PID, "tid": TID_MEMORY, "args": {"name": "memory events"}}),
        json!({"ph": "M", "name": "spillscope", "pid": PID, "tid": 0, "args": {
            "schema": tr.schema, "source": tr.source, "meta": tr.meta, "pools": tr.pools, "summary": tr.summary, "t0_ns": t0,
            "tensors": tr.tensors.iter().map(|t| json!({"name": t.name, "bytes": t.bytes, "kind": t.kind, "pool": t.pool})).collect::<Vec<_>>(),
            "counters": tr.counters.iter().map(|c| json!({"name": c.name, "unit": c.unit, "pool": c.pool})).collect::<Vec<_>>(),
        }}),
    ];
    for p in Part::ALL {
        ev.push(json!({"ph": "M", "name": "thread_name", "pid": PID, "tid": tid_of(p), "args": {"name": format!("DMA {}", p.label())}}));
    }
    let ledger = Ledger::of(tr);
    for o in &tr.ops {
        ev.push(json!({
            "ph": "X", "cat": "op", "name": o.name, "pid": PID, "tid": TID_COMPUTE,
            "ts": us(o.start_ns, t0), "dur": o.end_ns.saturating_sub(o.start_ns) as f64 / 1000.0,
            "args": {"op_type": o.op_type, "start_ns": o.start_ns, "end_ns": o.end_ns, "stall_ns": o.stall_ns,
                     "inputs": names(o.inputs), "outputs": names(o.outputs), "streamed": names(o.streamed),
                     "flops": o.flops, "bound": o.bound, "unit": o.unit},
        }));
    }
    // Round trips: the k-th eviction of a tensor and the reload after it share a bind_id.
    let mut trips: HashMap<usize, usize> = HashMap::new();
    let mut back: std::collections::HashSet<(usize, usize)> = Default::default();
    for (i, e) in tr.events.iter().enumerate() {
        let mut full = serde_json::to_value(&e).unwrap_or(Value::Null);
        if let Value::Object(m) = &mut full {
            m.insert("tensor_name".into(), json!(name(e.tensor)));
            m.insert(
                "op_name".into(),
                json!(e.op.and_then(|o| tr.ops.get(o)).map(|o| o.name)),
            );
            m.insert("index".into(), json!(i));
        }
        // A round trip: out at an evict or stream out, back at the next
        // reload or stream in.
        let flow = match e.kind {
            EventKind::Evict | EventKind::StreamOut => {
                let k = trips.entry(e.tensor).or_default();
                *k += 1;
                Some((format!("rt-{}-{}", e.tensor, k), "flow_out"))
            }
            EventKind::Reload | EventKind::StreamIn => trips
                .get(&e.tensor)
                .filter(|_| !back.contains(&(e.tensor, trips[&e.tensor])))
                .map(|&k| {
                    back.insert((e.tensor, k));
                    (format!("rt-{}-{}", e.tensor, k), "flow_in")
                }),
            _ => None,
        };
        let part = ledger.part(i);
        match (e.dma_start_ns, e.dma_end_ns, part) {
            (Some(s), Some(en), Some(part)) => {
                let tid = tid_of(part);
                let mut x = json!({
                    "ph": "X", "cat": "dma", "name": format!("{} {}", e.kind.as_str(), name(e.tensor)), "pid": PID, "tid": tid,
                    "ts": us(s, t0), "dur": en.saturating_sub(s) as f64 / 1000.0, "args": {"spillscope_event": full},
                });
                if let (Some((id, dir)), Value::Object(m)) = (flow, &mut x) {
                    m.insert("bind_id".into(), json!(id));
                    m.insert(dir.into(), json!(true));
                }
                ev.push(x);
            }
            _ => {
                let mut x = json!({
                    "ph": "i", "s": "t", "cat": "memory", "name": format!("{} {}", e.kind.as_str(), name(e.tensor)), "pid": PID, "tid": TID_MEMORY,
                    "ts": us(e.t_ns, t0), "args": {"spillscope_event": full},
                });
                if let (Some((id, dir)), Value::Object(m)) = (flow, &mut x) {
                    m.insert("bind_id".into(), json!(id));
                    m.insert(dir.into(), json!(true));
                }
                ev.push(x);
            }
        }
    }
    for c in &tr.counters {
        let series = match &c.pool {
            Some(p) => format!("{} ({p})", c.name),
            None => c.name.clone(),
        };
        for &(t, v) in &c.samples {
            ev.push(json!({"ph": "C", "name": series, "cat": "counter", "pid": PID, "ts": us(t, t0), "args": {"value": v}, "id": c.name}));
        }
    }
    json!({"traceEvents": ev, "displayTimeUnit": "ns", "otherData": {"generator": format!("spillscope {}", env!("CARGO_PKG_VERSION"))}})
}
