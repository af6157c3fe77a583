//! A trace's memory events held as columns (struct of arrays): one vector
//! per field, pool names and reasons interned in a dictionary, optional
//! fields stored only once some event carries them, and every number in
//! the narrowest width its largest value fits ([`Narrow`]). An event costs
//! what its fields cost and nothing per event on the heap:
//!
//! | column                      | bytes per event                            |
//! |-----------------------------|--------------------------------------------|
//! | `t_ns`                      | 4 while the run is under 4.29 s, else 8    |
//! | `bytes`                     | 4 while every size is under 4 GiB, else 8  |
//! | `kind`                      | 1                                          |
//! | `tensor`, `op`              | 4 each (`op`: `u32::MAX` for none)         |
//! | `pool`, `reason`            | 1 each while under 256 names (dictionary ids; 0 = no reason) |
//! | each optional field         | 0 until one event has it, then 3/16, and 1-8 (its width) per event that has it |
//!
//! A simulator's trace (offsets, DMA times, live bytes, written bytes) runs
//! at about 27 bytes per event (measured: 32.0 MB for the 1,166,701 events
//! of `gen trace --events 1000000`; 49 with every number in 8 bytes and
//! the ids in 4, 74 while an optional field cost 8 bytes on every event);
//! the row vector it replaces held 192 bytes
//! per event (plus a heap string for every pool name past 24 bytes). Rows are read as
//! [`Event`] values ([`Events::at`], [`Events::iter`]); the JSON is the same
//! array of objects as before, written and read row by row, so no reader
//! ever holds a vector of rows.

use super::{Event, EventKind};
use crate::cols::{Dictionary, Narrow, OptCol, Slab};
use compact_str::CompactString;
use serde::ser::SerializeSeq;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// No op (the `op` column's spelling of `None`).
const NO_OP: u32 = u32::MAX;

/// The largest tensor or op id the columns hold (`u32::MAX` is [`NO_OP`]).
pub const MAX_ID: usize = (u32::MAX - 1) as usize;

/// An id as its column holds it: one past [`MAX_ID`] is held as `MAX_ID`.
fn id32(v: usize) -> u32 {
    v.min(MAX_ID) as u32
}

/// An op reference as the `op` column holds it.
fn op32(o: Option<usize>) -> u32 {
    o.map_or(NO_OP, id32)
}

/// One event, borrowed from the columns: [`Event`]'s fields, its pool and
/// reason borrowed (a row read copies no string, so a replay of every
/// event costs what its columns do).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct EventRef<'a> {
    pub t_ns: u64,
    pub kind: EventKind,
    pub tensor: usize,
    pub bytes: u64,
    pub pool: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offset: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub op: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dma_start_ns: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dma_end_ns: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thread: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub live_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub written_bytes: Option<u64>,
}

impl EventRef<'_> {
    /// The event as an owned row (to change it and push or set it back).
    pub fn owned(&self) -> Event {
        Event {
            t_ns: self.t_ns,
            kind: self.kind,
            tensor: self.tensor,
            bytes: self.bytes,
            pool: CompactString::from(self.pool),
            offset: self.offset,
            op: self.op,
            dma_start_ns: self.dma_start_ns,
            dma_end_ns: self.dma_end_ns,
            thread: self.thread,
            live_bytes: self.live_bytes,
            reason: self.reason.map(CompactString::from),
            written_bytes: self.written_bytes,
        }
    }
}

impl PartialEq<Event> for EventRef<'_> {
    fn eq(&self, e: &Event) -> bool {
        *self == e.row()
    }
}

impl Event {
    /// The row borrowed as the columns lend it.
    pub fn row(&self) -> EventRef<'_> {
        EventRef {
            t_ns: self.t_ns,
            kind: self.kind,
            tensor: self.tensor,
            bytes: self.bytes,
            pool: &self.pool,
            offset: self.offset,
            op: self.op,
            dma_start_ns: self.dma_start_ns,
            dma_end_ns: self.dma_end_ns,
            thread: self.thread,
            live_bytes: self.live_bytes,
            reason: self.reason.as_deref(),
            written_bytes: self.written_bytes,
        }
    }
}

