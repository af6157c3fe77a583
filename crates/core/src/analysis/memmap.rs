//! Placement intervals on the pool (offset x time), replayed from the events,
//! so fragmentation and the holes behind a lifetime spill can be drawn.

use crate::trace::{EventKind, Trace};
use serde::Serialize;
use std::sync::Arc;

/// A tensor occupying `[offset, offset+bytes)` of its pool during
/// `[t0, t1)`: a row [`Placements`] assembles from the events that placed
/// and removed it (the pool is the id of its name among the trace's event
/// names).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Placement {
    pub tensor: usize,
    /// The pool's name id ([`Placement::pool`] spells it).
    pub pool_id: u32,
    pub offset: u64,
    pub bytes: u64,
    pub t0: u64,
    pub t1: u64,
}

impl Placement {
    /// The name of the pool it sits in (`tr` is the trace it came from).
    pub fn pool<'a>(&self, tr: &'a Trace) -> &'a str {
        tr.events.name_of(self.pool_id)
    }
}

/// No event: a placement still open at the trace's end.
const OPEN: u32 = u32::MAX;

/// Every placement with a known offset (open ones close at the trace's
/// end), as the pair of events that placed and removed it: 8 bytes each,
/// where the rows held 48 (a 1M-event trace has half a million), the rest
/// read from the events' columns when a view asks. Sorted by start, then
/// offset, end, pool, tensor and size.
#[derive(Debug, Clone, Default)]
pub struct Placements {
    spans: Vec<(u32, u32)>,
    end_ns: u64,
    /// The longest placement (for windowed queries).
    max_len: u64,
    trace: Option<Arc<Trace>>,
}

impl Placements {
    /// The placements of `tr`'s events. Event indexes are held in 32 bits:
    /// a trace past 2^32 - 1 events (far past any memory budget) keeps the
    /// placements of its first 2^32 - 2.
    pub fn of(tr: &Arc<Trace>) -> Placements {
        let ev = &tr.events;
        let end_ns = tr
            .summary
            .latency_ns
            .max(ev.last().map(|e| e.t_ns).unwrap_or(0));
        let n = ev.len().min(OPEN as usize - 1);
        // The event that placed each tensor, while it is placed.
        let mut open = vec![OPEN; tr.tensors.len()];
        let mut spans = Vec::new();
        for i in 0..n {
            let Some(slot) = open.get_mut(ev.tensor(i)) else {
                continue;
            };
            match ev.kind(i) {
                EventKind::Alloc | EventKind::Reload | EventKind::Recompute => {
                    if *slot != OPEN {
                        spans.push((*slot, i as u32));
                    }
                    *slot = if ev.offset(i).is_some() {
                        i as u32
                    } else {
                        OPEN
                    };
                }
                EventKind::Free | EventKind::Evict => {
                    if *slot != OPEN {
                        spans.push((*slot, i as u32));
                        *slot = OPEN;
                    }
                }
                EventKind::StreamIn | EventKind::StreamOut => {}
            }
        }
        spans.extend(open.into_iter().filter(|&s| s != OPEN).map(|s| (s, OPEN)));
        let mut p = Placements {
            spans,
            end_ns,
            max_len: 0,
            trace: Some(tr.clone()),
        };
        // In place (a stable sort borrows half the list); the start time is
        // a column read, the rest only breaks its ties.
        let t = |i: u32| ev.t_ns(i as usize);
        let mut spans = std::mem::take(&mut p.spans);
        spans.sort_unstable_by(|a, b| {
            t(a.0).cmp(&t(b.0)).then_with(|| {
                let (x, y) = (p.row(*a), p.row(*b));
                let key = |q: &Placement| (q.offset, q.t1, q.pool_id, q.tensor, q.bytes);
                key(&x).cmp(&key(&y))
            })
        });
        spans.shrink_to_fit(); // kept for the whole session: no growth slack
        p.spans = spans;
        p.max_len = p
            .iter()
            .map(|q| q.t1.saturating_sub(q.t0))
            .max()
            .unwrap_or(0);
        p
    }

    /// The row of a pair of events.
    fn row(&self, (s, e): (u32, u32)) -> Placement {
        let Some(tr) = &self.trace else {
            unreachable!("placements without a trace hold none")
        };
        let ev = &tr.events;
        let (s, t0) = (s as usize, ev.t_ns(s as usize));
        let t1 = match e {
            OPEN => self.end_ns,
            e => ev.t_ns(e as usize),
        };
        Placement {
            tensor: ev.tensor(s),
            pool_id: ev.pool_id(s),
            offset: ev.offset(s).unwrap_or(0),
            bytes: ev.bytes(s),
            t0,
            t1: t1.max(t0),
        }
    }

    pub fn len(&self) -> usize {
        self.spans.len()
    }

    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// Placement `i` (in start order).
    pub fn get(&self, i: usize) -> Placement {
        self.row(self.spans[i])
    }

