//! A pre-aggregated, multi-resolution index of a trace's timeline, so a
//! frame at any zoom costs O(columns), never a walk over every event: a
//! pyramid of time buckets (each level halves the resolution) for wide views
//! and binary search over the sorted intervals for deep zoom. DMA time is
//! split into lanes by ledger part: evictions' write-backs, reloads,
//! streaming, and loads (weights and graph inputs, not spill).

use crate::trace::ledger::{Ledger, Part};
use crate::trace::Trace;
use std::sync::Arc;

/// A DMA lane of the timeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Lane {
    /// Write-backs of evicted tensors.
    Evict,
    Reload,
    /// Operands streamed in or out by their op.
    Stream,
    /// Weight loads and graph inputs' compulsory loads (not spill).
    Weights,
}

impl Lane {
    pub const ALL: [Lane; 4] = [Lane::Evict, Lane::Reload, Lane::Stream, Lane::Weights];

    /// The lane a ledger part's transfers go to.
    pub fn of(part: Part) -> Lane {
        match part {
            Part::EvictedOut => Lane::Evict,
            Part::Reloaded => Lane::Reload,
            Part::StreamedIn | Part::StreamedOut => Lane::Stream,
            Part::Weights | Part::InputLoads => Lane::Weights,
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Lane::Evict => "evict",
            Lane::Reload => "reload",
            Lane::Stream => "stream",
            Lane::Weights => "weights",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// A spill event marker: which kind of spill event happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mark {
    Evict,
    Reload,
    Stream,
}

impl Mark {
    fn of(part: Part) -> Option<Mark> {
        match part {
            Part::EvictedOut => Some(Mark::Evict),
            Part::Reloaded => Some(Mark::Reload),
            Part::StreamedIn | Part::StreamedOut => Some(Mark::Stream),
            _ => None,
        }
    }
}

/// Activity inside one time bucket.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Bucket {
    pub compute_ns: u64,
    pub stall_ns: u64,
    /// Busy time per DMA lane.
    pub dma_ns: [u64; 4],
    /// Spill events: evictions, reloads, stream events.
    pub marks: [u32; 3],
    /// The op busiest in this bucket, and for how long.
    pub top_op: u32,
    pub top_op_ns: u64,
}

impl Bucket {
    fn merge(&mut self, o: &Bucket) {
        self.compute_ns += o.compute_ns;
        self.stall_ns += o.stall_ns;
        for (a, b) in self.dma_ns.iter_mut().zip(o.dma_ns) {
            *a += b;
        }
        for (a, b) in self.marks.iter_mut().zip(o.marks) {
            *a += b;
        }
        if o.top_op_ns > self.top_op_ns {
            self.top_op = o.top_op;
            self.top_op_ns = o.top_op_ns;
        }
    }
}

/// What one screen column shows: busy fractions (0..1) and counts.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Column {
    pub compute: f64,
    pub stall: f64,
    /// Busy fraction per DMA lane ([`Lane`] order).
    pub dma: [f64; 4],
    pub evicts: u32,
    pub reloads: u32,
    pub streams: u32,
    pub op: Option<usize>,
}

impl Column {
    pub fn lane(&self, l: Lane) -> f64 {
        self.dma[l.index()]
    }
}

/// 32 bytes: one per op and one per DMA transfer (a million of each in a
/// large trace).
#[derive(Debug, Clone, Copy)]
struct Span {
    start: u64,
    end: u64,
    stall: u64,
    /// op index for op spans; event index for DMA spans (`u32::MAX`: a
    /// stream derived from an op's list). Both fit: a trace's ids are
    /// checked below 2^32 when it is read.
    id: u32,
    lane: Lane,
}

const _: () = assert!(std::mem::size_of::<Span>() == 32);

/// An op's span, from the trace's time columns.
struct OpSpans<'a> {
    start: &'a [u64],
    end: &'a [u64],
    stall: &'a [u64],
}