/// The one list of the dense columns (one value per event): calls a
/// method on each, sums a function of each, or replaces each by a function
/// of it, so a column added here is reserved, truncated, shrunk, sorted and
/// counted everywhere.
macro_rules! each_dense {
    ($s:expr, $m:ident($($a:expr),*)) => {{
        $s.t_ns.$m($($a),*);
        $s.kind.$m($($a),*);
        $s.tensor.$m($($a),*);
        $s.bytes.$m($($a),*);
        $s.pool.$m($($a),*);
        $s.op.$m($($a),*);
        $s.reason.$m($($a),*);
    }};
    ($s:expr, sum $f:ident) => {
        $f(&$s.t_ns) + $f(&$s.kind) + $f(&$s.tensor) + $f(&$s.bytes)
            + $f(&$s.pool) + $f(&$s.op) + $f(&$s.reason)
    };
    ($s:expr, replace $f:ident($($a:expr),*)) => {{
        $s.t_ns = $f(&$s.t_ns, $($a),*);
        $s.kind = $f(&$s.kind, $($a),*);
        $s.tensor = $f(&$s.tensor, $($a),*);
        $s.bytes = $f(&$s.bytes, $($a),*);
        $s.pool = $f(&$s.pool, $($a),*);
        $s.op = $f(&$s.op, $($a),*);
        $s.reason = $f(&$s.reason, $($a),*);
    }};
}

/// What the dense columns have in common, whether plain vectors or
/// [`Narrow`] ones.
trait Dense: Sized {
    /// Heap bytes the column's capacity holds.
    fn heap(&self) -> usize;
    /// The column's values in `order`.
    fn gather(&self, order: &[u32]) -> Self;
}

impl<T: Copy> Dense for Vec<T> {
    fn heap(&self) -> usize {
        self.capacity() * std::mem::size_of::<T>()
    }
    fn gather(&self, order: &[u32]) -> Vec<T> {
        order.iter().map(|&i| self[i as usize]).collect()
    }
}

impl<T: crate::cols::Plain> Dense for Slab<T> {
    fn heap(&self) -> usize {
        self.capacity() * std::mem::size_of::<T>()
    }
    fn gather(&self, order: &[u32]) -> Slab<T> {
        order.iter().map(|&i| self[i as usize]).collect()
    }
}

impl Dense for Narrow {
    fn heap(&self) -> usize {
        self.heap_bytes()
    }
    fn gather(&self, order: &[u32]) -> Narrow {
        Narrow::gather(self, order)
    }
}

fn heap(c: &impl Dense) -> usize {
    c.heap()
}

fn gather<C: Dense>(c: &C, order: &[u32]) -> C {
    c.gather(order)
}

/// A trace's events, in trace order (see the module's doc).
#[derive(Clone, Default)]
pub struct Events {
    t_ns: Narrow,
    kind: Vec<EventKind>,
    tensor: Slab<u32>,
    bytes: Narrow,
    pool: Narrow,
    op: Slab<u32>,
    reason: Narrow,
    offset: OptCol,
    dma_start_ns: OptCol,
    dma_end_ns: OptCol,
    thread: OptCol,
    live_bytes: OptCol,
    written_bytes: OptCol,
    dict: Dictionary,
}

impl Events {
    pub fn new() -> Events {
        Events::default()
    }

    pub fn with_capacity(n: usize) -> Events {
        let mut e = Events::new();
        e.reserve_exact(n);
        e
    }

    pub fn len(&self) -> usize {
        self.t_ns.len()
    }

    /// Whether the dense id columns are read in place from a mapping.
    #[cfg(test)]
    pub(crate) fn is_mapped(&self) -> bool {
        self.tensor.is_mapped() && self.op.is_mapped()
    }

    pub fn is_empty(&self) -> bool {
        self.t_ns.is_empty()
    }

    /// Room for `n` more events in the dense columns (exactly, so a
    /// simulation sized up front holds no slack).
    pub fn reserve_exact(&mut self, n: usize) {
        each_dense!(self, reserve_exact(n));
    }

    /// Events the dense columns hold room for.
    pub fn capacity(&self) -> usize {
        self.t_ns.capacity()
    }

