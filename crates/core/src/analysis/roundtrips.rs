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

/// Where a movement is recorded: the trace's event `i`, or the `i`-th of
/// the streams a trace without stream events implies.
#[derive(Debug, Clone, Copy)]
enum At {
    Event(usize),
    Implied(usize),
}

/// One ledger movement of a tensor: (time, tensor, op, part, bytes, where).
type Move = (u64, usize, Option<usize>, Part, u64, At);

/// The spill parts' movements in time order: events, then the streams a
/// trace without stream events implies. Read straight from the events when
/// there are no implied streams (a million-event trace would otherwise
/// copy 56 MB of moves first).
fn for_each_move(tr: &Trace, ledger: &Ledger, mut f: impl FnMut(Move)) {
    let of_events = tr.events.iter().enumerate().filter_map(|(i, e)| {
        let part = ledger.part(i)?;
        part.is_spill().then(|| {
            (
                e.t_ns,
                e.tensor,
                e.op,
                part,
                Ledger::bytes(&e),
                At::Event(i),
            )
        })
    });
    if ledger.derived_streams.is_empty() {
        return of_events.for_each(f);
    }
    let mut v: Vec<Move> = of_events.collect();
    v.extend(ledger.derived_streams.iter().enumerate().map(|(j, d)| {
        (
            d.t_ns,
            d.tensor,
            Some(d.op),
            d.part,
            d.bytes,
            At::Implied(j),
        )
    }));
    v.sort_by_key(|m| m.0);
    v.into_iter().for_each(&mut f);
}

/// No trip open for this tensor (in [`legs`]' index of open trips), and
/// no op or no end in a [`Leg`].
const NONE: u32 = u32::MAX;

/// A stream a trace without stream events implies (an op's `streamed`
/// list), as a trip's end reads it; kept beside the legs (none in a trace
/// with stream events).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Implied {
    t_ns: u64,
    bytes: u64,
    op: u32,
}

/// One round trip as the table keeps it (16 bytes, where a [`RoundTrip`]
/// is 96 and the times, sizes and ops held here cost 40): its two ends
/// are event indexes (or implied streams), and what they record is read
/// back from the trace when the trip is shown.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Leg {
    out: u32,
    back: u32,
    pub(crate) tensor: u32,
    /// Bit 0: streamed out (else evicted); bits 1-2: 0 not back yet, 1
    /// reloaded, 2 streamed in; bit 3: `out` is an implied stream, bit 4:
    /// `back` is.
    how: u8,
}

const _: () = assert!(std::mem::size_of::<Leg>() == 16);

const OUT_IMPLIED: u8 = 1 << 3;
const BACK_IMPLIED: u8 = 1 << 4;

fn some(id: u32) -> Option<usize> {
    (id != NONE).then_some(id as usize)
}

/// A movement's index as a leg holds it, and the flag that says it is an
/// implied stream.
fn held(at: At, implied_flag: u8) -> (u32, u8) {
    let id = |i: usize| u32::try_from(i).unwrap_or(NONE);
    match at {
        At::Event(i) => (id(i), 0),
        At::Implied(j) => (id(j), implied_flag),
    }
}

impl Leg {
    pub(crate) fn is_back(&self) -> bool {
        (self.how >> 1) & 3 != 0
    }

    /// One end's time, op and bytes (`None` for an end not reached or
    /// out of range).
    fn end(
        &self,
        tr: &Trace,
        implied: &[Implied],
        back: bool,
    ) -> Option<(u64, Option<usize>, u64)> {
        let (i, flag) = match back {
            false => (self.out, OUT_IMPLIED),
            true => (self.back, BACK_IMPLIED),
        };
        let i = some(i)?;
        if self.how & flag != 0 {
            let d = implied.get(i)?;
            return Some((d.t_ns, some(d.op), d.bytes));
        }
        let e = tr.events.get(i)?;
        Some((e.t_ns, e.op, Ledger::bytes(&e)))
    }

    /// The op during which it went out, read from the event's op column
    /// alone (what [`Leg::expand`] would give as `out_op`).
    pub(crate) fn out_op(&self, tr: &Trace, implied: &[Implied]) -> Option<usize> {
        let i = some(self.out)?;
        if self.how & OUT_IMPLIED != 0 {
            return some(implied.get(i)?.op);
        }
        (i < tr.events.len()).then(|| tr.events.op(i)).flatten()
    }