    pub fn iter(&self) -> impl Iterator<Item = Placement> + Clone + '_ {
        self.spans.iter().map(|&s| self.row(s))
    }

    /// The longest placement's length.
    pub fn max_len(&self) -> u64 {
        self.max_len
    }

    /// Placements overlapping `[t0, t1)`.
    pub fn overlapping(&self, t0: u64, t1: u64) -> impl Iterator<Item = Placement> + '_ {
        let from = t0.saturating_sub(self.max_len);
        let first = self.spans.partition_point(|&s| self.row(s).t0 < from);
        self.spans[first..]
            .iter()
            .map(|&s| self.row(s))
            .take_while(move |p| p.t0 < t1)
            .filter(move |p| p.t1 > t0)
    }

    /// Heap bytes held (the trace is shared).
    pub fn heap_bytes(&self) -> usize {
        self.spans.capacity() * 8
    }
}

/// Every placement with a known offset as rows (tests, reports).
pub fn placements(tr: &Trace) -> Vec<Placement> {
    Placements::of(&Arc::new(tr.clone())).iter().collect()
}

/// Occupancy of the pool on a fixed grid (time buckets x offset bands), so a
/// zoomed-out memory map costs O(grid), not O(placements), per frame.
#[derive(Debug, Clone)]
pub struct OccupancyIndex {
    pub base_ns: u64,
    pub buckets: usize,
    pub bands: usize,
    pub band_bytes: f64,
    /// `tensor + 1` occupying each (bucket, band), 0 = free; bucket-major.
    cells: Vec<u32>,
}

impl OccupancyIndex {
    pub const BANDS: usize = 64;

    pub fn build(
        placements: impl Iterator<Item = Placement> + Clone,
        end_ns: u64,
        capacity: u64,
    ) -> OccupancyIndex {
        let buckets = placements
            .clone()
            .count()
            .clamp(256, 8192)
            .next_power_of_two();
        let base_ns = end_ns.max(1).div_ceil(buckets as u64).max(1);
        let bands = Self::BANDS;
        let band_bytes = capacity.max(1) as f64 / bands as f64;
        let mut cells = vec![0u32; buckets * bands];
        for p in placements {
            let b0 = ((p.t0 / base_ns) as usize).min(buckets - 1);
            let b1 = ((p.t1.saturating_sub(1) / base_ns) as usize).clamp(b0, buckets - 1);
            let r0 = ((p.offset as f64 / band_bytes) as usize).min(bands - 1);
            let r1 = ((((p.offset + p.bytes) as f64 / band_bytes).ceil() as usize).max(r0 + 1))
                .min(bands);
            let id = (p.tensor as u32).saturating_add(1);
            for b in b0..=b1 {
                cells[b * bands + r0..b * bands + r1].fill(id);
            }
        }
        OccupancyIndex {
            base_ns,
            buckets,
            bands,
            band_bytes,
            cells,
        }
    }

    /// The tensor occupying any cell of buckets `[b0, b1)` x bands `[r0, r1)`, if any.
    pub fn any_in(&self, b0: usize, b1: usize, r0: usize, r1: usize) -> Option<usize> {
        for b in b0.min(self.buckets)..b1.min(self.buckets) {
            let row = &self.cells[b * self.bands..(b + 1) * self.bands];
            if let Some(&id) = row[r0.min(self.bands)..r1.min(self.bands)]
                .iter()
                .find(|&&x| x != 0)
            {
                return Some(id as usize - 1);
            }
        }
        None
    }
}

/// How many shades [`shades`] uses.
pub const SHADES: u8 = 4;

/// A shade per tensor (`0..SHADES`) such that blocks that touch on the map
/// (one ends where the other starts, at overlapping times) mostly differ, so
/// neighbouring tensors read as separate blocks. Greedy over placements in
/// offset order; each offset's last 64 neighbours are checked (bounded
/// work on any trace).
pub fn shades(placements: &Placements, tensors: usize) -> Vec<u8> {
    let mut order: Vec<u32> = (0..placements.len() as u32).collect();
    order.sort_unstable_by_key(|&i| {
        let p = placements.get(i as usize);
        (p.offset, p.t0, i)
    });
    let mut shade: Vec<Option<u8>> = vec![None; tensors];
    let mut ending: std::collections::HashMap<u64, Vec<u32>> = Default::default();
    for i in order {
        let p = &placements.get(i as usize);
        if p.tensor >= tensors {
            continue;
        }
        if shade[p.tensor].is_none() {
            let mut used = [false; SHADES as usize];
            if let Some(below) = ending.get(&p.offset) {
                for &j in below.iter().rev().take(64) {
                    let q = &placements.get(j as usize);
                    if q.t0 < p.t1 && p.t0 < q.t1 {
                        if let Some(s) = shade[q.tensor] {
                            used[s as usize] = true;
                        }
                    }
                }
            }
            let pick = (0..SHADES)
                .map(|k| ((p.tensor as u8 % SHADES) + k) % SHADES)
                .find(|&s| !used[s as usize])
                .unwrap_or(p.tensor as u8 % SHADES);
            shade[p.tensor] = Some(pick);
        }
        ending.entry(p.offset + p.bytes).or_default().push(i);
    }
    shade
        .into_iter()
        .enumerate()
        .map(|(t, s)| s.unwrap_or(t as u8 % SHADES))
        .collect()
}