impl<'a> OpSpans<'a> {
    fn of(tr: &'a Trace) -> OpSpans<'a> {
        OpSpans {
            start: tr.ops.start_col(),
            end: tr.ops.end_col(),
            stall: tr.ops.stall_col(),
        }
    }

    #[inline]
    fn at(&self, k: u32) -> Span {
        let i = k as usize;
        Span {
            start: self.start[i],
            end: self.end[i].max(self.start[i]),
            stall: self.stall[i],
            id: k,
            lane: Lane::Evict,
        }
    }
}

/// Whether an op from `start` to `end` is running at `t` (one of no
/// length runs at its start): what "the op at the cursor" means.
pub fn runs_at(start: u64, end: u64, t: u64) -> bool {
    start <= t && t < end.max(start + 1)
}

/// The index. Built once per trace (O(n + buckets)); queried per frame.
#[derive(Debug, Clone)]
pub struct TimelineIndex {
    pub end_ns: u64,
    base_ns: u64,
    levels: Vec<Vec<Bucket>>,
    /// Op indexes by start (then index); their times are the trace's
    /// columns, read when a deep zoom visits them (a span each held 32
    /// bytes of what the trace already holds: 12 MB for 375k ops).
    ops: Vec<u32>,
    ops_max_len: u64,
    /// The trace the ops' and events' times are read from (`None`: an
    /// empty index).
    trace: Option<Arc<Trace>>,
    /// Events with a DMA transfer by its start (then index), and each one's
    /// lane: 5 bytes a transfer where a span held 32 (its times are the
    /// events' columns, read when a deep zoom visits them).
    dma: Vec<u32>,
    dma_lane: Vec<Lane>,
    /// Streams derived from ops' `streamed` lists (traces from before
    /// stream events), by start: their op's span.
    derived: Vec<Span>,
    dma_max_len: u64,
    /// Every spill event (the ledger's spill parts: evictions, reloads,
    /// stream events) by time, as its event index, and its kind.
    spills: Vec<u32>,
    marks: Vec<Mark>,
    /// The derived streams' marks (time, kind), sorted.
    derived_points: Vec<(u64, Mark)>,
}

fn add_span(b: &mut [Bucket], base: u64, s: u64, e: u64, f: impl Fn(&mut Bucket, u64)) {
    if e <= s || b.is_empty() {
        return;
    }
    let last = b.len() - 1;
    let first = ((s / base) as usize).min(last);
    let lastb = (((e - 1) / base) as usize).min(last);
    for (i, bucket) in b.iter_mut().enumerate().take(lastb + 1).skip(first) {
        let bs = i as u64 * base;
        let be = if i == last { u64::MAX } else { bs + base };
        let ov = e.min(be).saturating_sub(s.max(bs));
        f(bucket, ov);
    }
}

impl TimelineIndex {
    pub fn build(tr: &Arc<Trace>, ledger: &Ledger) -> TimelineIndex {
        let mut end_ns = tr.summary.latency_ns;
        for o in &tr.ops {
            end_ns = end_ns.max(o.end_ns);
        }
        for e in &tr.events {
            end_ns = end_ns.max(e.dma_end_ns.unwrap_or(e.t_ns));
        }
        let end_ns = end_ns.max(1);
        let items = tr.ops.len() + tr.events.len();
        let n_base = items.clamp(256, 1 << 16).next_power_of_two();
        let base_ns = end_ns.div_ceil(n_base as u64).max(1);
        let mut base = vec![Bucket::default(); n_base];
        let op_span = OpSpans::of(tr);
        let mut ops: Vec<u32> = (0..tr.ops.len() as u32).collect();
        ops.sort_unstable_by_key(|&k| (op_span.at(k).start, k));
        for s in ops.iter().map(|&k| op_span.at(k)) {
            let dur = s.end - s.start;
            let frac_stall = if dur > 0 {
                s.stall.min(dur) as f64 / dur as f64
            } else {
                0.0
            };
            let id = s.id;
            add_span(&mut base, base_ns, s.start, s.end, |b, ov| {
                let st = (ov as f64 * frac_stall) as u64;
                b.stall_ns += st;
                b.compute_ns += ov - st;
                if ov > b.top_op_ns {
                    b.top_op_ns = ov;
                    b.top_op = id;
                }
            });
        }
        let ev = &tr.events;
        let mut dma: Vec<(u32, Lane)> = Vec::new();
        let mut spills: Vec<(u32, Mark)> = Vec::new();
        for (i, t) in ev.times().enumerate().take(u32::MAX as usize) {
            let Some(part) = ledger.part(i) else {
                continue;
            };
            if let Some(m) = Mark::of(part) {
                spills.push((i as u32, m));
                let b = ((t / base_ns) as usize).min(n_base - 1);
                base[b].marks[m as usize] += 1;
            }
            let lane = Lane::of(part);
            if let Some((s, en)) = ev.dma(i).filter(|(s, en)| en > s) {
                dma.push((i as u32, lane));
                add_span(&mut base, base_ns, s, en, |b, ov| {
                    b.dma_ns[lane.index()] += ov
                });
            }
        }
        // Streams derived from ops' `streamed` lists (traces from before
        // stream events) keep the bus busy during their op.
        let mut derived = Vec::new();
        let mut derived_points = Vec::new();
        for d in &ledger.derived_streams {
            let Some(o) = tr.ops.get(d.op) else { continue };
            if o.end_ns > o.start_ns {
                derived.push(Span {
                    start: o.start_ns,
                    end: o.end_ns,
                    id: u32::MAX,
                    stall: 0,
                    lane: Lane::Stream,
                });
                add_span(&mut base, base_ns, o.start_ns, o.end_ns, |b, ov| {
                    b.dma_ns[Lane::Stream.index()] += ov
                });
            }
            let b = ((o.start_ns / base_ns) as usize).min(n_base - 1);
            base[b].marks[Mark::Stream as usize] += 1;
            derived_points.push((o.start_ns, Mark::Stream));
        }
        // In place (a stable sort borrows half the list): ties are
        // identical spans or derived streams of different ops, ordered by
        // their end.
        let span_of = |i: u32| ev.dma(i as usize).unwrap_or_default();
        dma.sort_unstable_by_key(|&(i, lane)| {
            let (s, e) = span_of(i);
            (s, i, e, lane as u8)
        });
        spills.sort_unstable_by_key(|&(i, _)| (ev.t_ns(i as usize), i));
        derived.sort_unstable_by_key(|s| (s.start, s.end));
        derived_points.sort_unstable_by_key(|p| p.0);
        let (dma, dma_lane): (Vec<u32>, Vec<Lane>) = dma.into_iter().unzip();
        let (spills, marks): (Vec<u32>, Vec<Mark>) = spills.into_iter().unzip();
        let ops_max_len = ops
            .iter()
            .map(|&k| op_span.at(k))
            .map(|s| s.end.saturating_sub(s.start))
            .max()
            .unwrap_or(0);
        let dma_max_len = dma
            .iter()
            .map(|&i| span_of(i))
            .chain(derived.iter().map(|s| (s.start, s.end)))
            .map(|(s, e)| e.saturating_sub(s))
            .max()
            .unwrap_or(0);
        let mut levels = vec![base];
        while levels.last().map(|l| l.len()).unwrap_or(0) > 1 {
            let prev = levels.last().expect("non-empty");
            let next: Vec<Bucket> = prev
                .chunks(2)
                .map(|c| {
                    let mut b = c[0];
                    if let Some(o) = c.get(1) {
                        b.merge(o);
                    }
                    b
                })
                .collect();
            levels.push(next);
        }
        TimelineIndex {
            end_ns,
            base_ns,
            levels,
            ops,
            ops_max_len,
            trace: Some(tr.clone()),
            dma,
            dma_lane,
            derived,
            dma_max_len,
            spills,
            marks,
            derived_points,
        }
    }