    /// Appends an event. A tensor or op id past [`MAX_ID`] cannot be held
    /// and is refused (no trace has that many: the reference would dangle
    /// anyway).
    pub fn try_push(&mut self, e: &Event) -> Result<(), String> {
        if e.tensor > MAX_ID {
            return Err(format!(
                "event refers to tensor {}, past 2^32 - 2",
                e.tensor
            ));
        }
        if let Some(o) = e.op.filter(|&o| o > MAX_ID) {
            return Err(format!("event refers to op {o}, past 2^32 - 2"));
        }
        self.push_row(e);
        Ok(())
    }

    /// Appends an event built in this process, whose ids are in range by
    /// construction (an id past [`MAX_ID`] is held as `MAX_ID`, a dangling
    /// reference [`super::Trace::check_refs`] reports).
    pub fn push(&mut self, e: Event) {
        self.push_row(&e);
    }

    fn push_row(&mut self, e: &Event) {
        let pool = self.dict.id(&e.pool);
        let reason = e.reason.as_deref().map_or(0, |r| self.dict.id(r));
        self.push_with(&e.row(), pool, reason);
    }

    /// Appends an event read by the plain reader, whose pool and reason
    /// are the text's bytes; `None` (nothing appended) when a name is not
    /// UTF-8 or an id past [`MAX_ID`] (serde's path says which).
    pub(crate) fn push_raw(
        &mut self,
        e: &EventRef<'_>,
        pool: &[u8],
        reason: Option<&[u8]>,
    ) -> Option<()> {
        if e.tensor > MAX_ID || e.op.is_some_and(|o| o > MAX_ID) {
            return None;
        }
        let pool = self.dict.id_bytes(pool)?;
        let reason = match reason {
            Some(r) => self.dict.id_bytes(r)?,
            None => 0,
        };
        self.push_with(e, pool, reason);
        Some(())
    }

    /// Appends `e` with its pool and reason as dictionary ids.
    fn push_with(&mut self, e: &EventRef<'_>, pool: u32, reason: u32) {
        let i = self.len();
        self.t_ns.push(e.t_ns);
        self.kind.push(e.kind);
        self.tensor.push(id32(e.tensor));
        self.bytes.push(e.bytes);
        self.pool.push(u64::from(pool));
        self.op.push(op32(e.op));
        self.reason.push(u64::from(reason));
        self.offset.push(i, e.offset);
        self.dma_start_ns.push(i, e.dma_start_ns);
        self.dma_end_ns.push(i, e.dma_end_ns);
        self.thread.push(i, e.thread);
        self.live_bytes.push(i, e.live_bytes);
        self.written_bytes.push(i, e.written_bytes);
    }

    /// Appends `other`'s events after these (a part of the events array
    /// parsed on its own: the reader parses runs of a file in parallel and
    /// appends them in file order).
    pub fn append(&mut self, other: &Events) {
        let rows = self.len();
        let map = self.dict.ids_of(&other.dict);
        self.t_ns.append(&other.t_ns);
        self.kind.extend_from_slice(&other.kind);
        self.tensor.extend_from_slice(&other.tensor);
        self.bytes.append(&other.bytes);
        self.op.extend_from_slice(&other.op);
        for (mine, theirs) in [
            (&mut self.pool, &other.pool),
            (&mut self.reason, &other.reason),
        ] {
            mine.reserve_exact(theirs.len());
            for id in theirs.iter() {
                mine.push(u64::from(map[id as usize]));
            }
        }
        for (mine, theirs) in self.opt_cols_mut().into_iter().zip(other.opt_cols()) {
            mine.append(rows, theirs);
        }
    }

