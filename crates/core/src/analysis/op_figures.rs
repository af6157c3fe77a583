//! What an op's hotspot row adds to the op's own fields in the trace: its
//! parts of the ledger and its allocations. An open trace keeps them for
//! every op, so they are columns, each as narrow as its largest value and
//! sparse where most ops have none (most ops evict nothing): 64 bytes per
//! op as a row of nine fields (240 MB for the 3.75 million ops of a
//! 10M-event trace), a few as columns (docs/memory.md has the figures).

use crate::cols::{Narrow, ZeroCol};
use crate::trace::ledger::{Ledger, Part};
use crate::trace::Trace;

/// One op's figures, as a row (made when a hotspot row is).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct OpFigures {
    pub(crate) evicted_bytes: u64,
    pub(crate) reloaded_bytes: u64,
    pub(crate) streamed_in_bytes: u64,
    pub(crate) streamed_out_bytes: u64,
    pub(crate) alloc_bytes: u64,
    pub(crate) peak_bytes: u64,
    pub(crate) evictions: u32,
    pub(crate) reloads: u32,
    pub(crate) allocs: u32,
}

impl OpFigures {
    /// The sum of the four spill parts (as [`crate::trace::ledger::Parts::traffic_bytes`]).
    pub(crate) fn traffic_bytes(&self) -> u64 {
        self.evicted_bytes
            .saturating_add(self.reloaded_bytes)
            .saturating_add(self.streamed_in_bytes)
            .saturating_add(self.streamed_out_bytes)
    }
}

/// The nine figures, as column indexes.
#[derive(Clone, Copy)]
enum Field {
    EvictedBytes,
    ReloadedBytes,
    StreamedInBytes,
    StreamedOutBytes,
    AllocBytes,
    PeakBytes,
    Evictions,
    Reloads,
    Allocs,
}

const FIELDS: usize = 9;

/// Every op's figures as columns, in op order.
#[derive(Debug, Clone, Default)]
pub(crate) struct FigureTable {
    cols: Vec<ZeroCol>,
    len: usize,
}

impl FigureTable {
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Op `i`'s figures. Panics when `i` is out of range, like indexing.
    pub(crate) fn at(&self, i: usize) -> OpFigures {
        assert!(i < self.len, "op {i} of {}", self.len);
        let f = |k: Field| self.cols[k as usize].get(i);
        let count = |k: Field| f(k).min(u64::from(u32::MAX)) as u32;
        OpFigures {
            evicted_bytes: f(Field::EvictedBytes),
            reloaded_bytes: f(Field::ReloadedBytes),
            streamed_in_bytes: f(Field::StreamedInBytes),
            streamed_out_bytes: f(Field::StreamedOutBytes),
            alloc_bytes: f(Field::AllocBytes),
            peak_bytes: f(Field::PeakBytes),
            evictions: count(Field::Evictions),
            reloads: count(Field::Reloads),
            allocs: count(Field::Allocs),
        }
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        self.cols.iter().map(ZeroCol::heap_bytes).sum()
    }
}

/// The figures while they are summed: dense columns, one byte per op
/// until a sum needs more.
struct Summing {
    cols: Vec<Narrow>,
}

impl Summing {
    fn new(n: usize) -> Summing {
        Summing {
            cols: (0..FIELDS).map(|_| Narrow::zeros(n)).collect(),
        }
    }

    /// Adds `d` to op `o`'s `k` (an op past the table is not one of the
    /// trace's: left out, as a row would be).
    fn add(&mut self, o: usize, k: Field, d: u64) {
        let c = &mut self.cols[k as usize];
        if o < c.len() {
            c.set(o, c.get(o).saturating_add(d));
        }
    }

    fn part(&mut self, o: usize, part: Part, bytes: u64) {
        let (count, total) = match part {
            Part::EvictedOut => (Some(Field::Evictions), Field::EvictedBytes),
            Part::Reloaded => (Some(Field::Reloads), Field::ReloadedBytes),
            Part::StreamedIn => (None, Field::StreamedInBytes),
            Part::StreamedOut => (None, Field::StreamedOutBytes),
            Part::Weights | Part::InputLoads => return,
        };
        self.add(o, total, bytes);
        if let Some(c) = count {
            self.add(o, c, 1);
        }
    }

    /// Each column in its smaller form, one at a time (so the dense and
    /// the sparse copy of only one column are held together).
    fn finish(self, len: usize) -> FigureTable {
        FigureTable {
            cols: self.cols.into_iter().map(ZeroCol::of).collect(),
            len,
        }
    }
}

/// Every op's [`OpFigures`], in op order: one pass over the ledger, two
/// over the events.
pub(crate) fn op_figures(tr: &Trace, ledger: &Ledger) -> FigureTable {
    let n = tr.ops.len();
    let mut s = Summing::new(n);
    ledger.each(tr, |part, _tensor, op, bytes| {
        if let Some(o) = op {
            s.part(o, part, bytes);
        }
    });
    memory_by_op(tr, &mut s);
    s.finish(n)
}

/// Per op: the allocations naming it, and the bytes of them still live at
/// the first instant live bytes (allocations minus frees, all pools) peak.
/// Two passes over the events (in time order), no per-event search.
fn memory_by_op(tr: &Trace, out: &mut Summing) {
    use crate::trace::EventKind;
    // Pass 1: where the peak is (the number of events up to it).
    let (mut live, mut peak, mut upto) = (0i128, 0i128, 0usize);
    // Weights (initializers) are not live tensors: left out, as from the
    // peak of live bytes.
    let weight = |t: usize| {
        tr.tensors
            .get(t)
            .is_some_and(|x| x.kind == crate::trace::TensorKind::Weight)
    };
    for (i, e) in tr.events.iter().enumerate() {
        if weight(e.tensor) {
            continue;
        }
        match e.kind {
            EventKind::Alloc => {
                live += e.bytes as i128;
                if let Some(o) = e.op {
                    out.add(o, Field::AllocBytes, e.bytes);
                    out.add(o, Field::Allocs, 1);
                }
            }
            EventKind::Free => live -= e.bytes as i128,
            _ => continue,
        }
        if live > peak {
            (peak, upto) = (live, i + 1);
        }
    }
    let frees = tr.events.iter().any(|e| e.kind == EventKind::Free);
    if !frees {
        return;
    }
    // Pass 2: which allocations are live there, and whose they are.
    let mut holder: std::collections::HashMap<usize, (u64, Option<usize>)> = Default::default();
    for e in tr.events.range(0..upto).filter(|e| !weight(e.tensor)) {
        match e.kind {
            EventKind::Alloc => {
                holder.insert(e.tensor, (e.bytes, e.op));
            }
            EventKind::Free => {
                holder.remove(&e.tensor);
            }
            _ => {}
        }
    }
    for (bytes, op) in holder.into_values() {
        if let Some(o) = op {
            out.add(o, Field::PeakBytes, bytes);
        }
    }
}
