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
/// trace without stream events implies. Read straight from the events when
/// there are no implied streams (a million-event trace would otherwise
/// copy 56 MB of moves first).
fn for_each_move(tr: &Trace, ledger: &Ledger, mut f: impl FnMut(Move)) {
    let of_events = tr.events.iter().enumerate().filter_map(|(i, e)| {
        let part = ledger.part(i)?;
        part.is_spill()
            .then(|| (e.t_ns, e.tensor, e.op, part, Ledger::bytes(&e)))
    });
    if ledger.derived_streams.is_empty() {
        return of_events.for_each(f);
    }
    let mut v: Vec<Move> = of_events.collect();
    v.extend(
        ledger
            .derived_streams
            .iter()
            .map(|d| (d.t_ns, d.tensor, Some(d.op), d.part, d.bytes)),
    );
    v.sort_by_key(|m| m.0);
    v.into_iter().for_each(&mut f);
}

/// No trip open for this tensor (in [`round_trips`]' index of open trips).
const NONE_OPEN: u32 = u32::MAX;

/// All round trips, grouped per tensor, sorted by bytes moved (largest first).
pub fn round_trips(tr: &Trace, ledger: &Ledger) -> Vec<TensorTrips> {
    let n = tr.tensors.len();
    // Every trip in the order it went out, and per tensor the index of the
    // one still out: a tensor has one trip open at a time, so its trips
    // are in `all` in the order they closed. (A `Vec<Option<RoundTrip>>`
    // per tensor and a `Vec` of trips per tensor grown one push at a time
    // cost 10x the trips' own bytes on a large trace.)
    let mut all: Vec<RoundTrip> = Vec::new();
    let mut open: Vec<u32> = vec![NONE_OPEN; n];
    let mut moved = vec![0u64; n];
    for_each_move(tr, ledger, |(t_ns, t, op, part, bytes)| {
        if t >= n {
            return;
        }
        moved[t] += bytes;
        let out = match part {
            Part::EvictedOut => Out::Evicted,
            Part::StreamedOut => Out::StreamedOut,
            Part::Reloaded | Part::StreamedIn => {
                let i = std::mem::replace(&mut open[t], NONE_OPEN);
                if let Some(rt) = all.get_mut(i as usize) {
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
                }
                return;
            }
            _ => return,
        };
        open[t] = u32::try_from(all.len()).unwrap_or(NONE_OPEN);
        all.push(RoundTrip {
            tensor: t,
            bytes: tr.tensors.at(t).bytes,
            out,
            out_t_ns: t_ns,
            out_op: op,
            written_bytes: bytes,
            back: None,
            back_t_ns: None,
            back_op: None,
            ops_skipped: 0,
        });
    });
    drop(open);
    let mut out: Vec<TensorTrips> = per_tensor(all)
        .map(|trips| {
            let t = trips[0].tensor;
            tensor_trips(tr, t, trips, moved[t])
        })
        .collect();
    out.sort_by(|a, b| {
        b.bytes_moved
            .cmp(&a.bytes_moved)
            .then(b.trips.len().cmp(&a.trips.len()))
            .then(a.tensor.cmp(&b.tensor))
    });
    out
}

/// `all` split into one exactly sized, non-empty list per tensor, each in
/// `all`'s order.
fn per_tensor(mut all: Vec<RoundTrip>) -> impl Iterator<Item = Vec<RoundTrip>> {
    all.sort_by_key(|r| r.tensor); // stable: each tensor's trips keep their order
    let mut rest = all.into_iter().peekable();
    std::iter::from_fn(move || {
        let first = rest.next()?;
        let t = first.tensor;
        let mut trips = vec![first];
        while let Some(r) = rest.next_if(|r| r.tensor == t) {
            trips.push(r);
        }
        trips.shrink_to_fit();
        Some(trips)
    })
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
        name: tr.tensors.at(t).name.into(),
        bytes: tr.tensors.at(t).bytes,
        oscillating: completed >= OSCILLATION_TRIPS,
        trips,
        bytes_moved: moved,
        stall_ns,
        evicted_by: by,
    }
}