    /// Event `i` as a row. Panics when `i` is out of range, like indexing.
    pub fn at(&self, i: usize) -> EventRef<'_> {
        let op = self.op[i];
        let reason = self.reason.get(i) as u32;
        EventRef {
            t_ns: self.t_ns.get(i),
            kind: self.kind[i],
            tensor: self.tensor[i] as usize,
            bytes: self.bytes.get(i),
            pool: self.dict.name(self.pool_id(i)),
            offset: self.offset.get(i),
            op: (op != NO_OP).then_some(op as usize),
            dma_start_ns: self.dma_start_ns.get(i),
            dma_end_ns: self.dma_end_ns.get(i),
            thread: self.thread.get(i),
            live_bytes: self.live_bytes.get(i),
            reason: (reason != 0).then(|| self.dict.name(reason)),
            written_bytes: self.written_bytes.get(i),
        }
    }

    pub fn get(&self, i: usize) -> Option<EventRef<'_>> {
        (i < self.len()).then(|| self.at(i))
    }

    pub fn last(&self) -> Option<EventRef<'_>> {
        self.len().checked_sub(1).map(|i| self.at(i))
    }

    /// Replaces event `i` (same rules as [`Events::push`]).
    pub fn set(&mut self, i: usize, e: &Event) {
        self.t_ns.set(i, e.t_ns);
        self.kind[i] = e.kind;
        self.tensor[i] = id32(e.tensor);
        self.bytes.set(i, e.bytes);
        let pool = self.dict.id(&e.pool);
        self.pool.set(i, u64::from(pool));
        self.op[i] = op32(e.op);
        let reason = e.reason.as_deref().map_or(0, |r| self.dict.id(r));
        self.reason.set(i, u64::from(reason));
        self.offset.set(i, e.offset);
        self.dma_start_ns.set(i, e.dma_start_ns);
        self.dma_end_ns.set(i, e.dma_end_ns);
        self.thread.set(i, e.thread);
        self.live_bytes.set(i, e.live_bytes);
        self.written_bytes.set(i, e.written_bytes);
    }

    /// Changes event `i` through its row.
    pub fn update(&mut self, i: usize, f: impl FnOnce(&mut Event)) {
        let mut e = self.at(i).owned();
        f(&mut e);
        self.set(i, &e);
    }

    /// Changes the last event through its row (nothing when empty).
    pub fn update_last(&mut self, f: impl FnOnce(&mut Event)) {
        if let Some(i) = self.len().checked_sub(1) {
            self.update(i, f);
        }
    }

    /// Changes every event's op (the one column rewritten in bulk: folding
    /// nested calls renumbers ops).
    pub fn map_ops(&mut self, mut f: impl FnMut(usize) -> Option<usize>) {
        for o in self.op.iter_mut() {
            let old = (*o != NO_OP).then_some(*o as usize);
            *o = op32(old.and_then(&mut f));
        }
    }

    /// Changes every event's tensor (a stream window renumbers the tensors
    /// it keeps). `f` must map every tensor an event refers to.
    pub fn map_tensors(&mut self, mut f: impl FnMut(usize) -> usize) {
        for t in self.tensor.iter_mut() {
            *t = id32(f(*t as usize));
        }
    }

    /// Keeps only the events at `rows` (increasing indices), in that order:
    /// what a stream window keeps when older events fall out of it.
    pub fn retain_rows(&mut self, rows: &[u32]) {
        debug_assert!(rows.is_sorted());
        each_dense!(self, replace gather(rows));
        for c in self.opt_cols_mut() {
            *c = c.gather(rows);
        }
    }

    /// Moves every time `t0` earlier (a runtime's clock to the trace's
    /// zero), clamped at 0.
    pub fn shift_times(&mut self, t0: u64) {
        self.t_ns.map(|t| t.saturating_sub(t0));
        for c in [&mut self.dma_start_ns, &mut self.dma_end_ns] {
            c.vals.map(|t| t.saturating_sub(t0));
        }
    }

    pub fn truncate(&mut self, n: usize) {
        each_dense!(self, truncate(n));
        for c in self.opt_cols_mut() {
            c.truncate(n);
        }
    }

    /// The events in time order, ties kept in the order they came (a
    /// stable sort by `t_ns`); nothing moves when already sorted.
    pub fn sort_by_time(&mut self) {
        if self.t_ns.is_sorted() {
            return;
        }
        let mut order: Vec<u32> = (0..self.len() as u32).collect();
        order.sort_by_key(|&i| self.t_ns.get(i as usize));
        each_dense!(self, replace gather(&order));
        for c in self.opt_cols_mut() {
            *c = c.gather(&order);
        }
    }

    fn opt_cols_mut(&mut self) -> [&mut OptCol; 6] {
        [
            &mut self.offset,
            &mut self.dma_start_ns,
            &mut self.dma_end_ns,
            &mut self.thread,
            &mut self.live_bytes,
            &mut self.written_bytes,
        ]
    }

    fn opt_cols(&self) -> [&OptCol; 6] {
        [
            &self.offset,
            &self.dma_start_ns,
            &self.dma_end_ns,
            &self.thread,
            &self.live_bytes,
            &self.written_bytes,
        ]
    }

    /// Gives back the columns' unused room (after loading).
    pub fn shrink_to_fit(&mut self) {
        each_dense!(self, shrink_to_fit());
        for c in self.opt_cols_mut() {
            c.shrink();
        }
    }

    /// Heap bytes the columns hold (their capacity; the dictionary's names
    /// estimated at 64 bytes each): the figure docs/memory.md quotes per
    /// event.
    pub fn heap_bytes(&self) -> usize {
        let opt: usize = self.opt_cols().iter().map(|c| c.heap_bytes()).sum();
        each_dense!(self, sum heap) + opt + self.dict.names.len() * 64
    }

    pub fn iter(&self) -> Iter<'_> {
        Iter {
            ev: self,
            at: 0,
            end: self.len(),
        }
    }

    /// Events `r` as rows (a range of the columns, nothing copied).
    pub fn range(&self, r: std::ops::Range<usize>) -> Iter<'_> {
        let end = r.end.min(self.len());
        Iter {
            ev: self,
            at: r.start.min(end),
            end,
        }
    }

    /// Event `i`'s time.
    #[inline]
    pub fn t_ns(&self, i: usize) -> u64 {
        self.t_ns.get(i)
    }
    /// Every event's time, in order.
    pub fn times(&self) -> impl ExactSizeIterator<Item = u64> + DoubleEndedIterator + '_ {
        self.t_ns.iter()
    }
    /// The first event whose time is not `pred` (the events are in time
    /// order, so this is a binary search).
    pub fn partition_time(&self, pred: impl Fn(u64) -> bool) -> usize {
        self.t_ns.partition_point(pred)
    }
    /// Every event's size, in order.
    pub fn sizes(&self) -> impl ExactSizeIterator<Item = u64> + '_ {
        self.bytes.iter()
    }
    /// The latest time any event carries (its own, or its DMA's).
    pub fn max_time_ns(&self) -> u64 {
        let cols = [&self.t_ns, &self.dma_start_ns.vals, &self.dma_end_ns.vals];
        cols.iter().flat_map(|c| c.max()).max().unwrap_or(0)
    }
    /// The latest time an event ends: its DMA's end where it has one, else
    /// its own time.
    pub fn max_end_ns(&self) -> u64 {
        let ends = &self.dma_end_ns;
        if ends.vals.is_empty() {
            return self.t_ns.max().unwrap_or(0);
        }
        self.t_ns
            .iter()
            .zip(ends.rows(0, self.len()))
            .map(|(t, e)| e.unwrap_or(t))
            .max()
            .unwrap_or(0)
    }
    /// The largest tensor id an event refers to.
    pub fn max_tensor(&self) -> Option<usize> {
        self.tensor.iter().max().map(|&t| t as usize)
    }
    /// The largest op id an event refers to.
    pub fn max_op(&self) -> Option<usize> {
        self.op
            .iter()
            .filter(|&&o| o != NO_OP)
            .max()
            .map(|&o| o as usize)
    }
    /// The tensor of event `i`.
    pub fn tensor(&self, i: usize) -> usize {
        self.tensor[i] as usize
    }
    /// The op event `i` happened in, where known.
    pub fn op(&self, i: usize) -> Option<usize> {
        let o = self.op[i];
        (o != NO_OP).then_some(o as usize)
    }
    /// The kind of event `i`.
    pub fn kind(&self, i: usize) -> EventKind {
        self.kind[i]
    }
    /// Every event's kind, in order (a column: no row built).
    pub fn kinds(&self) -> &[EventKind] {
        &self.kind
    }
    /// Whether some event says where it placed its tensor (the column is
    /// kept only once one does).
    pub fn has_offsets(&self) -> bool {
        !self.offset.vals.is_empty()
    }
    /// The size of event `i`.
    pub fn bytes(&self, i: usize) -> u64 {
        self.bytes.get(i)
    }
    /// Event `i`'s DMA transfer `(start, end)`, where it has both times.
    pub fn dma(&self, i: usize) -> Option<(u64, u64)> {
        Some((self.dma_start_ns.get(i)?, self.dma_end_ns.get(i)?))
    }
    /// Where event `i` placed its tensor, where known.
    pub fn offset(&self, i: usize) -> Option<u64> {
        self.offset.get(i)
    }
    /// What event `i` wrote back, where it says.
    pub fn written_bytes(&self, i: usize) -> Option<u64> {
        self.written_bytes.get(i)
    }
    /// Whether event `i` has a DMA transfer (a start time).
    pub fn has_dma(&self, i: usize) -> bool {
        self.dma_start_ns.has(i)
    }
    /// Every event's DMA flag and written bytes, in order, in one pass (a
    /// lookup per event cost a rank each).
    pub(crate) fn dma_and_written(&self) -> impl Iterator<Item = (bool, Option<u64>)> + '_ {
        let n = self.len();
        let dma = (0..n).map(|i| self.dma_start_ns.has(i));
        dma.zip(self.written_bytes.rows(0, n))
    }
    /// The id of event `i`'s pool name ([`Events::name_of`] spells it):
    /// the same id for the same name, for loops that tally per pool.
    pub fn pool_id(&self, i: usize) -> u32 {
        self.pool.get(i) as u32
    }
    /// The name with id `id` (pool names and reasons).
    pub fn name_of(&self, id: u32) -> &str {
        self.dict.name(id)
    }
    /// The pool name of event `i`.
    pub fn pool(&self, i: usize) -> &str {
        self.dict.name(self.pool_id(i))
    }
}