    /// An index with no activity (a placeholder while the real one is built).
    pub fn build_empty(end_ns: u64) -> TimelineIndex {
        let base_ns = end_ns.max(1).div_ceil(256).max(1);
        let mut levels = vec![vec![Bucket::default(); 256]];
        while levels.last().map(|l| l.len()).unwrap_or(0) > 1 {
            let n = levels.last().map(|l| l.len() / 2).unwrap_or(0);
            levels.push(vec![Bucket::default(); n]);
        }
        TimelineIndex {
            end_ns: end_ns.max(1),
            base_ns,
            levels,
            ops: Vec::new(),
            ops_max_len: 0,
            trace: None,
            dma: Vec::new(),
            dma_lane: Vec::new(),
            derived: Vec::new(),
            dma_max_len: 0,
            spills: Vec::new(),
            marks: Vec::new(),
            derived_points: Vec::new(),
        }
    }

    /// Columns for the window `[t0, t1)` split into `width` columns.
    pub fn columns(&self, t0: u64, t1: u64, width: usize) -> Vec<Column> {
        let width = width.max(1);
        let t1 = t1.max(t0 + 1);
        let dt = ((t1 - t0) as f64 / width as f64).max(1e-9);
        let mut cols = vec![Column::default(); width];
        if dt >= self.base_ns as f64 {
            // Coarsest level whose bucket still fits in a column.
            let mut lvl = 0;
            while lvl + 1 < self.levels.len() && (self.base_ns << (lvl + 1)) as f64 <= dt {
                lvl += 1;
            }
            let bw = self.base_ns << lvl;
            let buckets = &self.levels[lvl];
            // Each bucket goes to exactly one column (by its midpoint).
            let mut acc = vec![Bucket::default(); width];
            let mut count = vec![0u64; width];
            let b0 = (t0 / bw) as usize;
            let b1 = (t1.div_ceil(bw) as usize).min(buckets.len());
            for (b, bucket) in buckets.iter().enumerate().take(b1).skip(b0) {
                let mid = b as f64 * bw as f64 + bw as f64 / 2.0;
                if mid < t0 as f64 || mid >= t1 as f64 {
                    continue;
                }
                let c = (((mid - t0 as f64) / dt) as usize).min(width - 1);
                acc[c].merge(bucket);
                count[c] += 1;
            }
            for (c, col) in cols.iter_mut().enumerate() {
                let a = &acc[c];
                let span = (count[c] as f64 * bw as f64).max(1.0);
                col.compute = (a.compute_ns as f64 / span).min(1.0);
                col.stall = (a.stall_ns as f64 / span).min(1.0);
                for (d, ns) in col.dma.iter_mut().zip(a.dma_ns) {
                    *d = (ns as f64 / span).min(1.0);
                }
                col.evicts = a.marks[Mark::Evict as usize];
                col.reloads = a.marks[Mark::Reload as usize];
                col.streams = a.marks[Mark::Stream as usize];
                col.op = (a.top_op_ns > 0).then_some(a.top_op as usize);
            }
            return cols;
        }
        // Deep zoom: walk only the spans that touch the window.
        let col_of =
            |t: u64| -> usize { (((t.saturating_sub(t0)) as f64 / dt) as usize).min(width - 1) };
        // `spans` in start order, each made by `span`.
        fn spans_in<'a, T>(
            spans: &'a [T],
            span: impl Fn(&T) -> Span + 'a,
            from_ns: u64,
        ) -> impl Iterator<Item = Span> + 'a {
            let from = spans.partition_point(|s| span(s).start < from_ns);
            spans[from..].iter().map(span)
        }
        let visit = |spans: &mut dyn Iterator<Item = Span>,
                     f: &mut dyn FnMut(&Span, usize, f64)| {
            for s in spans {
                if s.start >= t1 {
                    break;
                }
                if s.end <= t0 {
                    continue;
                }
                let a = s.start.max(t0);
                let b = s.end.min(t1);
                let (ca, cb) = (col_of(a), col_of(b.saturating_sub(1)));
                for c in ca..=cb {
                    let cs = t0 as f64 + c as f64 * dt;
                    let ov = (b as f64).min(cs + dt) - (a as f64).max(cs);
                    if ov > 0.0 {
                        f(&s, c, ov);
                    }
                }
            }
        };
        let mut best = vec![0f64; width];
        let op_span = self.trace.as_deref().map(OpSpans::of);
        let mut ops = op_span
            .iter()
            .flat_map(|o| spans_in(&self.ops, |&k| o.at(k), t0.saturating_sub(self.ops_max_len)));
        visit(&mut ops, &mut |s, c, ov| {
            let dur = (s.end - s.start).max(1);
            let st = s.stall.min(dur) as f64 / dur as f64;
            cols[c].stall += ov * st / dt;
            cols[c].compute += ov * (1.0 - st) / dt;
            if ov > best[c] {
                best[c] = ov;
                cols[c].op = Some(s.id as usize);
            }
        });
        let dma_from = t0.saturating_sub(self.dma_max_len);
        if let Some(tr) = self.trace.as_deref() {
            let ev = &tr.events;
            let span = |k: usize| {
                let (start, end) = ev.dma(self.dma[k] as usize).unwrap_or_default();
                let lane = self.dma_lane[k];
                Span {
                    start,
                    end,
                    stall: 0,
                    id: k as u32,
                    lane,
                }
            };
            // The spans are read in order from the first that may touch t0.
            let first = partition(self.dma.len(), |k| span(k).start < dma_from);
            let mut dma = (first..self.dma.len()).map(span);
            visit(&mut dma, &mut |s, c, ov| {
                cols[c].dma[s.lane.index()] += ov / dt;
            });
        }
        let mut derived = spans_in(&self.derived, |s| *s, dma_from);
        visit(&mut derived, &mut |s, c, ov| {
            cols[c].dma[s.lane.index()] += ov / dt;
        });
        let mut mark = |t: u64, m: Mark| {
            let c = col_of(t);
            match m {
                Mark::Evict => cols[c].evicts += 1,
                Mark::Reload => cols[c].reloads += 1,
                Mark::Stream => cols[c].streams += 1,
            }
        };
        for k in self.spill_position(t0)..self.spills.len() {
            let (t, _) = self.spill(k);
            if t >= t1 {
                break;
            }
            mark(t, self.marks[k]);
        }
        let from = self.derived_points.partition_point(|p| p.0 < t0);
        for &(t, m) in self.derived_points[from..].iter().take_while(|p| p.0 < t1) {
            mark(t, m);
        }
        for c in &mut cols {
            c.compute = c.compute.min(1.0);
            c.stall = c.stall.min(1.0);
            for d in &mut c.dma {
                *d = d.min(1.0);
            }
        }
        cols
    }

    /// Spill event `k` (in time order): its time and event index.
    fn spill(&self, k: usize) -> (u64, usize) {
        let i = self.spills[k] as usize;
        let t = self.trace.as_deref().map_or(0, |tr| tr.events.t_ns(i));
        (t, i)
    }

    /// How many spill events there are.
    /// The op running at `t` (the first by index where several are:
    /// `start <= t < max(end, start + 1)`), or `None`; `None` too for an
    /// empty index ([`Dataset::op_at`] falls back to the columns). Only the
    /// ops starting within the longest op's length before `t` are looked
    /// at: the cursor line asked every op each frame (37 ms a frame at 10M
    /// events).
    ///
    /// [`Dataset::op_at`]: crate::session::dataset::Dataset::op_at
    pub fn op_at(&self, t: u64) -> Option<usize> {
        let tr = self.trace.as_deref()?;
        let (start, end) = (tr.ops.start_col(), tr.ops.end_col());
        let hi = self.ops.partition_point(|&k| start[k as usize] <= t);
        let from = t.saturating_sub(self.ops_max_len.max(1));
        self.ops[..hi]
            .iter()
            .rev()
            .map(|&k| k as usize)
            .take_while(|&k| start[k] >= from)
            .filter(|&k| runs_at(start[k], end[k], t))
            .min()
    }

    /// Whether the index was built from a trace (not [`Self::build_empty`]).
    pub fn is_built(&self) -> bool {
        self.trace.is_some()
    }

    pub fn spill_count(&self) -> usize {
        self.spills.len()
    }

    /// Spill event `k` in time order (time, event index).
    pub fn spill_at(&self, k: usize) -> Option<(u64, usize)> {
        (k < self.spills.len()).then(|| self.spill(k))
    }

    /// Spill events `from..to` in time order (time, event index).
    pub fn spills_in(&self, from: usize, to: usize) -> impl Iterator<Item = (u64, usize)> + '_ {
        (from.min(self.spills.len())..to.min(self.spills.len())).map(|k| self.spill(k))
    }

    /// The position among the spill events of the first at or after `t`.
    pub fn spill_position(&self, t: u64) -> usize {
        partition(self.spills.len(), |k| self.spill(k).0 < t)
    }

    /// The first spill event strictly after `t`: (time, event index).
    pub fn next_spill(&self, t: u64) -> Option<(u64, usize)> {
        self.spill_at(partition(self.spills.len(), |k| self.spill(k).0 <= t))
    }

    /// The last spill event strictly before `t`.
    pub fn prev_spill(&self, t: u64) -> Option<(u64, usize)> {
        self.spill_position(t)
            .checked_sub(1)
            .and_then(|k| self.spill_at(k))
    }

    /// Heap bytes held (the trace is shared).
    pub fn heap_bytes(&self) -> usize {
        let buckets: usize = self.levels.iter().map(|l| l.capacity()).sum();
        buckets * std::mem::size_of::<Bucket>()
            + self.ops.capacity() * 4
            + self.dma.capacity() * 5
            + self.derived.capacity() * std::mem::size_of::<Span>()
            + self.spills.capacity() * 5
            + self.derived_points.capacity() * 16
    }

    /// Mean of a counter's samples per column (step-wise: a sample holds
    /// until the next), for sparklines.
    pub fn counter_columns(samples: &[(u64, f64)], t0: u64, t1: u64, width: usize) -> Vec<f64> {
        let width = width.max(1);
        let dt = ((t1.max(t0 + 1) - t0) as f64 / width as f64).max(1e-9);
        (0..width)
            .map(|c| {
                let cs = t0 as f64 + c as f64 * dt;
                let ce = cs + dt;
                // Samples are sorted by time; take the max within the column, or
                // the value holding at its start.
                let i0 = samples.partition_point(|s| (s.0 as f64) <= cs);
                let mut v = i0.checked_sub(1).map(|i| samples[i].1).unwrap_or(0.0);
                let mut j = i0;
                while j < samples.len() && (samples[j].0 as f64) < ce {
                    v = v.max(samples[j].1);
                    j += 1;
                }
                v
            })
            .collect()
    }
}

