//! Differences between two traces (LRU vs planned, simulated vs measured,
//! before vs after): per op by name, per tensor by name, largest change first.

use super::hotspots::hotspots;
use super::roundtrips::round_trips;
use crate::trace::ledger::Ledger;
use crate::trace::Trace;
use serde::Serialize;
use std::collections::HashMap;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OpDelta {
    pub name: String,
    /// The op's spill traffic (its four ledger parts) in A and B.
    pub a_traffic_bytes: u64,
    pub b_traffic_bytes: u64,
    pub a_stall_ns: u64,
    pub b_stall_ns: u64,
    pub a_duration_ns: u64,
    pub b_duration_ns: u64,
}

impl OpDelta {
    /// B - A of the op's spill traffic.
    pub fn traffic_delta(&self) -> i64 {
        self.b_traffic_bytes as i64 - self.a_traffic_bytes as i64
    }
    /// B - A of its duration.
    pub fn duration_delta(&self) -> i64 {
        self.b_duration_ns as i64 - self.a_duration_ns as i64
    }
    /// B - A of its stall.
    pub fn stall_delta(&self) -> i64 {
        self.b_stall_ns as i64 - self.a_stall_ns as i64
    }
}

impl TensorDelta {
    /// B - A of the bytes it moved.
    pub fn moved_delta(&self) -> i64 {
        self.b_bytes_moved as i64 - self.a_bytes_moved as i64
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TensorDelta {
    pub name: String,
    pub a_trips: usize,
    pub b_trips: usize,
    pub a_bytes_moved: u64,
    pub b_bytes_moved: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TraceDiff {
    /// By |traffic B-A|, then |duration B-A|, largest first; by |duration
    /// B-A| alone when `by_time`.
    pub ops: Vec<OpDelta>,
    /// One side records no spill events (a runtime profile): ops are
    /// compared by time only.
    pub by_time: bool,
    /// By |bytes moved B-A|, largest first.
    pub tensors: Vec<TensorDelta>,
    /// Op names present in only one of the traces.
    pub only_in_a: Vec<String>,
    pub only_in_b: Vec<String>,
    pub latency_delta_ns: i64,
    pub traffic_delta_bytes: i64,
}

/// The differences of `a` and `b`.
pub fn diff(a: &Trace, b: &Trace) -> TraceDiff {
    diff_with(a, &Ledger::of(a), b, &Ledger::of(b))
}

/// [`diff`] with the ledgers already computed.
pub fn diff_with(a: &Trace, la: &Ledger, b: &Trace, lb: &Ledger) -> TraceDiff {
    let ha = hotspots(a, la);
    let hb = hotspots(b, lb);
    let ib: HashMap<&str, usize> = hb
        .iter()
        .enumerate()
        .map(|(i, h)| (h.name.as_str(), i))
        .collect();
    let ia: HashMap<&str, usize> = ha
        .iter()
        .enumerate()
        .map(|(i, h)| (h.name.as_str(), i))
        .collect();
    let mut ops = Vec::new();
    let mut only_in_a = Vec::new();
    for h in &ha {
        match ib.get(h.name.as_str()) {
            Some(&j) => {
                let g = &hb[j];
                ops.push(OpDelta {
                    name: h.name.to_string(),
                    a_traffic_bytes: h.traffic_bytes,
                    b_traffic_bytes: g.traffic_bytes,
                    a_stall_ns: h.stall_ns,
                    b_stall_ns: g.stall_ns,
                    a_duration_ns: h.duration_ns,
                    b_duration_ns: g.duration_ns,
                });
            }
            None => only_in_a.push(h.name.to_string()),
        }
    }
    let only_in_b = hb
        .iter()
        .filter(|h| !ia.contains_key(h.name.as_str()))
        .map(|h| h.name.to_string())
        .collect();
    // Largest |traffic B-A| first, then largest |duration B-A|: the order
    // the tables' titles name. Against a profile without spill events, time
    // alone.
    let by_time = !crate::trace::caps::Capabilities::of(a).spill_events
        || !crate::trace::caps::Capabilities::of(b).spill_events;
    ops.sort_by(|x, y| {
        let traffic = if by_time {
            std::cmp::Ordering::Equal
        } else {
            y.traffic_delta()
                .unsigned_abs()
                .cmp(&x.traffic_delta().unsigned_abs())
        };
        traffic
            .then(
                y.duration_delta()
                    .unsigned_abs()
                    .cmp(&x.duration_delta().unsigned_abs()),
            )
            .then(x.name.cmp(&y.name))
    });
    let ra = round_trips(a, la);
    let rb = round_trips(b, lb);
    let mut tm: HashMap<String, TensorDelta> = HashMap::new();
    for t in &ra {
        tm.entry(t.name.clone()).or_insert_with(|| TensorDelta {
            name: t.name.clone(),
            a_trips: 0,
            b_trips: 0,
            a_bytes_moved: 0,
            b_bytes_moved: 0,
        });
        let e = tm.get_mut(&t.name).expect("just inserted");
        e.a_trips = t.trips.len();
        e.a_bytes_moved = t.bytes_moved;
    }
    for t in &rb {
        let e = tm.entry(t.name.clone()).or_insert_with(|| TensorDelta {
            name: t.name.clone(),
            a_trips: 0,
            b_trips: 0,
            a_bytes_moved: 0,
            b_bytes_moved: 0,
        });
        e.b_trips = t.trips.len();
        e.b_bytes_moved = t.bytes_moved;
    }
    let mut tensors: Vec<TensorDelta> = tm.into_values().collect();
    tensors.sort_by(|x, y| {
        y.a_bytes_moved
            .abs_diff(y.b_bytes_moved)
            .cmp(&x.a_bytes_moved.abs_diff(x.b_bytes_moved))
            .then(x.name.cmp(&y.name))
    });
    TraceDiff {
        by_time,
        ops,
        tensors,
        only_in_a,
        only_in_b,
        latency_delta_ns: b.summary.latency_ns as i64 - a.summary.latency_ns as i64,
        traffic_delta_bytes: b.summary.traffic_bytes as i64 - a.summary.traffic_bytes as i64,
    }
}

/// How well two traces' memory events agree: events are matched by
/// (kind, tensor name, op name) as multisets, the simulated-vs-measured check
/// of the seed (which reports >= 95 %).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Agreement {
    /// Matched events x 2 / (events in A + events in B), in percent, for
    /// spill events (evict, reload, stream in and out) and for alloc/free
    /// events.
    pub spill_pct: f64,
    pub alloc_pct: f64,
    pub spill_matched: usize,
    pub spill_a: usize,
    pub spill_b: usize,
    pub alloc_matched: usize,
    pub alloc_a: usize,
    pub alloc_b: usize,
    /// A few events present in only one trace: (side, kind, tensor, op).
    pub unmatched: Vec<(char, String, String, String)>,
}

pub fn agreement(a: &Trace, b: &Trace, keep_unmatched: usize) -> Agreement {
    use crate::trace::EventKind;
    type Key = (EventKind, String, String);
    let keys = |t: &Trace, spill: bool| -> HashMap<Key, usize> {
        let mut m: HashMap<Key, usize> = HashMap::new();
        for e in &t.events {
            let is_spill = matches!(
                e.kind,
                EventKind::Evict | EventKind::Reload | EventKind::StreamIn | EventKind::StreamOut
            );
            let is_alloc = matches!(e.kind, EventKind::Alloc | EventKind::Free);
            if (spill && !is_spill) || (!spill && !is_alloc) {
                continue;
            }
            let tn = t.tensors.get(e.tensor).map(|x| x.name).unwrap_or_default();
            let on =
                e.op.and_then(|o| t.ops.get(o))
                    .map(|o| o.name)
                    .unwrap_or_default();
            *m.entry((e.kind, tn.into(), on.into())).or_default() += 1;
        }
        m
    };
    let mut unmatched = Vec::new();
    let mut side = |ka: &HashMap<Key, usize>, kb: &HashMap<Key, usize>| -> (usize, usize, usize) {
        let na: usize = ka.values().sum();
        let nb: usize = kb.values().sum();
        let mut matched = 0;
        for (k, &ca) in ka {
            let cb = kb.get(k).copied().unwrap_or(0);
            matched += ca.min(cb);
            if ca > cb && unmatched.len() < keep_unmatched {
                unmatched.push(('A', k.0.as_str().to_string(), k.1.clone(), k.2.clone()));
            }
        }
        for (k, &cb) in kb {
            if cb > ka.get(k).copied().unwrap_or(0) && unmatched.len() < keep_unmatched {
                unmatched.push(('B', k.0.as_str().to_string(), k.1.clone(), k.2.clone()));
            }
        }
        (matched, na, nb)
    };
    let pct = |m: usize, a: usize, b: usize| {
        if a + b == 0 {
            100.0
        } else {
            200.0 * m as f64 / (a + b) as f64
        }
    };
    let (sm, sa, sb) = side(&keys(a, true), &keys(b, true));
    let (am, aa, ab) = side(&keys(a, false), &keys(b, false));
    Agreement {
        spill_pct: pct(sm, sa, sb),
        alloc_pct: pct(am, aa, ab),
        spill_matched: sm,
        spill_a: sa,
        spill_b: sb,
        alloc_matched: am,
        alloc_a: aa,
        alloc_b: ab,
        unmatched,
    }
}