/// Events as rows, in order.
#[derive(Clone)]
pub struct Iter<'a> {
    ev: &'a Events,
    at: usize,
    end: usize,
}

impl<'a> Iterator for Iter<'a> {
    type Item = EventRef<'a>;
    fn next(&mut self) -> Option<EventRef<'a>> {
        (self.at < self.end).then(|| {
            self.at += 1;
            self.ev.at(self.at - 1)
        })
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.end - self.at;
        (n, Some(n))
    }
    fn nth(&mut self, n: usize) -> Option<EventRef<'a>> {
        self.at = self.at.saturating_add(n).min(self.end);
        self.next()
    }
}

impl<'a> DoubleEndedIterator for Iter<'a> {
    fn next_back(&mut self) -> Option<EventRef<'a>> {
        (self.at < self.end).then(|| {
            self.end -= 1;
            self.ev.at(self.end)
        })
    }
}

impl ExactSizeIterator for Iter<'_> {}

impl<'a> IntoIterator for &'a Events {
    type Item = EventRef<'a>;
    type IntoIter = Iter<'a>;
    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

impl FromIterator<Event> for Events {
    fn from_iter<I: IntoIterator<Item = Event>>(it: I) -> Events {
        let mut ev = Events::new();
        ev.extend(it);
        ev
    }
}

impl Extend<Event> for Events {
    fn extend<I: IntoIterator<Item = Event>>(&mut self, it: I) {
        for e in it {
            self.push(e);
        }
    }
}

impl From<Vec<Event>> for Events {
    fn from(v: Vec<Event>) -> Events {
        let mut ev = Events::with_capacity(v.len());
        ev.extend(v);
        ev
    }
}

/// Equal when the rows are (how the columns are laid out does not count).
impl PartialEq for Events {
    fn eq(&self, other: &Events) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl std::fmt::Debug for Events {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// The tag a kind is held as in the binary columns.
fn kind_tag(k: EventKind) -> u8 {
    match k {
        EventKind::Alloc => 0,
        EventKind::Free => 1,
        EventKind::Evict => 2,
        EventKind::Reload => 3,
        EventKind::Recompute => 4,
        EventKind::StreamIn => 5,
        EventKind::StreamOut => 6,
    }
}

fn kind_of(tag: u8) -> Option<EventKind> {
    Some(match tag {
        0 => EventKind::Alloc,
        1 => EventKind::Free,
        2 => EventKind::Evict,
        3 => EventKind::Reload,
        4 => EventKind::Recompute,
        5 => EventKind::StreamIn,
        6 => EventKind::StreamOut,
        _ => return None,
    })
}

/// The columns as bytes ([`super::columnar`]): each column as it is held,
/// so writing and reading them is a copy.
impl Events {
    pub(super) fn encode<W: std::io::Write>(
        &self,
        w: &mut super::columnar::Writer<W>,
    ) -> std::io::Result<()> {
        let n = self.len();
        w.u64s(1, std::iter::once(n as u64))?;
        w.narrow(&self.t_ns)?;
        w.u8s(n, self.kind.iter().map(|&k| kind_tag(k)))?;
        w.u32s(n, self.tensor.iter().copied())?;
        w.narrow(&self.bytes)?;
        w.narrow(&self.pool)?;
        w.u32s(n, self.op.iter().copied())?;
        w.narrow(&self.reason)?;
        for c in self.opt_cols() {
            w.opt_col(c, n)?;
        }
        w.dict(&self.dict)
    }

    pub(super) fn decode(r: &mut super::columnar::Reader) -> Result<Events, String> {
        let n = r.count("events")?;
        let t_ns = r.narrow(Some(n), "event times")?;
        let kind = r.tags(n, "event kinds", kind_of)?;
        let tensor = r.u32s(n, "event tensors")?;
        let bytes = r.narrow(Some(n), "event sizes")?;
        let pool = r.narrow(Some(n), "event pools")?;
        let op = r.u32s(n, "event ops")?;
        let reason = r.narrow(Some(n), "event reasons")?;
        let mut opt = Vec::with_capacity(6);
        for what in [
            "offset",
            "dma_start_ns",
            "dma_end_ns",
            "thread",
            "live_bytes",
            "written_bytes",
        ] {
            opt.push(r.opt_col(n, &format!("event {what}"))?);
        }
        let dict = r.dict("event names")?;
        let k = dict.len();
        if let Some(bad) = pool.iter().chain(reason.iter()).find(|&i| i >= k as u64) {
            return Err(format!("event pools or reasons: name {bad} of {k}"));
        }
        let mut opt = opt.into_iter();
        let mut next = || opt.next().unwrap_or_default();
        Ok(Events {
            t_ns,
            kind,
            tensor,
            bytes,
            pool,
            op,
            reason,
            offset: next(),
            dma_start_ns: next(),
            dma_end_ns: next(),
            thread: next(),
            live_bytes: next(),
            written_bytes: next(),
            dict,
        })
    }
}

impl Serialize for Events {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.len()))?;
        for e in self {
            seq.serialize_element(&e)?;
        }
        seq.end()
    }
}