/// The first of `0..n` where `before` is false (`before` true then false,
/// as [`slice::partition_point`] over positions).
fn partition(n: usize, before: impl Fn(usize) -> bool) -> usize {
    let (mut lo, mut hi) = (0, n);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if before(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// A step-function counter (e.g. bus occupancy, live bytes) pre-aggregated
/// as a max-pyramid, so a sparkline at any zoom costs O(columns).
#[derive(Debug, Clone)]
pub struct SeriesIndex {
    base_ns: u64,
    levels: Vec<Vec<f64>>,
    samples: Vec<(u64, f64)>,
}

impl SeriesIndex {
    pub fn build(samples: &[(u64, f64)], end_ns: u64) -> SeriesIndex {
        let mut samples: Vec<(u64, f64)> = samples.to_vec();
        samples.sort_by_key(|s| s.0);
        let n_base = samples.len().clamp(256, 1 << 16).next_power_of_two();
        let end_ns = end_ns.max(samples.last().map(|s| s.0 + 1).unwrap_or(1));
        let base_ns = end_ns.div_ceil(n_base as u64).max(1);
        let mut base = vec![0.0f64; n_base];
        // Value holding at each bucket start, then the max of samples inside.
        let mut j = 0;
        let mut cur = 0.0;
        for (b, slot) in base.iter_mut().enumerate() {
            let bs = b as u64 * base_ns;
            let be = bs + base_ns;
            while j < samples.len() && samples[j].0 <= bs {
                cur = samples[j].1;
                j += 1;
            }
            let mut m = cur;
            while j < samples.len() && samples[j].0 < be {
                cur = samples[j].1;
                m = m.max(cur);
                j += 1;
            }
            *slot = m;
        }
        let mut levels = vec![base];
        while levels.last().map(|l| l.len()).unwrap_or(0) > 1 {
            let prev = levels.last().expect("non-empty");
            let next = prev
                .chunks(2)
                .map(|c| c.iter().cloned().fold(f64::MIN, f64::max))
                .collect();
            levels.push(next);
        }
        SeriesIndex {
            base_ns,
            levels,
            samples,
        }
    }

    /// Max value per column over `[t0, t1)`.
    pub fn columns(&self, t0: u64, t1: u64, width: usize) -> Vec<f64> {
        let width = width.max(1);
        let dt = ((t1.max(t0 + 1) - t0) as f64 / width as f64).max(1e-9);
        if dt < self.base_ns as f64 {
            return TimelineIndex::counter_columns(&self.samples, t0, t1, width);
        }
        let mut lvl = 0;
        while lvl + 1 < self.levels.len() && (self.base_ns << (lvl + 1)) as f64 <= dt {
            lvl += 1;
        }
        let bw = (self.base_ns << lvl) as f64;
        let l = &self.levels[lvl];
        (0..width)
            .map(|c| {
                let cs = t0 as f64 + c as f64 * dt;
                let b0 = (cs / bw) as usize;
                let b1 = (((cs + dt) / bw).ceil() as usize).min(l.len());
                l.iter().take(b1).skip(b0).cloned().fold(0.0, f64::max)
            })
            .collect()
    }
}

#[cfg(test)]
mod op_at_tests {
    use super::*;
    use crate::trace::ledger::Ledger;

    /// The index finds the op under a time as a walk over every op does,
    /// with ops that overlap (one long op over several, as on a second
    /// unit) and ops of no length among them.
    #[test]
    fn the_op_at_a_time_is_the_first_op_running_then() {
        let p = crate::trace::sample_path("encdec-1mib.lru.json");
        let mut tr = Trace::load(&p).unwrap();
        let n = tr.ops.len();
        assert!(n > 20);
        let (s3, e9) = (tr.ops.at(3).start_ns, tr.ops.at(9).end_ns);
        tr.ops.update(12, |o| {
            o.start_ns = s3;
            o.end_ns = e9;
        });
        let s15 = tr.ops.at(15).start_ns;
        tr.ops
            .update(16, |o| o.end_ns = s15.saturating_sub(1).max(o.start_ns));
        tr.ops.update(17, |o| o.end_ns = o.start_ns);
        let tr = Arc::new(tr);
        let index = TimelineIndex::build(&tr, &Ledger::of(&tr));
        let walk = |t: u64| {
            tr.ops
                .iter()
                .position(|o| o.start_ns <= t && t < o.end_ns.max(o.start_ns + 1))
        };
        let mut times: Vec<u64> = tr
            .ops
            .iter()
            .flat_map(|o| [o.start_ns, o.end_ns])
            .flat_map(|t| [t.saturating_sub(1), t, t + 1])
            .collect();
        times.push(index.end_ns + 10);
        let mut found = 0;
        for t in times {
            assert_eq!(index.op_at(t), walk(t), "at {t} ns");
            found += usize::from(walk(t).is_some());
        }
        assert!(found > n, "most times fall in an op: {found}");
        assert_eq!(index.op_at(s3 + 1), walk(s3 + 1));
        assert!(TimelineIndex::build_empty(10).op_at(0).is_none());
    }
}
