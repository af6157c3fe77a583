//! Placement intervals on the pool (offset x time), replayed from the events,
//! so fragmentation and the holes behind a lifetime spill can be drawn.

use crate::trace::{EventKind, Trace};
use serde::Serialize;

/// A tensor occupying `[offset, offset+bytes)` of its pool during
/// `[t0, t1)`. 48 bytes (one per placement, half a million in a large
/// trace): the pool is the id of its name among the trace's event names.
#[derive(Debug, Clone, PartialEq, Serialize)]
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

const _: () = assert!(std::mem::size_of::<Placement>() == 48);

/// Every placement with a known offset; open ones close at the trace's end.
pub fn placements(tr: &Trace) -> Vec<Placement> {
    let end = tr
        .summary
        .latency_ns
        .max(tr.events.last().map(|e| e.t_ns).unwrap_or(0));
    let mut open: std::collections::HashMap<usize, Placement> = Default::default();
    let mut out = Vec::new();
    for (i, e) in tr.events.iter().enumerate() {
        match e.kind {
            EventKind::Alloc | EventKind::Reload | EventKind::Recompute => {
                if let Some(mut p) = open.remove(&e.tensor) {
                    p.t1 = e.t_ns.max(p.t0);
                    out.push(p);
                }
                if let Some(off) = e.offset {
                    open.insert(
                        e.tensor,
                        Placement {
                            tensor: e.tensor,
                            pool_id: tr.events.pool_id(i),
                            offset: off,
                            bytes: e.bytes,
                            t0: e.t_ns,
                            t1: end,
                        },
                    );
                }
            }
            EventKind::Free | EventKind::Evict => {
                if let Some(mut p) = open.remove(&e.tensor) {
                    p.t1 = e.t_ns.max(p.t0);
                    out.push(p);
                }
            }
            EventKind::StreamIn | EventKind::StreamOut => {}
        }
    }
    out.extend(open.into_values());
    // In place (a stable sort borrows half the list): closed placements
    // were pushed as they closed, so `t1` orders ties as pushing did.
    out.sort_unstable_by_key(|p| (p.t0, p.offset, p.t1, p.pool_id, p.tensor, p.bytes));
    out.shrink_to_fit(); // kept for the whole session: no growth slack
    out
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

    pub fn build(placements: &[Placement], end_ns: u64, capacity: u64) -> OccupancyIndex {
        let buckets = placements.len().clamp(256, 8192).next_power_of_two();
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
pub fn shades(placements: &[Placement], tensors: usize) -> Vec<u8> {
    let mut order: Vec<usize> = (0..placements.len()).collect();
    order.sort_by_key(|&i| (placements[i].offset, placements[i].t0));
    let mut shade: Vec<Option<u8>> = vec![None; tensors];
    let mut ending: std::collections::HashMap<u64, Vec<usize>> = Default::default();
    for i in order {
        let p = &placements[i];
        if p.tensor >= tensors {
            continue;
        }
        if shade[p.tensor].is_none() {
            let mut used = [false; SHADES as usize];
            if let Some(below) = ending.get(&p.offset) {
                for &j in below.iter().rev().take(64) {
                    let q = &placements[j];
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