impl crate::cols::PushRows for Events {
    type Row = Event;
    fn push_row(&mut self, e: Event) -> Result<(), String> {
        self.try_push(&e)
            .map_err(|m| format!("event {}: {m}", self.len()))
    }
}

/// Reads the JSON array one event at a time into the columns.
impl<'de> Deserialize<'de> for Events {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Events, D::Error> {
        use serde::de::DeserializeSeed;
        let mut ev = Events::new();
        crate::cols::Onto {
            list: &mut ev,
            what: "an array of events",
        }
        .deserialize(d)?;
        ev.shrink_to_fit();
        Ok(ev)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(t: u64, kind: EventKind, tensor: usize) -> Event {
        Event::plain(t, kind, tensor, 64, "sram")
    }

    #[test]
    fn rows_come_back_as_pushed_with_optional_fields_from_any_point() {
        let mut rows = Vec::new();
        for i in 0..200usize {
            let mut e = ev(i as u64, EventKind::Alloc, i);
            if i >= 70 && i % 3 == 0 {
                e.offset = Some(i as u64 * 8);
                e.reason = Some("capacity".into());
                e.op = Some(i / 2);
            }
            if i == 199 {
                e.pool = "a-pool-name-longer-than-twenty-four-bytes".into();
                e.written_bytes = Some(0);
            }
            rows.push(e);
        }
        let ev: Events = rows.clone().into();
        assert_eq!(ev.len(), 200);
        assert!(ev.iter().eq(rows.iter().cloned()));
        assert_eq!(
            ev.iter().next_back().map(|e| e.owned()),
            rows.last().cloned()
        );
        assert_eq!(
            ev.range(70..73).map(|e| e.offset).collect::<Vec<_>>(),
            vec![None, None, Some(576)]
        );
        let json = serde_json::to_string(&ev).unwrap();
        assert_eq!(json, serde_json::to_string(&rows).unwrap());
        let back: Events = serde_json::from_str(&json).unwrap();
        assert_eq!(back, ev);
    }

