//! Round trips per tensor, from the ledger: a trip starts where the tensor
//! goes out to DRAM (an eviction, or its producer streaming it out) and
//! ends where it comes back (a reload, or a consumer streaming it in); it
//! ends "never" only when the tensor truly never returns. Oscillation: a
//! tensor that bounces out and back again and again (the seed's 72 round
//! trips of one residual tensor under LRU).

use crate::trace::ledger::{Ledger, Part};
use crate::trace::Trace;
use serde::Serialize;

/// How a tensor went out to DRAM.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Out {
    Evicted,
    StreamedOut,
}

/// How it came back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Back {
    Reloaded,
    StreamedIn,
}

/// One trip out to DRAM and back.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RoundTrip {
    pub tensor: usize,
    pub bytes: u64,
    pub out: Out,
    pub out_t_ns: u64,
    pub out_op: Option<usize>,
    /// Bytes written to DRAM going out (0: DRAM already had a current copy).
    pub written_bytes: u64,
    /// `None` if it never came back.
    pub back: Option<Back>,
    pub back_t_ns: Option<u64>,
    pub back_op: Option<usize>,
    /// Ops that ran between going out and coming back.
    pub ops_skipped: usize,
}

/// A tensor's round trips with its totals and oscillation flag.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TensorTrips {
    pub tensor: usize,
    pub name: String,
    pub bytes: u64,
    pub trips: Vec<RoundTrip>,
    /// Its spill traffic: every ledger spill part of this tensor.
    pub bytes_moved: u64,
    /// Stall of the ops that waited for it to come back.
    pub stall_ns: u64,
    pub oscillating: bool,
    /// Ops during which it went out, most frequent first.
    pub evicted_by: Vec<(usize, usize)>,
}

/// How many round trips make a tensor "oscillating".
pub const OSCILLATION_TRIPS: usize = 3;

/// One ledger movement of a tensor: (time, tensor, op, part, bytes).
type Move = (u64, usize, Option<usize>, Part, u64);

/// The spill parts' movements in time order: events, then the streams a
/// trace without stream events implies.
fn moves(tr: &Trace, ledger: &Ledger) -> Vec<Move> {
    let mut v: Vec<Move> = tr
        .events
        .iter()
        .enumerate()
        .filter_map(|(i, e)| {
            let part = ledger.part(i)?;
            part.is_spill()
                .then(|| (e.t_ns, e.tensor, e.op, part, Ledger::bytes(&e)))
        })
        .collect();
    if !ledger.derived_streams.is_empty() {
        v.extend(
            ledger
                .derived_streams
                .iter()
                .map(|d| (d.t_ns, d.tensor, Some(d.op), d.part, d.bytes)),
        );
        v.sort_by_key(|m| m.0);
    }
    v
}

/// All round trips, grouped per tensor, sorted by bytes moved (largest first).
pub fn round_trips(tr: &Trace, ledger: &Ledger) -> Vec<TensorTrips> {
    let n = tr.tensors.len();
    let mut open: Vec<Option<RoundTrip>> = vec![None; n];
    let mut per: Vec<Vec<RoundTrip>> = vec![Vec::new(); n];
    let mut moved = vec![0u64; n];
    for (t_ns, t, op, part, bytes) in moves(tr, ledger) {
        if t >= n {
            continue;
        }
        moved[t] += bytes;
        let out = match part {
            Part::EvictedOut => Out::Evicted,
            Part::StreamedOut => Out::StreamedOut,
            Part::Reloaded | Part::StreamedIn => {
                if let Some(mut rt) = open[t].take() {
                    rt.back = Some(if part == Part::Reloaded {
                        Back::Reloaded
                    } else {
                        Back::StreamedIn
                    });
                    rt.back_t_ns = Some(t_ns);
                    rt.back_op = op;
                    rt.ops_skipped = match (rt.out_op, op) {
                        (Some(a), Some(b)) if b > a => b - a - 1,
                        _ => 0,
                    };
                    per[t].push(rt);
                }
                continue;
            }
            _ => continue,
        };
        if let Some(rt) = open[t].take() {
            per[t].push(rt);
        }
        open[t] = Some(RoundTrip {
            tensor: t,
            bytes: tr.tensors[t].bytes,
            out,
            out_t_ns: t_ns,
            out_op: op,
            written_bytes: bytes,
            back: None,
            back_t_ns: None,
            back_op: None,
            ops_skipped: 0,
        });
    }
    for (t, rt) in open.into_iter().enumerate() {
        if let Some(rt) = rt {
            per[t].push(rt);
        }
    }
    let mut out: Vec<TensorTrips> = per
        .into_iter()
        .enumerate()
        .filter(|(_, v)| !v.is_empty())
        .map(|(t, trips)| tensor_trips(tr, t, trips, moved[t]))
        .collect();
    out.sort_by(|a, b| {
        b.bytes_moved
            .cmp(&a.bytes_moved)
            .then(b.trips.len().cmp(&a.trips.len()))
            .then(a.tensor.cmp(&b.tensor))
    });
    out
}

/// A tensor's trips with their totals.
fn tensor_trips(tr: &Trace, t: usize, trips: Vec<RoundTrip>, moved: u64) -> TensorTrips {
    let stall_ns = trips
        .iter()
        .filter_map(|r| r.back_op)
        .filter_map(|o| tr.ops.get(o))
        .map(|o| o.stall_ns)
        .sum();
    let mut counts: std::collections::HashMap<usize, usize> = std::collections::HashMap::new();
    for r in &trips {
        if let Some(o) = r.out_op {
            *counts.entry(o).or_default() += 1;
        }
    }
    let mut by: Vec<(usize, usize)> = counts.into_iter().collect();
    by.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let completed = trips.iter().filter(|r| r.back.is_some()).count();
    TensorTrips {
        tensor: t,
        name: tr.tensors[t].name.clone().into(),
        bytes: tr.tensors[t].bytes,
        oscillating: completed >= OSCILLATION_TRIPS,
        trips,
        bytes_moved: moved,
        stall_ns,
        evicted_by: by,
    }
}
