//! An independent replay of the ledger for the tests: it reads only a
//! trace's `events`, `ops` and `tensors` (never the library's ledger) and
//! adds up the summary's ledger fields as docs/trace-format.md defines them,
//! checking on the way the rules a ledger relies on.

use spillscope::graph::TensorKind;
use spillscope::trace::{EventKind, Trace};
use std::collections::HashSet;

/// The ledger fields, in contract order.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Fields {
    pub spill_count: u64,
    pub spilled_bytes: u64,
    pub reloaded_bytes: u64,
    pub streamed_in_bytes: u64,
    pub streamed_out_bytes: u64,
    pub traffic_bytes: u64,
    pub weight_traffic_bytes: u64,
    pub input_load_bytes: u64,
}

/// Replays `tr`; `Err` names the first rule the events break.
pub fn replay(tr: &Trace) -> Result<Fields, String> {
    let mut f = Fields::default();
    let n = tr.tensors.len();
    // Whether DRAM holds a current copy, and whether it came from a spill.
    let mut dram_current: Vec<bool> = tr
        .tensors
        .iter()
        .map(|t| matches!(t.kind, TensorKind::Input | TensorKind::Weight))
        .collect();
    let mut spilled = vec![false; n];
    let mut streams: HashSet<(usize, usize)> = HashSet::new();
    for (i, e) in tr.events.iter().enumerate() {
        let t = e.tensor;
        let kind = tr.tensors.at(t).kind;
        let weight = kind == TensorKind::Weight;
        let from_dram = |f: &mut Fields, spill: &mut u64, what: &str| -> Result<(), String> {
            if !dram_current[t] {
                return Err(format!(
                    "event {i}: {what} of {:?}, whose DRAM copy is not current",
                    tr.tensors.at(t).name
                ));
            }
            if weight {
                f.weight_traffic_bytes += e.bytes;
            } else if spilled[t] {
                *spill += e.bytes;
            } else if kind == TensorKind::Input {
                f.input_load_bytes += e.bytes;
            } else {
                return Err(format!("event {i}: {what} of activation never spilled"));
            }
            Ok(())
        };
        match e.kind {
            EventKind::Evict => {
                let w = e
                    .written_bytes
                    .ok_or(format!("event {i}: evict without written_bytes"))?;
                if w != 0 && w != e.bytes {
                    return Err(format!("event {i}: wrote {w} of {} bytes", e.bytes));
                }
                if w == 0 && !dram_current[t] {
                    return Err(format!(
                        "event {i}: dropped {:?} without a DRAM copy",
                        tr.tensors.at(t).name
                    ));
                }
                if !weight {
                    f.spill_count += 1;
                    f.spilled_bytes += w;
                    spilled[t] = true;
                }
                dram_current[t] = true;
            }
            EventKind::StreamOut => {
                f.streamed_out_bytes += e.bytes;
                spilled[t] = true;
                dram_current[t] = true;
                streams.insert((e.op.ok_or("stream_out without op")?, t));
            }
            EventKind::Reload => {
                let mut b = 0;
                from_dram(&mut f, &mut b, "reload")?;
                f.reloaded_bytes += b;
            }
            EventKind::StreamIn => {
                let mut b = 0;
                from_dram(&mut f, &mut b, "stream_in")?;
                f.streamed_in_bytes += b;
                if let Some(o) = e.op {
                    streams.insert((o, t));
                }
            }
            EventKind::Alloc if e.dma_start_ns.is_some() => {
                if !matches!(kind, TensorKind::Input | TensorKind::Weight) {
                    return Err(format!("event {i}: alloc with a transfer of an activation"));
                }
                let mut b = 0;
                from_dram(&mut f, &mut b, "load")?;
                f.reloaded_bytes += b;
            }
            EventKind::Alloc => {
                if kind != TensorKind::Input && kind != TensorKind::Weight {
                    // Produced on chip: DRAM has no copy of this value yet.
                    dram_current[t] = false;
                    spilled[t] = false;
                }
            }
            EventKind::Free | EventKind::Recompute => {}
        }
    }
    for o in &tr.ops {
        for &t in o.streamed {
            if !streams.contains(&(o.id, t)) {
                return Err(format!(
                    "op {:?} streams {:?} without a stream event",
                    o.name,
                    tr.tensors.at(t).name
                ));
            }
        }
    }
    f.traffic_bytes =
        f.spilled_bytes + f.reloaded_bytes + f.streamed_in_bytes + f.streamed_out_bytes;
    Ok(f)
}

/// The summary's ledger fields.
pub fn summary_fields(tr: &Trace) -> Fields {
    let s = &tr.summary;
    Fields {
        spill_count: s.spill_count,
        spilled_bytes: s.spilled_bytes,
        reloaded_bytes: s.reloaded_bytes,
        streamed_in_bytes: s.streamed_in_bytes,
        streamed_out_bytes: s.streamed_out_bytes,
        traffic_bytes: s.traffic_bytes,
        weight_traffic_bytes: s.weight_traffic_bytes,
        input_load_bytes: s.input_load_bytes,
    }
}