    #[test]
    fn set_truncate_and_sort_keep_rows_whole() {
        let mut ev: Events = (0..130u64)
            .map(|i| ev((130 - i) / 2, EventKind::Free, i as usize))
            .collect();
        ev.update(5, |e| e.dma_end_ns = Some(9));
        assert_eq!(ev.at(5).dma_end_ns, Some(9));
        ev.update(5, |e| e.dma_end_ns = None);
        assert_eq!(ev.at(5).dma_end_ns, None);
        ev.update(128, |e| e.thread = Some(3));
        ev.truncate(129);
        assert_eq!(ev.at(128).thread, Some(3));
        let before: Vec<Event> = ev.iter().map(|e| e.owned()).collect();
        ev.sort_by_time();
        assert!(ev.times().is_sorted());
        let mut want = before.clone();
        want.sort_by_key(|e| e.t_ns);
        assert!(ev.iter().eq(want));
        ev.truncate(64);
        ev.update_last(|e| e.live_bytes = Some(1));
        assert_eq!(ev.last().and_then(|e| e.live_bytes), Some(1));
    }

    fn arb_event() -> impl proptest::strategy::Strategy<Value = Event> {
        use proptest::prelude::*;
        let opt = || proptest::option::of(0u64..1 << 40);
        (
            (0u64..50, 0usize..7, 0usize..1000, 0u64..1 << 30, 0usize..3),
            (
                opt(),
                proptest::option::of(0usize..500),
                opt(),
                opt(),
                opt(),
            ),
            (opt(), proptest::option::of(0usize..3), opt()),
        )
            .prop_map(
                |((t, k, tensor, bytes, pool), (offset, op, ds, de, th), (live, r, w))| {
                    let kinds = [
                        EventKind::Alloc,
                        EventKind::Free,
                        EventKind::Evict,
                        EventKind::Reload,
                        EventKind::Recompute,
                        EventKind::StreamIn,
                        EventKind::StreamOut,
                    ];
                    Event {
                        t_ns: t,
                        kind: kinds[k],
                        tensor,
                        bytes,
                        pool: ["sram", "l1", "a-pool-name-longer-than-twenty-four-bytes"][pool]
                            .into(),
                        offset,
                        op,
                        dma_start_ns: ds,
                        dma_end_ns: de,
                        thread: th,
                        live_bytes: live,
                        reason: r.map(|i| ["capacity", "prefetch", "in-place"][i].into()),
                        written_bytes: w,
                    }
                },
            )
    }