    pub(crate) fn back_op(&self, tr: &Trace, implied: &[Implied]) -> Option<usize> {
        self.end(tr, implied, true)?.1
    }

    /// The trip in full (`tr` is the trace it came from).
    pub(crate) fn expand(&self, tr: &Trace, implied: &[Implied]) -> RoundTrip {
        let (out_t_ns, out_op, written_bytes) = self.end(tr, implied, false).unwrap_or_default();
        let back = match (self.how >> 1) & 3 {
            1 => Some(Back::Reloaded),
            2 => Some(Back::StreamedIn),
            _ => None,
        };
        let back_end = back.and_then(|_| self.end(tr, implied, true));
        let back_op = back_end.and_then(|b| b.1);
        RoundTrip {
            tensor: self.tensor as usize,
            bytes: tr.tensors.bytes_col()[self.tensor as usize],
            out: if self.how & 1 == 1 {
                Out::StreamedOut
            } else {
                Out::Evicted
            },
            out_t_ns,
            out_op,
            written_bytes,
            back,
            back_t_ns: back_end.map(|b| b.0),
            back_op,
            ops_skipped: match (out_op, back_op) {
                (Some(a), Some(b)) if b > a => b - a - 1,
                _ => 0,
            },
        }
    }
}

/// Every trip, grouped by tensor (ascending), each tensor's in the order
/// it went out; per tensor its spill traffic; and the implied streams the
/// trips' ends refer to.
pub(crate) fn legs(tr: &Trace, ledger: &Ledger) -> (Vec<Leg>, Vec<u64>, Vec<Implied>) {
    let n = tr.tensors.len();
    // Per tensor the index of the trip still out: a tensor has one trip
    // open at a time, so its trips are in `all` in the order they closed.
    let mut all: Vec<Leg> = Vec::new();
    let mut open: Vec<u32> = vec![NONE; n];
    let mut moved = vec![0u64; n];
    let implied: Vec<Implied> = ledger
        .derived_streams
        .iter()
        .map(|d| Implied {
            t_ns: d.t_ns,
            bytes: d.bytes,
            op: u32::try_from(d.op).unwrap_or(NONE),
        })
        .collect();
    for_each_move(tr, ledger, |(_, t, _, part, bytes, at)| {
        if t >= n {
            return;
        }
        moved[t] += bytes;
        let streamed = match part {
            Part::EvictedOut => 0,
            Part::StreamedOut => 1,
            Part::Reloaded | Part::StreamedIn => {
                let i = std::mem::replace(&mut open[t], NONE);
                if let Some(leg) = all.get_mut(i as usize) {
                    let (back, flag) = held(at, BACK_IMPLIED);
                    leg.how |= if part == Part::Reloaded { 2 } else { 4 };
                    leg.how |= flag;
                    leg.back = back;
                }
                return;
            }
            _ => return,
        };
        open[t] = u32::try_from(all.len()).unwrap_or(NONE);
        let (out, flag) = held(at, OUT_IMPLIED);
        all.push(Leg {
            out,
            back: NONE,
            tensor: t as u32,
            how: streamed | flag,
        });
    });
    drop(open);
    all.sort_by_key(|l| l.tensor); // stable: each tensor's trips keep their order
    all.shrink_to_fit();
    (all, moved, implied)
}

/// All round trips, grouped per tensor, sorted by bytes moved (largest first).
pub fn round_trips(tr: &Trace, ledger: &Ledger) -> Vec<TensorTrips> {
    let table = super::trip_table::Trips::of(tr, ledger);
    (0..table.len()).filter_map(|i| table.row(tr, i)).collect()
}

/// A tensor's trips with their totals.
pub(crate) fn tensor_trips(
    tr: &Trace,
    t: usize,
    trips: Vec<RoundTrip>,
    moved: u64,
    stall_ns: u64,
) -> TensorTrips {
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
        bytes: tr.tensors.bytes_col()[t],
        oscillating: completed >= OSCILLATION_TRIPS,
        trips,
        bytes_moved: moved,
        stall_ns,
        evicted_by: by,
    }
}