    proptest::proptest! {
        /// Any rows survive the columns, their JSON, a stable time sort and
        /// a truncation exactly as a vector of rows does.
        #[test]
        fn columns_hold_any_rows_as_a_vector_does(
            rows in proptest::collection::vec(arb_event(), 0..300),
            cut in 0usize..300,
        ) {
            let mut ev: Events = rows.clone().into();
            proptest::prop_assert!(ev.iter().eq(rows.iter().cloned()));
            let json = serde_json::to_string(&ev).unwrap();
            proptest::prop_assert_eq!(&json, &serde_json::to_string(&rows).unwrap());
            proptest::prop_assert_eq!(&serde_json::from_str::<Events>(&json).unwrap(), &ev);
            let mut sorted = rows.clone();
            sorted.sort_by_key(|e| e.t_ns);
            ev.sort_by_time();
            proptest::prop_assert!(ev.iter().eq(sorted.iter().cloned()));
            ev.truncate(cut);
            sorted.truncate(cut);
            proptest::prop_assert!(ev.iter().eq(sorted.iter().cloned()));
            ev.extend(rows.iter().cloned());
            sorted.extend(rows.iter().cloned());
            proptest::prop_assert!(ev.iter().eq(sorted.into_iter()));
        }
    }

    #[test]
    fn an_id_past_u32_is_refused_on_read() {
        let big = r#"[{"t_ns":0,"kind":"alloc","tensor":4294967296,"bytes":1,"pool":"s"}]"#;
        let e = serde_json::from_str::<Events>(big).unwrap_err().to_string();
        assert!(
            e.contains("event 0: event refers to tensor 4294967296"),
            "{e}"
        );
    }
}
